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
	"github.com/twmb/franz-go/pkg/sr"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/internal/pushtest"
	"weir/internal/kafkaclient"
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
// same way as the runtime's (acks=all, idempotent, weir's
// partitioner, linger 5ms).
//
//	go test ./connectors/syslog -run '^$' -bench SyslogTCP -benchtime 1x -count 5
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
			pushtest.Bench(b, benchMessages, func(br *testbroker.Broker) (send, done func()) {
				cl, err := sr.NewClient(sr.URLs(br.Registry(b)))
				if err != nil {
					b.Fatal(err)
				}
				srv, err := New(Options{Topic: pushtest.BenchTopic, TCPAddr: "127.0.0.1:0", Encoder: &AvroEncoder{Registry: cl}})
				if err != nil {
					b.Fatal(err)
				}
				done = pushtest.Run(b, &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{br.Addr}}}, "bench", srv.Source(), pushtest.BenchTopic,
					func() bool { return srv.TCPAddr() != nil })
				adm := kadm.NewClient(br.Client())
				send = func() {
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
						ends, err := adm.ListEndOffsets(context.Background(), pushtest.BenchTopic)
						var n int64
						if err == nil {
							ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
						}
						if n >= benchMessages {
							break
						}
						time.Sleep(2 * time.Millisecond)
					}
				}
				return send, done
			})
		}
	})
	b.Run("kgo-direct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			pushtest.BenchDirect(b, benchMessages, benchSenders, func(s, n int) []byte { return []byte(benchMessage(s, n)) })
		}
	})
}
