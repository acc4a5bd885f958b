package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"weir/internal/deadletter"
	"weir/pipelines/codec"
	"weir/pipelines/expr"
	"weir/streams"
)

// driveStream loads one pipeline file, builds its stream's topology and
// runs it on the streams TestDriver (no broker).
func driveStream(t *testing.T, src string) (*streams.TestDriver, *statefulStream) {
	t.Helper()
	cfg, diags := LoadSources([]SourceFile{{Name: "s.hcl", Src: []byte(src)}}, ".",
		Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if diags.HasErrors() {
		for _, d := range diags {
			t.Error(DiagLine(d))
		}
		t.FailNow()
	}
	s := cfg.Streams[0]
	if !s.Stateful() {
		t.Fatal("stream not stateful")
	}
	tr := &transformer{chain: s.Steps, dec: &codec.Decoder{}, defTopic: s.To, log: zap.NewNop()}
	ss := &statefulStream{s: s, ag: s.agg, tr: tr, ctx: context.Background(), enc: codec.JSON}
	tp, err := ss.topology()
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(tp, streams.DriverConfig{AppID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, ss
}

func pipe(t *testing.T, d *streams.TestDriver, topic string, ms int64, v string) {
	t.Helper()
	if err := d.Pipe(topic, nil, []byte(v), time.UnixMilli(ms)); err != nil {
		t.Fatal(err)
	}
}

// results renders a topic's records as "key start-end: value fields".
func results(t *testing.T, d *streams.TestDriver, topic string, fields ...string) []string {
	t.Helper()
	var out []string
	for _, r := range d.Output(topic) {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			t.Fatalf("%q: %v", r.Value, err)
		}
		s := string(r.Key)
		if ws, ok := m["window_start"].(string); ok {
			st, _ := time.Parse(time.RFC3339Nano, ws)
			en, _ := time.Parse(time.RFC3339Nano, m["window_end"].(string))
			s += fmt.Sprintf(" %d-%d", st.UnixMilli()/1000, en.UnixMilli()/1000)
		}
		s += ":"
		for _, f := range fields {
			s += fmt.Sprintf(" %s=%v", f, m[f])
		}
		out = append(out, s)
	}
	return out
}

func eq(t *testing.T, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// TestHoppingCount: a record falls in every hopping window that holds
// it; emit final writes each window once, when stream time passes its
// end.
func TestHoppingCount(t *testing.T) {
	t.Parallel()
	d, _ := driveStream(t, `
topic "logs" {}
topic "counts" {}
stream "s" {
  from     = [topic.logs]
  to       = topic.counts
  group_by = record.user
  window "hopping" {
    size    = "10s"
    advance = "5s"
    emit    = "final"
  }
  count {
    field = "clicks"
  }
}`)
	for _, ms := range []int64{1000, 6000, 12000} {
		pipe(t, d, "logs", ms, `{"user":"a"}`)
	}
	pipe(t, d, "logs", 100000, `{"user":"zz"}`)
	eq(t, results(t, d, "counts", "user", "clicks"), []string{
		"a 0-10: user=a clicks=2", "a 5-15: user=a clicks=2", "a 10-20: user=a clicks=1"})
}

// TestSessionAggregateMerge: a record between two sessions (within the
// gap of both) merges them with the merge expression.
func TestSessionAggregateMerge(t *testing.T) {
	t.Parallel()
	d, _ := driveStream(t, `
topic "logs" {}
topic "sessions" {}
stream "s" {
  from     = [topic.logs]
  to       = topic.sessions
  group_by = record.user
  window "session" {
    gap   = "10s"
    grace = "30s"
    emit  = "final"
  }
  aggregate {
    initial = { clicks = 0, pages = [] }
    add     = { clicks = agg.clicks + 1, pages = concat(agg.pages, [record.page]) }
    merge   = { clicks = agg.clicks + other.clicks, pages = concat(agg.pages, other.pages) }
  }
}`)
	pipe(t, d, "logs", 0, `{"user":"u","page":"a"}`)
	pipe(t, d, "logs", 18000, `{"user":"u","page":"b"}`)
	pipe(t, d, "logs", 9000, `{"user":"u","page":"c"}`)
	pipe(t, d, "logs", 40000, `{"user":"u","page":"d"}`)
	pipe(t, d, "logs", 1000000, `{"user":"zz","page":"x"}`)
	got := results(t, d, "sessions", "clicks", "pages")
	if len(got) != 2 || got[0][:len("u 0-18: clicks=3")] != "u 0-18: clicks=3" || got[1] != "u 40-40: clicks=1 pages=[d]" {
		t.Fatalf("sessions %q", got)
	}
}

// TestAggregateErrorDeadLetters: an add expression that fails on a
// record leaves the aggregate as it was, counts a transform error and
// sends the record to the dead-letter topic with the error (behind the
// repartition topic of group_by: the repartition record); a record
// without the group_by field (null key) belongs to no group. In a
// windowed stream the failing record changes no window either.
func TestAggregateErrorDeadLetters(t *testing.T) {
	t.Parallel()
	for _, window := range []string{"", `window "hopping" {
    size    = "10s"
    advance = "5s"
  }`} {
		d, ss := driveStream(t, `
topic "logs" {}
topic "sums" {}
stream "s" {
  from     = [topic.logs]
  to       = topic.sums
  group_by = record.service
  `+window+`
  aggregate {
    initial = 0
    add     = agg + record.ms
    field   = "total_ms"
  }
}`)
		pipe(t, d, "logs", 1, `{"service":"a","ms":5}`)
		pipe(t, d, "logs", 2, `{"service":"a","ms":"oops"}`)
		pipe(t, d, "logs", 3, `{"ms":100}`)
		pipe(t, d, "logs", 4, `{"service":"a","ms":7}`)
		got := results(t, d, "sums", "service", "total_ms")
		want := "a: service=a total_ms=12"
		if window != "" {
			want = "a 0-10: service=a total_ms=12" // windows start at 0 or later: only [0s, 10s)
		}
		if len(got) == 0 || got[len(got)-1] != want {
			t.Fatalf("window %q: results %q", window, got)
		}
		if n := ss.tr.errors.Load(); n != 1 {
			t.Fatalf("%d transform errors, want 1", n)
		}
		dl := d.Output("t-dlq")
		if len(dl) != 1 {
			t.Fatalf("%d dead letters, want 1", len(dl))
		}
		h := map[string]string{}
		for _, x := range dl[0].Headers {
			h[x.Key] = string(x.Value)
		}
		if msg := h[deadletter.HeaderMessage]; !strings.Contains(msg, "aggregate add at s.hcl:") || !strings.Contains(msg, streams.ErrOperator.Error()) ||
			h[deadletter.HeaderTopic] != "t-aggregate-repartition" || string(dl[0].Key) != "a" {
			t.Fatalf("dead letter key %q headers %v", dl[0].Key, h)
		}
		v, err := codec.DecodeState(dl[0].Value)
		if o, ok := v.(*expr.Object); err != nil || !ok {
			t.Fatalf("dead letter value %x: %v %v", dl[0].Value, v, err)
		} else if ms, _ := o.Get("ms"); ms != "oops" {
			t.Fatalf("dead letter value %v", o)
		}
	}
}
