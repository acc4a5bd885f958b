package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// The client-side references: kfake answers produce without storing
// (BlackholeProduce) and serves fetches from one canned batch
// (SyntheticFetch), so these measure the load generator against a broker
// that does no storage work. kfake runs in the benchmark's own process
// and shares its two Ps with the client, so this is a reference point
// (scripts/bench-kafka prints it beside weir's figures), not a strict
// upper bound: a separate broker process can do better.
//
//	go test ./ingest/bench -run '^$' -bench Ceiling -benchtime 1x

func BenchmarkCeilingProduce(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BlackholeProduce(), kfake.SeedTopics(8, "t"))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			records := int64(200_000_000 / size) // 200 MB
			for b.Loop() {
				r, err := Produce(context.Background(), ProduceConfig{
					Brokers: c.ListenAddrs(), Topic: "t", Records: records, Warmup: records / 10,
					RecordSize: size, Acks: 1, Report: -1,
				})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.RecordsPerSec(), "records/s")
				b.ReportMetric(r.MBPerSec(), "MB/s")
				b.ReportMetric(float64(r.Latency.Quantile(0.99))/1e6, "p99-ms")
			}
		})
	}
}

func BenchmarkCeilingConsume(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
				kfake.SyntheticFetch(kfake.SyntheticBatch{RecordBytes: size}))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for b.Loop() {
				r, err := Consume(context.Background(), ConsumeConfig{
					Brokers: c.ListenAddrs(), Topic: "t", Records: int64(500_000_000 / size), Idle: 10 * time.Second, Report: -1,
				})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(r.RecordsPerSec(), "records/s")
				b.ReportMetric(r.MBPerSec(), "MB/s")
			}
		})
	}
}
