package syslog

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/broker/brokertest/testbroker"
	"weir/ingest/client"
)

const (
	benchMessages = 200_000
	benchSenders  = 16
)

// benchMessage is a ~200-byte RFC 5424 message.
func benchMessage(s, n int) string {
	m := fmt.Sprintf(`<134>1 2024-03-10T12:00:00.123456Z web-%02d nginx 4242 ACCESS [req@1 id="%d"] GET /api/v1/items 200 12ms user=42 `, s, n)
	return m + strings.Repeat("x", 200-len(m))
}

// BenchmarkSyslogTCP: 16 TCP connections send 200,000 ~200-byte RFC 5424
// messages (octet counting); timed from the first write until the
// in-process weir broker (acks=all, 4 partitions) holds every message as
// an Avro record; reported in events/s. The baseline sub-benchmark
// produces the same messages, unparsed, with a franz-go client built the
// same way (ingest/client options, linger 5ms).
//
//	go test ./ingest/syslog -run '^$' -bench SyslogTCP -benchtime 1x -count 5
func BenchmarkSyslogTCP(b *testing.B) {
	payloads := make([][]byte, benchSenders)
	for s := range payloads {
		w := []byte{}
		for n := 0; n < benchMessages/benchSenders; n++ {
			m := benchMessage(s, n)
			w = fmt.Appendf(w, "%d %s", len(m), m)
		}
		payloads[s] = w
	}
	b.Run("tcp-avro", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tb := testbroker.Start(b)
			reg := tb.Registry(b)
			tb.CreateTopic("bench", 4, nil)
			cl, err := sr.NewClient(sr.URLs(reg))
			if err != nil {
				b.Fatal(err)
			}
			srv, err := New(Options{Topic: "bench", TCPAddr: "127.0.0.1:0", Encoder: &AvroEncoder{Registry: cl}, Brokers: []string{tb.Addr}})
			if err != nil {
				b.Fatal(err)
			}
			if err := srv.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			adm := kadm.NewClient(tb.Client())
			b.StartTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for s := 0; s < benchSenders; s++ {
				wg.Add(1)
				go func(p []byte) {
					defer wg.Done()
					c, err := net.Dial("tcp", srv.TCPAddr().String())
					if err != nil {
						b.Error(err)
						return
					}
					defer c.Close()
					w := bufio.NewWriterSize(c, 64<<10)
					w.Write(p)
					if err := w.Flush(); err != nil {
						b.Error(err)
					}
				}(payloads[s])
			}
			wg.Wait()
			for {
				ends, err := adm.ListEndOffsets(context.Background(), "bench")
				var n int64
				if err == nil {
					ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
				}
				if n >= benchMessages {
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(benchMessages)/el.Seconds(), "events/s")
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
			b.StartTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for s := 0; s < benchSenders; s++ {
				wg.Add(1)
				go func(s int) {
					defer wg.Done()
					for n := 0; n < benchMessages/benchSenders; n++ {
						cl.Produce(context.Background(), &kgo.Record{Value: []byte(benchMessage(s, n))}, func(_ *kgo.Record, err error) {
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
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(benchMessages)/el.Seconds(), "events/s")
			cl.Close()
			tb.Stop()
		}
	})
}
