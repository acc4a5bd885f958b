package observe

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Rates are per-second differences of Counters.
type Rates struct {
	RecordsIn   float64 `json:"records_in"`
	RecordsOut  float64 `json:"records_out"`
	BytesIn     float64 `json:"bytes_in"`
	BytesOut    float64 `json:"bytes_out"`
	Errors      float64 `json:"errors"`
	DeadLetters float64 `json:"dead_letters"`
}

// ComponentView is a component with its counters and rates.
type ComponentView struct {
	Component
	Counters
	Rates Rates `json:"rates"`
}

// EdgeView is an edge with the records moving along it: an edge out of
// a component carries the records it wrote to that topic (acknowledged
// by the broker), an edge into one the records it read from that topic,
// each with the errors and dead letters of those records (Counters.Topics).
// A component's errors and dead letters that belong to no one topic (a
// sink's write, flush or commit failures, a transform's dead letters)
// show on its edge when it has one on its input side (a source: output
// side), else on the component only. Shared is set when the component
// does not count per topic and has several edges on that side: the
// figures are then its totals, not the edge's alone.
type EdgeView struct {
	Edge
	Records        float64 `json:"records"`
	RecordsPerSec  float64 `json:"records_per_sec"`
	Errors         float64 `json:"errors"`
	ErrorsPerSec   float64 `json:"errors_per_sec"`
	DeadLetters    float64 `json:"dead_letters"`
	DeadLettersSec float64 `json:"dead_letters_per_sec"`
	Shared         bool    `json:"shared,omitempty"`
}

// View is the whole pipeline at one time: the answer of
// GET /api/v1/pipeline.
type View struct {
	Time time.Time `json:"time"`
	// Interval is the seconds the rates are measured over (0: no rates
	// yet, the first look).
	Interval   float64         `json:"interval_seconds"`
	Components []ComponentView `json:"components"`
	Topics     []string        `json:"topics"`
	Edges      []EdgeView      `json:"edges"`
}

// Meter computes rates from snapshots of a Pipeline's counters taken
// when it is looked at (View): no goroutine, nothing while nobody looks.
// Rates are over the newest interval of at least a second among the
// snapshots of the last 10 s.
type Meter struct {
	p     Pipeline
	mu    sync.Mutex
	snaps []snapshot
}

type snapshot struct {
	at time.Time
	by map[string]Counters
}

// NewMeter returns a Meter of p.
func NewMeter(p Pipeline) *Meter { return &Meter{p: p} }

// Pipeline returns what the meter watches.
func (m *Meter) Pipeline() Pipeline { return m.p }

const (
	minInterval = time.Second
	keepFor     = 10 * time.Second
)

// Run takes a snapshot every interval until ctx ends, so that the first
// look after a quiet while has rates already (one Counters call per
// interval: the runner gathers its metrics).
func (m *Meter) Run(ctx context.Context, every time.Duration) {
	tk := time.NewTicker(every)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			m.snapshot()
		}
	}
}

