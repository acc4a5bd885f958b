package observe

import (
	"context"
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
// a component carries its output (records out), an edge into one its
// input (records in), with its errors and dead letters on its input
// edges (a source's on its output). Shared is set when the component
// has several edges on that side (several from topics, routes): the
// figures are then the component's, not the edge's alone.
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
	for _, e := range g.Edges {
		ev := EdgeView{Edge: e}
		if c, ok := views[e.From]; ok { // component → topic
			ev.Records, ev.RecordsPerSec, ev.Shared = c.RecordsOut, c.Rates.RecordsOut, outs[e.From] > 1
			if c.Type == "source" {
				ev.Errors, ev.ErrorsPerSec = c.Errors, c.Rates.Errors
				ev.DeadLetters, ev.DeadLettersSec = c.DeadLetters, c.Rates.DeadLetters
			}
		} else if c, ok := views[e.To]; ok { // topic → component
			ev.Records, ev.RecordsPerSec, ev.Shared = c.RecordsIn, c.Rates.RecordsIn, ins[e.To] > 1
			ev.Errors, ev.ErrorsPerSec = c.Errors, c.Rates.Errors
			ev.DeadLetters, ev.DeadLettersSec = c.DeadLetters, c.Rates.DeadLetters
		}
		v.Edges = append(v.Edges, ev)
	}
	return v
}
