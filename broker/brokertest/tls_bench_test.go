package brokertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkReplicationTLS is the replication cost of TLS: acks=all
// produce of 1 KiB records (no compression, 4 partitions, replication
// factor 2 on a 2-broker in-process cluster) whose every record is
// acknowledged only once the follower fetched it. The client talks
// PLAINTEXT to the leader in both; only the replication (the followers'
// fetches, and the Raft quorum) is plaintext or TLS (TLS(): TLS 1.3,
// ECDSA P-256, mutual authentication). Each run starts its own cluster.
//
//	for i in 1 2 3 4 5; do go test ./broker/brokertest -run '^$' -bench 'BenchmarkReplicationTLS' -benchtime 30000x -count 1; done
func BenchmarkReplicationTLS(b *testing.B) {
	for _, secure := range []bool{false, true} {
		name := "plaintext"
		opts := []Option{Brokers(2)}
		if secure {
			name, opts = "tls", append(opts, TLS())
		}
		b.Run(name, func(b *testing.B) {
			c := NewCluster(b, opts...)
			c.CreateTopic("replbench", 4, 2, nil)
			c.WaitFor(20*time.Second, func() error {
				for p := int32(0); p < 4; p++ {
					if isr := c.Partition("replbench", p).ISR; len(isr) != 2 {
						return fmt.Errorf("replbench-%d: ISR %v", p, isr)
					}
				}
				return nil
			})
			cl := c.Client(kgo.DefaultProduceTopic("replbench"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
				kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(1<<16))
			val := make([]byte, 1024)
			for i := range val {
				val[i] = byte(i * 7)
			}
			ctx := context.Background()
			b.SetBytes(int64(len(val)))
			b.ResetTimer()
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
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