// snapshot records the counters now and returns them with the snapshot
// to take rates from (ok false: none yet).
func (m *Meter) snapshot() (cur snapshot, prev snapshot, ok bool) {
	cs := m.p.Counters()
	now := time.Now()
	cur = snapshot{at: now, by: make(map[string]Counters, len(cs))}
	for _, c := range cs {
		cur.by[c.ID] = c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var base *snapshot
	for i := len(m.snaps) - 1; i >= 0; i-- {
		if now.Sub(m.snaps[i].at) >= minInterval {
			base = &m.snaps[i]
			break
		}
	}
	if base == nil && len(m.snaps) > 0 && now.Sub(m.snaps[0].at) >= 100*time.Millisecond {
		base = &m.snaps[0]
	}
	if base != nil {
		prev, ok = *base, true
	}
	keep := m.snaps[:0]
	for _, s := range m.snaps {
		if now.Sub(s.at) <= keepFor {
			keep = append(keep, s)
		}
	}
	m.snaps = append(keep, cur)
	return cur, prev, ok
}

// View takes a snapshot and returns the pipeline with its rates.
func (m *Meter) View() View {
	g := m.p.Graph()
	cur, prev, ok := m.snapshot()
	now := cur.at
	v := View{Time: now, Topics: g.Topics}
	secs := 0.0
	if ok {
		secs = now.Sub(prev.at).Seconds()
		v.Interval = secs
	}
	rate := func(a, b float64) float64 {
		if secs <= 0 || a < b { // a restart resets some counters
			return 0
		}
		return (a - b) / secs
	}
	views := map[string]ComponentView{}
	for _, c := range g.Components {
		cv := ComponentView{Component: c, Counters: cur.by[c.ID]}
		cv.Counters.ID = c.ID
		if cv.State == "" {
			cv.State = "not running" // a singleton placed on another worker
		}
		if p, ok := prev.by[c.ID]; ok {
			cv.Rates = Rates{RecordsIn: rate(cv.RecordsIn, p.RecordsIn), RecordsOut: rate(cv.RecordsOut, p.RecordsOut),
				BytesIn: rate(cv.BytesIn, p.BytesIn), BytesOut: rate(cv.BytesOut, p.BytesOut),
				Errors: rate(cv.Errors, p.Errors), DeadLetters: rate(cv.DeadLetters, p.DeadLetters)}
		}
		views[c.ID] = cv
		v.Components = append(v.Components, cv)
	}
	outs, ins := map[string]int{}, map[string]int{}
	for _, e := range g.Edges {
		outs[e.From]++
		ins[e.To]++
	}
	types := make(map[string]string, len(g.Components))
	for _, c := range g.Components {
		types[c.ID] = c.Type
	}
	for _, e := range g.Edges {
		ev := EdgeView{Edge: e}
		if f, ok := edgeFigures(e, cur.by, types, ins, outs); ok {
			ev.Records, ev.Errors, ev.DeadLetters, ev.Shared = f.records, f.errors, f.deadLetters, f.shared
			if p, ok := edgeFigures(e, prev.by, types, ins, outs); ok {
				ev.RecordsPerSec, ev.ErrorsPerSec = rate(f.records, p.records), rate(f.errors, p.errors)
				ev.DeadLettersSec = rate(f.deadLetters, p.deadLetters)
			}
		}
		v.Edges = append(v.Edges, ev)
	}
	return v
}

// edgeFig are the figures of one edge in one snapshot.
type edgeFig struct {
	records, errors, deadLetters float64
	shared                       bool
}

// edgeFigures computes the figures of edge e (component → topic or
// topic → component) from the counters by component ID (see EdgeView);
// ok is false when the component has no counters there (it runs
// elsewhere, or the snapshot is missing).
func edgeFigures(e Edge, by map[string]Counters, types map[string]string, ins, outs map[string]int) (f edgeFig, ok bool) {
	id, topic, out := e.From, strings.TrimPrefix(e.To, "topic."), true
	typ, isComp := types[id]
	if !isComp {
		id, topic, out = e.To, strings.TrimPrefix(e.From, "topic."), false
		if typ, isComp = types[id]; !isComp {
			return f, false
		}
	}
	c, ok := by[id]
	if !ok {
		return f, false
	}
	n := ins[id]
	if out {
		n = outs[id]
	}
	// home is the side a component's own errors show on: its input, a
	// source's output.
	home := out == (typ == "source")
	tc, counted := c.Topics[topic]
	if !counted && (c.Topics == nil || n == 1) {
		// No figures of this topic: the component's totals (exact when
		// it is the only edge on this side).
		f.records, f.shared = c.RecordsIn, n > 1
		if out {
			f.records = c.RecordsOut
		}
		if home {
			f.errors, f.deadLetters = c.Errors, c.DeadLetters
		}
		return f, true
	}
	f.records, f.errors, f.deadLetters = tc.RecordsIn, tc.Errors, tc.DeadLetters
	if out {
		f.records = tc.RecordsOut
	}
	if home && n == 1 {
		// The only edge on its side also carries the errors and dead
		// letters of no one topic.
		var errs, dls float64
		for _, x := range c.Topics {
			errs += x.Errors
			dls += x.DeadLetters
		}
		f.errors += max(0, c.Errors-errs)
		f.deadLetters += max(0, c.DeadLetters-dls)
	}
	return f, true
}
