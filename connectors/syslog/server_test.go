package syslog

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/internal/gate"
	"weir/connectors/internal/pushtest"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/schemas"
)

type env struct {
	t    *testing.T
	b    *testbroker.Broker
	reg  string
	serd *schemas.Serde
	m    *connectors.Metrics
	gate *gate.Gate
}

func newEnv(t *testing.T, topic string, partitions int32) *env {
	b := testbroker.Start(t)
	reg := b.Registry(t)
	b.CreateTopic(topic, partitions, nil)
	cl, err := sr.NewClient(sr.URLs(reg))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, b: b, reg: reg, serd: schemas.NewSerde(srclient.Source(cl)), gate: gate.New()}
}

// start runs a server for o through a connector runtime whose producer
// dials through the gate.
func (e *env) start(o Options) *Server {
	e.t.Helper()
	cl, err := sr.NewClient(sr.URLs(e.reg))
	if err != nil {
		e.t.Fatal(err)
	}
	o.Encoder = &AvroEncoder{Registry: cl}
	srv, err := New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}, Extra: e.gate.Opts()},
		Metrics: connectors.NewMetricSet(nil)}
	e.m = rt.Metrics.For("syslog-test")
	run(e.t, rt, "syslog-test", srv.Source(), o.Topic)
	e.t.Cleanup(e.gate.Resume) // before the stop, so a failed test does not leave the producer held
	return srv
}

// run runs src through rt until the test ends; it returns once the
// server listens.
func run(t *testing.T, rt *connectors.Runtime, name string, src *Source, topic string) {
	t.Helper()
	pushtest.Run(t, rt, name, src, topic, func() bool { return src.Server().TCPAddr() != nil || src.Server().UDPAddr() != nil })
}

// events reads topic (waiting for want records) and decodes every value.
func (e *env) events(topic string, want int) []map[string]any {
	e.t.Helper()
	var rs []*kgo.Record
	testbroker.CheckFor(e.t, 60*time.Second, func() error {
		rs = e.b.ReadAll(topic)
		if len(rs) < want {
			return fmt.Errorf("%d of %d records in %s", len(rs), want, topic)
		}
		return nil
	})
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		_, v, err := e.serd.Decode(context.Background(), r.Value)
		if err != nil {
			e.t.Fatalf("record %d/%d: %v", r.Partition, r.Offset, err)
		}
		out[i] = v.(map[string]any)
	}
	return out
}

func unionString(v any) string {
	if m, ok := v.(map[string]any); ok {
		s, _ := m["string"].(string)
		return s
	}
	return ""
}

// message builds sender s's message number n: RFC 5424 with structured
// data, RFC 3164, or (every 50th) garbage without a PRI; about 200 bytes.
func message(s, n int) string {
	pad := strings.Repeat("p", 80)
	switch {
	case n%50 == 49:
		return fmt.Sprintf("garbage without pri s=%d n=%d %s", s, n, pad)
	case n%2 == 0:
		return fmt.Sprintf(`<%d>1 2024-03-10T12:00:00.%06dZ host%d app%d %d ID%d [t@1 s="%d" n="%d"] message s=%d n=%d %s`,
			(s*8+n)%192, n%1000000, s, s, 1000+s, n%10, s, n, s, n, pad)
	default:
		return fmt.Sprintf("<%d>Mar 10 11:00:00 host%d app%d[%d]: message s=%d n=%d %s", (s*8+n)%192, s, s, 1000+s, s, n, pad)
	}
}

