package bench

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// The client-side ceilings: kfake answers produce without storing
// (BlackholeProduce) and serves fetches from one canned batch
// (SyntheticFetch), so these measure what the load generator itself can
// drive on this machine, the upper bound for any broker figure.
//
//	go test ./ingest/bench -run '^$' -bench Ceiling -benchtime 1x

func BenchmarkCeilingProduce100B(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.BlackholeProduce(), kfake.SeedTopics(8, "t"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for b.Loop() {
		r, err := Produce(context.Background(), ProduceConfig{
			Brokers: c.ListenAddrs(), Topic: "t", Records: 2_000_000, RecordSize: 100, Acks: 1, Report: -1,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.RecordsPerSec(), "records/s")
		b.ReportMetric(r.MBPerSec(), "MB/s")
		b.ReportMetric(float64(r.Latency.Quantile(0.99))/1e6, "p99-ms")
	}
}

func BenchmarkCeilingConsume100B(b *testing.B) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
		kfake.SyntheticFetch(kfake.SyntheticBatch{RecordBytes: 100}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for b.Loop() {
		r, err := Consume(context.Background(), ConsumeConfig{
			Brokers: c.ListenAddrs(), Topic: "t", Records: 5_000_000, Idle: 10 * time.Second, Report: -1,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.RecordsPerSec(), "records/s")
		b.ReportMetric(r.MBPerSec(), "MB/s")
	}
}
