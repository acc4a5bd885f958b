package http

import (
	"bytes"
	"fmt"
	nethttp "net/http"
	"strings"
	"sync"
	"testing"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/internal/pushtest"
	"weir/internal/kafkaclient"
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
// the same way as the runtime's (acks=all, idempotent, weir's partitioner,
// linger 5ms) straight to the same
// kind of broker: the ceiling the endpoint's HTTP and parsing work sits
// under.
//
//	go test ./connectors/http -run '^$' -bench HTTPIngest -benchtime 1x -count 5
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
			pushtest.Bench(b, benchEvents, func(br *testbroker.Broker) (send, done func()) {
				srv, err := New(Options{Addr: "127.0.0.1:0", Topic: pushtest.BenchTopic})
				if err != nil {
					b.Fatal(err)
				}
				done = pushtest.Run(b, &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{br.Addr}}}, "bench", srv.Source(), pushtest.BenchTopic,
					func() bool { return srv.Addr() != nil })
				url := "http://" + srv.Addr().String() + "/ingest"
				hc := &nethttp.Client{Transport: &nethttp.Transport{MaxIdleConnsPerHost: benchSenders}}
				send = func() {
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
				}
				return send, done
			})
		}
	})
	vals := make([][]byte, 0, benchEvents)
	for s := 0; s < benchSenders; s++ {
		for n := 0; n < benchEvents/benchSenders; n++ {
			vals = append(vals, benchEvent(s, n))
		}
	}
	pv := len(vals) / benchSenders
	b.Run("kgo-direct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			pushtest.BenchDirect(b, benchEvents, benchSenders, func(s, n int) []byte { return vals[s*pv+n] })
		}
	})
}
