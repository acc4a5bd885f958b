package connectors

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/txntest"
)

// BenchmarkSourceExactlyOnce: a source task producing b.N records of
// 100-byte values (4 source partitions, a 3-partition topic, the default
// 1 s commit interval) at-least-once (the baseline) and exactly-once
// (each commit interval's records and positions in one transaction),
// from the task's start until the last position is committed. Against
// Apache Kafka 4.4; EOS_BENCH_TARGET=weir runs it against weir's test
// broker (which needs transactions for exactly-once). Median of 5:
//
//	go test -run '^$' -bench BenchmarkSourceExactlyOnce -benchtime 400000x -count 5 ./connectors/
func BenchmarkSourceExactlyOnce(b *testing.B) {
	var addr string
	if os.Getenv("EOS_BENCH_TARGET") == "weir" {
		addr = testbroker.Start(b).Addr
	} else {
		addr = txntest.Kafka(b)
	}
	for _, mode := range []string{"at-least-once", "exactly-once"} {
		b.Run("mode="+mode, func(b *testing.B) {
			name := fmt.Sprintf("bench-%s-%d", mode, time.Now().UnixNano())
			topic := name
			createTopic(b, addr, topic, 3)
			rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{addr}}, Logger: zap.NewNop()}
			src := &counterSource{parts: 4, limit: max(b.N/4, 1), pad: 100}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			b.ResetTimer()
			start := time.Now()
			go func() {
				errc <- rt.RunSource(ctx, name, src, SourceOptions{Topic: topic, ExactlyOnce: mode == "exactly-once"})
			}()
			for !src.done() {
				select {
				case err := <-errc:
					b.Fatalf("source stopped: %v", err)
				case <-time.After(5 * time.Millisecond):
				}
			}
			el := time.Since(start)
			b.StopTimer()
			cancel()
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(4*src.limit)/el.Seconds(), "records/s")
		})
	}
}
