package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTLS produces and consumes 1 KiB records (acks=1, no
// compression, 8 partitions) over the PLAINTEXT and over the SSL listener
// (TLS 1.3, ECDSA P-256 certificate, Go's default suites: AES-GCM with
// AES-NI). Every run gets a fresh broker and data directory, so the
// plaintext baseline and the TLS figure start from the same state;
// consume runs read records produced (untimed) before the timer starts.
//
//	go test ./broker/kafka -run '^$' -bench 'BenchmarkTLS' -benchtime 100000x -count 5
func BenchmarkTLS(b *testing.B) {
	for _, op := range []string{"produce", "consume"} {
		for _, secure := range []bool{false, true} {
			name := op + "/plaintext"
			if secure {
				name = op + "/tls"
			}
			b.Run(name, func(b *testing.B) { benchTLSRun(b, op == "produce", secure) })
		}
	}
}

func benchTLSRun(b *testing.B, produce, secure bool) {
	s := newTLSSetupTB(b)
	br := startBroker(b, withTLSTB(b, s.settings()))
	createTopic(b, br, "tlsbench", 8, nil)
	opts := []kgo.Opt{kgo.SeedBrokers(br.listenerAddr("PLAINTEXT"))}
	if secure {
		opts = []kgo.Opt{kgo.SeedBrokers(br.listenerAddr("SSL")), kgo.DialTLSConfig(&tls.Config{RootCAs: s.ca.Pool(), ServerName: "127.0.0.1"})}
	}
	val := make([]byte, 1024)
	ctx := context.Background()
	produceN := func(opts []kgo.Opt) {
		cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("tlsbench"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(1<<16))...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
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
	}
	b.SetBytes(int64(len(val)))
	if produce {
		b.ResetTimer()
		start := time.Now()
		produceN(opts)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		return
	}
	produceN([]kgo.Opt{kgo.SeedBrokers(br.listenerAddr("PLAINTEXT"))})
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("tlsbench"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	b.ResetTimer()
	start := time.Now()
	for got := 0; got < b.N; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			b.Fatal(err)
		}
		got += fs.NumRecords()
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
}