// TestTCP100k: 16 concurrent TCP senders (half octet counting, half LF
// framing) send 100,000 messages; every one is in the topic exactly once
// with its parsed fields, the unparseable ones kept with a parse error.
//
// With -short, 650 messages a sender (10,400; a multiple of 50, so the
// garbage count below holds): the same checks; the full run sends 100,000.
func TestTCP100k(t *testing.T) {
	t.Parallel()
	const senders = 16
	per := 6250
	if testing.Short() {
		per = 650
	}
	e := newEnv(t, "syslog", 4)
	srv := e.start(Options{Topic: "syslog", TCPAddr: "127.0.0.1:0"})
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			c, err := net.Dial("tcp", srv.TCPAddr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			w := bufio.NewWriter(c)
			for n := 0; n < per; n++ {
				m := message(s, n)
				if s%2 == 0 {
					fmt.Fprintf(w, "%d %s", len(m), m)
				} else {
					w.WriteString(m + "\n")
				}
			}
			if err := w.Flush(); err != nil {
				errs <- err
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evs := e.events("syslog", senders*per)
	if len(evs) != senders*per {
		t.Fatalf("%d records, want %d", len(evs), senders*per)
	}
	seen := make([]bool, senders*per)
	for _, ev := range evs {
		msg := ev["message"].(string)
		i := strings.Index(msg, "s=")
		var s, n int
		if _, err := fmt.Sscanf(msg[i:], "s=%d n=%d", &s, &n); err != nil {
			t.Fatalf("message %q: %v", msg, err)
		}
		if seen[s*per+n] {
			t.Fatalf("message s=%d n=%d twice", s, n)
		}
		seen[s*per+n] = true
		orig := message(s, n)
		switch {
		case n%50 == 49:
			if ev["format"] != "unparsed" || unionString(ev["parse_error"]) == "" || msg != orig {
				t.Fatalf("garbage kept as %v", ev)
			}
		case n%2 == 0:
			sd := ev["structured_data"].(map[string]any)["map"].(map[string]any)["t@1"].(map[string]any)
			if ev["format"] != "rfc5424" || unionString(ev["hostname"]) != "host"+strconv.Itoa(s) ||
				unionString(ev["proc_id"]) != strconv.Itoa(1000+s) || sd["n"] != strconv.Itoa(n) ||
				!strings.HasSuffix(orig, "] "+msg) {
				t.Fatalf("RFC 5424 message %q decoded as %v", orig, ev)
			}
		default:
			if ev["format"] != "rfc3164" || unionString(ev["app_name"]) != "app"+strconv.Itoa(s) || !strings.HasSuffix(orig, ": "+msg) {
				t.Fatalf("RFC 3164 message %q decoded as %v", orig, ev)
			}
		}
		if ev["transport"] != "tcp" || ev["truncated"] != false {
			t.Fatalf("transport/truncated: %v", ev)
		}
		pri := (s*8 + n) % 192
		if n%50 != 49 && ev["facility"].(map[string]any)["int"] != int32(pri/8) {
			t.Fatalf("facility of %q: %v", orig, ev["facility"])
		}
	}
	if got := value(e.m.EventCounter(EventParseError)); got != float64(senders*per/50) {
		t.Errorf("parse_error events %v, want %d", got, senders*per/50)
	}
	testbroker.CheckFor(t, 10*time.Second, func() error {
		if got := value(e.m.RecordsOut); got != float64(senders*per) {
			return fmt.Errorf("records_out %v", got)
		}
		return nil
	})
}

// TestTCPBackpressure: with a producer buffer of 10 messages and a broker
// that stops reading, the endpoint stops reading the sender's connection
// (the sender blocks) instead of dropping; after the broker resumes,
// every message arrives.
func TestTCPBackpressure(t *testing.T) {
	t.Parallel()
	const total = 50_000 // ~10 MB: more than the socket buffers hold
	e := newEnv(t, "bp", 1)
	srv := e.start(Options{Topic: "bp", TCPAddr: "127.0.0.1:0", MaxBufferedRecords: 10})
	// Metadata and the schema first, then stop the broker from reading.
	c, err := net.Dial("tcp", srv.TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "%s\n", message(0, 0))
	e.events("bp", 1)
	e.gate.Pause()
	var sent atomic.Int64
	done := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(c)
		for n := 1; n < total; n++ {
			w.WriteString(message(0, n) + "\n")
			sent.Add(1)
		}
		done <- w.Flush()
		c.Close()
	}()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if value(e.m.Paused) != 1 {
			return fmt.Errorf("connection not paused (records in %v)", value(e.m.RecordsIn))
		}
		return nil
	})
	in := value(e.m.RecordsIn)
	if in > 12 {
		t.Fatalf("%v messages read with a buffer of 10 and a paused broker", in)
	}
	select {
	case err := <-done:
		t.Fatalf("the sender finished (%v) although the endpoint stopped reading", err)
	default:
	}
	e.gate.Resume()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	evs := e.events("bp", total)
	if len(evs) != total {
		t.Fatalf("%d records, want %d", len(evs), total)
	}
}

