package pipelines_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/internal/testkit"
	"weir/pipelines/observe"
)

const observedPipeline = `
topic "in" {}
topic "out" {}

source "file" "lines" {
  topic   = topic.in
  include = ["${path.root}/data/*.log"]
  parse_json {
    field    = "message"
    on_error = "dead_letter"
  }
}

stream "big" {
  from = [topic.in]
  to   = topic.out
  filter {
    condition = lower(record.kind) == "a" && record.n > 10
    on_error  = "dead_letter"
  }
}

sink "file" "copy" {
  from = [topic.out]
  path = "${path.root}/out/copy.jsonl"
}
`

// TestObservedCounters: the counters behind weir top and the console
// (Runner.Observed) count a source's records dead-lettered by its steps
// and a stream's, and a stateless stream's records out are its results
// (18 of 27 pass its filter); a restart of one component
// starts it again and leaves the others alone.
func TestObservedCounters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("p.hcl", observedPipeline)
	// 30 lines: 3 not JSON (the source's dead letters), 3 without kind
	// (the stream's: lower(null) fails), 18 of the 24 others with n > 10.
	var lines string
	for i := range 30 {
		switch {
		case i%10 == 0:
			lines += "not json\n"
		case i%10 == 1:
			lines += `{"m":1}` + "\n"
		default:
			lines += fmt.Sprintf(`{"kind":"a","n":%d}`+"\n", 4+i%10*2)
		}
	}
	e.write("data/a.log", lines)
	r := e.runner()
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	p := r.Observed()
	byID := func() map[string]observe.Counters {
		m := map[string]observe.Counters{}
		for _, c := range p.Counters() {
			m[c.ID] = c
		}
		return m
	}
	testkit.CheckFor(t, 30*time.Second, func() error {
		c := byID()
		src, st, sink := c["source.lines"], c["stream.big"], c["sink.copy"]
		if src.DeadLetters != 3 || src.RecordsOut != 30 || st.RecordsIn != 27 || st.DeadLetters != 3 || st.RecordsOut != 18 || sink.RecordsIn != 18 {
			return fmt.Errorf("source %+v\nstream %+v\nsink %+v", src, st, sink)
		}
		return nil
	})
	if g := p.Graph(); len(g.Components) != 3 || len(g.Edges) != 4 || g.Components[0].Kind != "file" || g.Components[0].Steps[0] != "parse_json" {
		t.Fatalf("graph %+v", g)
	}
	if err := p.Restart(context.Background(), "stream.big"); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(context.Background(), "stream.nope"); err == nil {
		t.Fatal("restart of stream.nope took")
	}
	c := byID()
	if c["stream.big"].Starts != 2 || c["source.lines"].Starts != 1 || c["sink.copy"].Starts != 1 {
		t.Fatalf("starts after restarting stream.big: %+v", c)
	}
	// The restarted stream goes on: a new line passes.
	f, err := os.OpenFile(filepath.Join(e.dir, "data/a.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `{"kind":"A","n":99}`)
	f.Close()
	testkit.CheckFor(t, 30*time.Second, func() error {
		if n := byID()["sink.copy"].RecordsIn; n != 19 {
			return fmt.Errorf("sink.copy read %v records, want 19", n)
		}
		return nil
	})
}

// TestObservedFailure: a component that cannot start (a file sink whose
// directory is a file) shows as failed, with its last error and when,
// in the counters and in the meter's view, while the others run.
func TestObservedFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("blocker", "a file, not a directory")
	e.write("p.hcl", `
topic "in" {}
sink "file" "broken" {
  from = [topic.in]
  path = "${path.root}/blocker/out.jsonl"
}
sink "file" "fine" {
  from = [topic.in]
  path = "${path.root}/out/fine.jsonl"
}
`)
	r := e.runner()
	start := time.Now()
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	m := observe.NewMeter(r.Observed())
	testkit.CheckFor(t, 30*time.Second, func() error {
		v := m.View()
		var broken, fine observe.ComponentView
		for _, c := range v.Components {
			switch c.Component.ID {
			case "sink.broken":
				broken = c
			case "sink.fine":
				fine = c
			}
		}
		if broken.State != "failed" || !strings.Contains(broken.LastError, "blocker") || broken.LastErrorAt == nil ||
			broken.LastErrorAt.Before(start) || fine.State != "running" || fine.LastError != "" {
			return fmt.Errorf("broken %+v\nfine %+v", broken, fine)
		}
		return nil
	})
}

