package httpin

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/ingest/client"
)

const (
	benchEvents  = 200_000
	benchSenders = 16
	benchBatch   = 500
)

// benchEvent is a ~200-byte JSON log event.
func benchEvent(s, n int) []byte {
	e := fmt.Sprintf(`{"ts":"2024-03-10T12:00:00.000Z","level":"info","host":"web-%02d","seq":%d,"msg":"GET /api/v1/items 200 12ms user=42","pad":"`, s, n)
	return append([]byte(e+strings.Repeat("x", 199-len(e)-2)), '"', '}')
}

// BenchmarkHTTPIngest: 16 concurrent senders POST 200,000 ~200-byte
// events as NDJSON bodies of 500 events to the HTTP endpoint, which
// answers each after the in-process weir broker acknowledged it
// (acks=all, 4 partitions); reported in events/s. The baseline
// sub-benchmark produces the same events with a franz-go client built
// the same way (ingest/client options, linger 5ms) straight to the same
// kind of broker: the ceiling the endpoint's HTTP and parsing work sits
// under.
//
//	go test ./ingest/httpin -run '^$' -bench HTTPIngest -benchtime 1x -count 5
func BenchmarkHTTPIngest(b *testing.B) {
	bodies := make([][]byte, 0, benchEvents/benchBatch)
	for s := 0; s < benchSenders; s++ {
		for from := 0; from < benchEvents/benchSenders; from += benchBatch {
			var buf bytes.Buffer
			for n := from; n < from+benchBatch; n++ {
				buf.Write(benchEvent(s, n))
				buf.WriteByte('\n')
			}
			bodies = append(bodies, buf.Bytes())
		}
	}
	per := len(bodies) / benchSenders
	b.Run("http", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tb := testbroker.Start(b)
			tb.CreateTopic("bench", 4, nil)
			srv, err := New(Options{Addr: "127.0.0.1:0", Topic: "bench", Brokers: []string{tb.Addr}})
			if err != nil {
				b.Fatal(err)
			}
			if err := srv.Start(); err != nil {
				b.Fatal(err)
			}
			url := "http://" + srv.Addr().String() + "/ingest"
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchSenders}}
			b.StartTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for s := 0; s < benchSenders; s++ {
				wg.Add(1)
				go func(s int) {
					defer wg.Done()
					for _, body := range bodies[s*per : (s+1)*per] {
						resp, err := hc.Post(url, "application/x-ndjson", bytes.NewReader(body))
						if err != nil || resp.StatusCode != 200 {
							b.Errorf("POST: %v %v", resp, err)
							return
						}
						resp.Body.Close()
					}
				}(s)
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(benchEvents)/el.Seconds(), "events/s")
			srv.Close()
			tb.Stop()
		}
	})
	b.Run("kgo-direct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tb := testbroker.Start(b)
			tb.CreateTopic("bench", 4, nil)
			cl, err := kgo.NewClient(append(client.ProducerOpts([]string{tb.Addr}, client.Acks(-1), kgo.NoCompression()),
				kgo.ProducerLinger(5*time.Millisecond), kgo.DefaultProduceTopic("bench"))...)
			if err != nil {
				b.Fatal(err)
			}
			vals := make([][]byte, 0, benchEvents)
			for s := 0; s < benchSenders; s++ {
				for n := 0; n < benchEvents/benchSenders; n++ {
					vals = append(vals, benchEvent(s, n))
				}
			}
			b.StartTimer()
			start := time.Now()
			var wg sync.WaitGroup
			pv := len(vals) / benchSenders
			for s := 0; s < benchSenders; s++ {
				wg.Add(1)
				go func(vs [][]byte) {
					defer wg.Done()
					for _, v := range vs {
						cl.Produce(context.Background(), &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
							if err != nil {
								b.Error(err)
							}
						})
					}
				}(vals[s*pv : (s+1)*pv])
			}
			wg.Wait()
			if err := cl.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(benchEvents)/el.Seconds(), "events/s")
			cl.Close()
			tb.Stop()
		}
	})
}