// TestUDP: datagrams arrive parsed; with a full buffer (broker paused)
// the extra ones are dropped and counted, and the others arrive.
func TestUDP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "udp", 1)
	srv := e.start(Options{Topic: "udp", UDPAddr: "127.0.0.1:0", MaxBufferedRecords: 5, MaxMessageBytes: 600})
	c, err := net.Dial("udp", srv.UDPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Datagrams the server took: queued for the runtime or dropped.
	// (records_in plus drops is not that: records_in counts a record when
	// the runtime takes it from the push queue, which it does not while
	// it stores source positions on the paused broker.)
	seen := func() float64 { return float64(srv.UDPTaken()) }
	// Paced, five datagrams at a time (the buffer holds five), so that
	// neither the kernel's socket buffer nor the server's overflows.
	for n := 0; n < 200; n += 5 {
		for i := n; i < n+5; i++ {
			c.Write([]byte(message(1, i)))
		}
		testbroker.CheckFor(t, 10*time.Second, func() error {
			if int(seen()) < n+5 {
				return fmt.Errorf("%v of %d datagrams read", seen(), n+5)
			}
			if int(value(e.m.RecordsOut)) < n+5 {
				return fmt.Errorf("waiting for acks")
			}
			return nil
		})
	}
	// An oversized datagram is cut and flagged.
	c.Write([]byte("<13>big " + strings.Repeat("b", 1000)))
	evs := e.events("udp", 201)
	var cut int
	for _, ev := range evs {
		if ev["transport"] != "udp" {
			t.Fatalf("transport %v", ev["transport"])
		}
		if ev["truncated"] == true {
			cut++
			if len(ev["message"].(string)) != 600-4 {
				t.Fatalf("cut message of %d bytes", len(ev["message"].(string)))
			}
		}
	}
	if len(evs) != 201 || cut != 1 || srv.UDPDropped() != 0 {
		t.Fatalf("%d records, %d cut, %d dropped", len(evs), cut, srv.UDPDropped())
	}

	e.gate.Pause()
	before := seen()
	for n := 0; n < 40; n++ {
		c.Write([]byte(message(2, n)))
		testbroker.CheckFor(t, 10*time.Second, func() error {
			if int(seen()-before) < n+1 {
				return fmt.Errorf("%v of %d datagrams read", seen()-before, n+1)
			}
			return nil
		})
	}
	dropped := srv.UDPDropped()
	if dropped < 30 || dropped != int64(value(e.m.EventCounter(EventUDPDropped))) {
		t.Fatalf("%d dropped (metric %v) with a buffer of 5 and 40 datagrams", dropped, value(e.m.EventCounter(EventUDPDropped)))
	}
	e.gate.Resume()
	want := 201 + 40 - int(dropped)
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if got := int(value(e.m.RecordsOut)); got != want {
			return fmt.Errorf("%d acked, want %d", got, want)
		}
		return nil
	})
	if evs := e.events("udp", want); len(evs) != want {
		t.Fatalf("%d records, want %d", len(evs), want)
	}
}

// TestKind: the "syslog" kind is registered with its spec and runs
// through the connector runtime.
func TestKind(t *testing.T) {
	t.Parallel()
	k, err := connectors.Default.Lookup("syslog")
	if err != nil || !k.IsSource() {
		t.Fatal(err)
	}
	if _, err := k.Spec.Decode(map[string]any{"topic": "x", "tcp_address": "off", "udp_address": "off", "encoding": "json"}); err == nil {
		t.Fatal("both listeners off accepted")
	}
	if _, err := k.Spec.Decode(map[string]any{"topic": "x"}); err == nil || !strings.Contains(err.Error(), "schema_registry") {
		t.Fatalf("avro without a registry: %v", err)
	}
	e := newEnv(t, "kind", 1)
	cfg, err := k.Spec.Decode(map[string]any{"topic": "kind", "tcp_address": "127.0.0.1:0", "udp_address": "off",
		"schema_registry": e.reg, "brokers": []string{e.b.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := k.NewSource("sys", cfg)
	if err != nil {
		t.Fatal(err)
	}
	run(t, &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}}, "sys", src.(*Source), "kind")
	c, err := net.Dial("tcp", src.(*Source).Server().TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "<13>1 - h app - - - via the runtime\n")
	c.Close()
	evs := e.events("kind", 1)
	if evs[0]["message"] != "via the runtime" {
		t.Fatalf("%v", evs[0])
	}
}

func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