// TestObservedPerEdge: a source writing to two topics (a route) and a
// dead-letter topic, a stream reading both and writing two (a route), a
// sink and an aggregating stream reading both: every edge of the meter's view has its own
// records and dead letters, counted by the runtime per topic (the
// weir_connector_topic_* metrics), not its component's totals.
func TestObservedPerEdge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("p.hcl", `
topic "a" {}
topic "b" {}
topic "high" {}
topic "low" {}

source "file" "lines" {
  topic   = topic.a
  include = ["${path.root}/data/*.log"]
  parse_json {
    field    = "message"
    on_error = "dead_letter"
  }
  route {
    topic     = topic.b
    condition = record.kind == "b"
  }
}

stream "split" {
  from = [topic.a, topic.b]
  to   = topic.high
  filter {
    condition = lower(record.tag) != "x"
    on_error  = "dead_letter"
  }
  route {
    topic     = topic.low
    condition = record.n < 10
  }
}

sink "file" "both" {
  from = [topic.a, topic.b]
  path = "${path.root}/out/both.jsonl"
}

topic "counts" {}

stream "count" {
  from = [topic.a, topic.b]
  to   = topic.counts
  filter {
    condition = lower(record.tag) != "x"
    on_error  = "dead_letter"
  }
  group_by = record.kind
  count {}
}
`)
	// 30 lines: 3 not JSON (the source's dead letters), 3 of kind b
	// without a tag (to topic b; the stream dead-letters them), 24 of
	// kind a (to topic a; 8 with n < 10 go to low, 16 to high).
	var lines strings.Builder
	for i := range 30 {
		switch i % 10 {
		case 0:
			lines.WriteString("not json\n")
		case 1:
			fmt.Fprintf(&lines, `{"kind":"b","n":%d}`+"\n", i)
		default:
			fmt.Fprintf(&lines, `{"kind":"a","tag":"t","n":%d}`+"\n", i)
		}
	}
	e.write("data/a.log", lines.String())
	r := e.streamRunner(t.TempDir())
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	m := observe.NewMeter(r.Observed())
	type fig struct{ records, deadLetters float64 }
	want := map[string]fig{
		"source.lines>topic.a": {24, 0}, "source.lines>topic.b": {3, 0},
		"topic.a>stream.split": {24, 0}, "topic.b>stream.split": {3, 3},
		"stream.split>topic.high": {16, 0}, "stream.split>topic.low": {8, 0},
		"topic.a>sink.both": {24, 0}, "topic.b>sink.both": {3, 0},
		// An aggregating stream counts per input topic from its tasks.
		"topic.a>stream.count": {24, 0}, "topic.b>stream.count": {3, 3},
	}
	testkit.CheckFor(t, 30*time.Second, func() error {
		v := m.View()
		var bad []string
		for _, ev := range v.Edges {
			k := ev.From + ">" + ev.To
			if k == "stream.count>topic.counts" { // its only output: its results
				if ev.Shared || ev.Records == 0 {
					bad = append(bad, fmt.Sprintf("%s: %+v", k, ev))
				}
				continue
			}
			if w, ok := want[k]; !ok || ev.Shared || ev.Records != w.records || ev.DeadLetters != w.deadLetters {
				bad = append(bad, fmt.Sprintf("%s: %v records, %v dead letters, shared %v; want %+v", k, ev.Records, ev.DeadLetters, ev.Shared, w))
			}
		}
		if len(v.Edges) != len(want)+1 {
			bad = append(bad, fmt.Sprintf("%d edges, want %d", len(v.Edges), len(want)))
		}
		var src observe.ComponentView
		for _, c := range v.Components {
			if c.Component.ID == "source.lines" {
				src = c
			}
		}
		if src.DeadLetters != 3 || src.RecordsOut != 30 {
			bad = append(bad, fmt.Sprintf("source.lines: %v dead letters, %v records out; want 3 and 30 (27 + 3 dead letters)", src.DeadLetters, src.RecordsOut))
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s", strings.Join(bad, "\n"))
		}
		return nil
	})
}
