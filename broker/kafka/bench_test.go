package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduce100B produces b.N 100-byte records with acks=1, no
// compression, over 8 partitions, through a real broker on loopback.
//
//	go test ./broker/kafka -run XXX -bench Produce100B -benchtime 2000000x
func BenchmarkProduce100B(b *testing.B) {
	br := startBroker(b)
	createTopic(b, br, "bench", 8, nil)
	produce100B(b, br, "bench")
}

// BenchmarkConsume100B consumes b.N 100-byte records (produced before the
// timer starts) from 8 partitions.
func BenchmarkConsume100B(b *testing.B) {
	br := startBroker(b)
	createTopic(b, br, "bench", 8, nil)
	cl := br.client(kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1<<20))
	val := make([]byte, 100)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: val}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	cons := br.client(kgo.ConsumeTopics("bench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	b.ResetTimer()
	start := time.Now()
	got := 0
	for got < b.N {
		fs := cons.PollFetches(ctx)
		got += fs.NumRecords()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}

// produce100B produces b.N 100-byte records to topic as fast as the
// client buffers them (acks=1, no compression, linger 1 ms, idempotence
// off), fails on any produce error, and reports records/s.
func produce100B(b *testing.B, br *testBroker, topic string, opts ...kgo.Opt) {
	cl := br.client(append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(1 << 20)}, opts...)...)
	val := make([]byte, 100)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				panic(fmt.Sprintf("produce: %v", err))
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}
