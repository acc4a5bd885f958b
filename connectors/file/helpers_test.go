package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/schemas"
)

type env struct {
	t    *testing.T
	b    *testbroker.Broker
	reg  string
	dir  string
	rt   *connectors.Runtime
	ms   *connectors.MetricSet
	serd *schemas.Serde
}

func newEnv(t *testing.T) *env {
	b := testbroker.Start(t)
	reg := b.Registry(t)
	cl, err := sr.NewClient(sr.URLs(reg))
	if err != nil {
		t.Fatal(err)
	}
	ms := connectors.NewMetricSet(nil)
	lg := zap.NewNop()
	if testing.Verbose() {
		lg, _ = zap.NewDevelopment()
	}
	return &env{t: t, b: b, reg: reg, dir: t.TempDir(), ms: ms, serd: schemas.NewSerde(srclient.Source(cl)),
		rt: &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Metrics: ms, Logger: lg}}
}

func (e *env) options(topic string, include ...string) Options {
	cl, err := sr.NewClient(sr.URLs(e.reg))
	if err != nil {
		e.t.Fatal(err)
	}
	return Options{Topic: topic, Include: include, Encoder: &AvroEncoder{Registry: cl}, Host: "testhost",
		RescanInterval: 50 * time.Millisecond, PollInterval: 10 * time.Millisecond, RotateWait: 300 * time.Millisecond}
}

// run starts a source connector and returns a stop function.
func (e *env) run(name string, o Options) (stop func()) {
	src, err := New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- e.rt.RunSource(ctx, name, src, connectors.SourceOptions{Topic: o.Topic, CommitInterval: 100 * time.Millisecond})
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-errc; err != nil {
			e.t.Errorf("source: %v", err)
		}
	}
	e.t.Cleanup(stop)
	return stop
}

type event struct {
	File, Message string
	Offset        int64
	Truncated     bool
	Host          string
	Fields        map[string]any
}

func (e *env) events(topic string) []event { return e.decode(e.b.ReadAll(topic)) }

// decode decodes records of the file source.
func (e *env) decode(recs []*kgo.Record) []event {
	var out []event
	for _, r := range recs {
		_, v, err := e.serd.Decode(context.Background(), r.Value)
		if err != nil {
			e.t.Fatalf("record %d: %v", r.Offset, err)
		}
		m := v.(map[string]any)
		ev := event{File: m["file"].(string), Message: m["message"].(string), Offset: m["offset"].(int64),
			Truncated: m["truncated"].(bool), Host: m["host"].(string)}
		if u, ok := m["fields"].(map[string]any); ok { // union {"map": {...}}
			ev.Fields, _ = u["map"].(map[string]any)
		}
		out = append(out, ev)
	}
	return out
}

// waitMessages waits until topic holds want events and returns them.
func (e *env) waitMessages(topic string, want int) []event {
	e.t.Helper()
	var evs []event
	testbroker.CheckFor(e.t, 60*time.Second, func() error {
		evs = e.events(topic)
		if len(evs) < want {
			return fmt.Errorf("%d of %d events", len(evs), want)
		}
		return nil
	})
	return evs
}

func appendLines(t *testing.T, path, prefix string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b []byte
	for i := from; i < to; i++ {
		b = fmt.Appendf(b, "%s line %06d with some padding to look like a log line\n", prefix, i)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

func (e *env) path(name string) string { return filepath.Join(e.dir, name) }

func newSerde(cl *sr.Client) *schemas.Serde { return schemas.NewSerde(srclient.Source(cl)) }

func fmtAny(v any) string { return fmt.Sprintf("%v", v) }

// waitFor waits until ok holds for the events of topic and returns them.
func (e *env) waitFor(topic string, ok func([]event) bool) []event {
	e.t.Helper()
	var evs []event
	testbroker.CheckFor(e.t, 60*time.Second, func() error {
		evs = e.events(topic)
		if !ok(evs) {
			return fmt.Errorf("%d events, condition not met", len(evs))
		}
		return nil
	})
	return evs
}

func newSRClient(tb testing.TB, url string) *sr.Client {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}

func runBench(tb testing.TB, broker string, o Options) (stop func()) {
	src, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{broker}}}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- rt.RunSource(ctx, "bench", src, connectors.SourceOptions{Topic: o.Topic}) }()
	return func() {
		cancel()
		if err := <-errc; err != nil {
			tb.Error(err)
		}
	}
}
