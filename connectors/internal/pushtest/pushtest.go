// Package pushtest is the test setup of the push-source kinds
// (connectors/http, connectors/syslog): Run runs a kind's Source through
// a connector runtime until the test ends, and Bench is the frame of
// their ingest benchmarks (a fresh in-process broker, the timed part
// reported in events/s, and the franz-go baseline built as the runtime
// builds its producer).
package pushtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	client "weir/internal/kafkaclient"
)

// Run runs src through rt as the connector called name, producing to
// topic, and returns once open reports that the source listens. The
// returned stop (also run when the test ends, once) stops the source
// and fails the test if it stopped with an error; a source that stops
// before it is open fails the test at once.
func Run(tb testing.TB, rt *connectors.Runtime, name string, src connectors.Source, topic string, open func() bool) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- rt.RunSource(ctx, name, src, connectors.SourceOptions{Topic: topic}) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-errc; err != nil {
				tb.Errorf("source stopped: %v", err)
			}
		})
	}
	tb.Cleanup(stop)
	testbroker.CheckFor(tb, 30*time.Second, func() error {
		select {
		case err := <-errc:
			errc <- err
			tb.Fatalf("source stopped early: %v", err)
		default:
		}
		if !open() {
			return errors.New("not open yet")
		}
		return nil
	})
	return stop
}

// BenchTopic is the topic of the benchmarks (4 partitions).
const BenchTopic = "bench"

// Bench runs one iteration of a push-source benchmark: it starts a
// fresh in-process broker with BenchTopic and calls setup (untimed:
// start the source with Run, build the senders), then send, which is
// timed and reported as events per second, then done (untimed: stop
// what setup started) before it stops the broker.
func Bench(b *testing.B, events int, setup func(br *testbroker.Broker) (send, done func())) {
	b.StopTimer()
	br := testbroker.Start(b)
	br.CreateTopic(BenchTopic, 4, nil)
	send, done := setup(br)
	b.StartTimer()
	start := time.Now()
	send()
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(events)/el.Seconds(), "events/s")
	done()
	br.Stop()
}

// BenchDirect is the baseline of a push-source benchmark: senders
// goroutines produce events values (value(s, n) for sender s's n-th)
// with a franz-go client built as the runtime builds its producer
// (acks=all, idempotent, weir's partitioner, linger 5ms) straight to
// the broker, timed until the client flushed.
func BenchDirect(b *testing.B, events, senders int, value func(s, n int) []byte) {
	Bench(b, events, func(br *testbroker.Broker) (send, done func()) {
		cl, err := client.New(client.Options{Brokers: []string{br.Addr}}, append(client.Producer(client.Acks(-1), kgo.NoCompression()),
			kgo.ProducerLinger(5*time.Millisecond), kgo.DefaultProduceTopic(BenchTopic))...)
		if err != nil {
			b.Fatal(err)
		}
		send = func() {
			var wg sync.WaitGroup
			for s := 0; s < senders; s++ {
				wg.Add(1)
				go func(s int) {
					defer wg.Done()
					for n := 0; n < events/senders; n++ {
						cl.Produce(context.Background(), &kgo.Record{Value: value(s, n)}, func(_ *kgo.Record, err error) {
							if err != nil {
								b.Error(err)
							}
						})
					}
				}(s)
			}
			wg.Wait()
			if err := cl.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		return send, cl.Close
	})
}
