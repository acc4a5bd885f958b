package observe

import (
	"context"
	"sync"
	"testing"
	"time"
)

// table is a Pipeline whose counters the test sets.
type table struct {
	mu sync.Mutex
	cs []Counters
}

func (t *table) Graph() Graph {
	return Graph{
		Components: []Component{{ID: "source.a", Type: "source"}, {ID: "stream.b", Type: "stream"}, {ID: "sink.c", Type: "sink"}},
		Topics:     []string{"t1", "t2"},
		Edges: []Edge{{From: "source.a", To: "topic.t1"}, {From: "topic.t1", To: "stream.b"}, {From: "stream.b", To: "topic.t2"},
			{From: "topic.t1", To: "sink.c"}, {From: "topic.t2", To: "sink.c"}},
	}
}

func (t *table) Counters() []Counters {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Counters(nil), t.cs...)
}

func (t *table) Restart(context.Context, string) error { return nil }
func (t *table) Taps() *Hub                            { return nil }

func (t *table) set(cs ...Counters) {
	t.mu.Lock()
	t.cs = cs
	t.mu.Unlock()
}

// TestMeter: rates are differences over the interval between looks,
// edges carry the records of the component that moves them, a counter
// that went back (a restart) is no negative rate, and a component with
// no counters (placed on another worker) says so.
func TestMeter(t *testing.T) {
	tb := &table{}
	tb.set(Counters{ID: "source.a", State: "running", RecordsOut: 100, Errors: 1},
		Counters{ID: "stream.b", State: "running", RecordsIn: 100, RecordsOut: 10, DeadLetters: 2})
	m := NewMeter(tb)
	v := m.View()
	if v.Interval != 0 || v.Components[0].Rates.RecordsOut != 0 {
		t.Fatalf("first look has rates: %+v", v)
	}
	if c := v.Components[2]; c.State != "not running" {
		t.Fatalf("sink.c without counters: %+v", c)
	}
	for v.Interval == 0 {
		time.Sleep(10 * time.Millisecond)
		tb.set(Counters{ID: "source.a", State: "running", RecordsOut: 300, Errors: 3},
			Counters{ID: "stream.b", State: "running", RecordsIn: 50, RecordsOut: 20, DeadLetters: 2},
			Counters{ID: "sink.c", State: "running", RecordsIn: 40})
		if time.Since(v.Time) >= 150*time.Millisecond {
			v = m.View()
		}
	}
	secs := v.Interval
	a, b := v.Components[0], v.Components[1]
	if a.Rates.RecordsOut != 200/secs || a.Rates.Errors != 2/secs || b.Rates.RecordsIn != 0 || b.Rates.RecordsOut != 10/secs {
		t.Fatalf("rates over %vs: %+v %+v", secs, a.Rates, b.Rates)
	}
	edges := map[string]EdgeView{}
	for _, e := range v.Edges {
		edges[e.From+">"+e.To] = e
	}
	if e := edges["source.a>topic.t1"]; e.Records != 300 || e.Errors != 3 || e.Shared {
		t.Fatalf("source edge %+v", e)
	}
	if e := edges["topic.t1>stream.b"]; e.Records != 50 || e.DeadLetters != 2 {
		t.Fatalf("stream input edge %+v", e)
	}
	if e := edges["stream.b>topic.t2"]; e.Records != 20 || e.DeadLetters != 0 {
		t.Fatalf("stream output edge %+v", e)
	}
	if e := edges["topic.t2>sink.c"]; e.Records != 40 || !e.Shared {
		t.Fatalf("sink edge of two %+v", e)
	}
}

// TestMeterPerTopic: a component that counts per topic shows each
// edge's own records, rates, errors and dead letters (a sink reading t1
// and t2 at different rates), not its totals; errors tied to no topic
// stay on the component when it has several edges on that side, and
// go to the only edge when it has one (the source's dead letters of a
// transform).
func TestMeterPerTopic(t *testing.T) {
	tb := &table{}
	sink := func(t1, t2 float64) Counters {
		return Counters{ID: "sink.c", State: "running", RecordsIn: t1 + t2, Errors: 7, DeadLetters: 3,
			Topics: map[string]TopicCounters{"t1": {RecordsIn: t1, Errors: 1, DeadLetters: 2}, "t2": {RecordsIn: t2, Errors: 4, DeadLetters: 1}}}
	}
	src := func(n float64) Counters {
		return Counters{ID: "source.a", State: "running", RecordsOut: n + 5, Errors: 2, DeadLetters: 5,
			Topics: map[string]TopicCounters{"t1": {RecordsOut: n}, "weir-dlq-a": {RecordsOut: 5}}}
	}
	tb.set(src(100), sink(1000, 10))
	m := NewMeter(tb)
	v := m.View()
	for v.Interval == 0 {
		time.Sleep(10 * time.Millisecond)
		tb.set(src(400), sink(3000, 20))
		if time.Since(v.Time) >= 150*time.Millisecond {
			v = m.View()
		}
	}
	secs := v.Interval
	edges := map[string]EdgeView{}
	for _, e := range v.Edges {
		edges[e.From+">"+e.To] = e
	}
	for _, c := range []struct {
		edge                string
		records, rate       float64
		errors, deadLetters float64
	}{
		{"topic.t1>sink.c", 3000, 2000 / secs, 1, 2},
		{"topic.t2>sink.c", 20, 10 / secs, 4, 1},
		// The only output edge: its records are t1's (not the dead
		// letters written to weir-dlq-a); the source's errors and dead
		// letters of no topic are on it.
		{"source.a>topic.t1", 400, 300 / secs, 2, 5},
	} {
		e := edges[c.edge]
		if e.Shared || e.Records != c.records || e.RecordsPerSec != c.rate || e.Errors != c.errors || e.DeadLetters != c.deadLetters {
			t.Errorf("%s: %+v; want records %v at %v/s, errors %v, dead letters %v, not shared", c.edge, e, c.records, c.rate, c.errors, c.deadLetters)
		}
	}
	if e := edges["topic.t1>stream.b"]; e.Records != 0 || e.RecordsPerSec != 0 {
		t.Errorf("edge of a component without counters: %+v", e)
	}
}
