package observe

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Directions of a tap.
const (
	Out = "out" // records a component (or step) emits
	In  = "in"  // records a component (or step) receives
)

// Defaults and bounds of a subscription.
const (
	DefaultRate = 10   // samples per second
	MaxRate     = 1000 // samples per second
	// subBuffer is how many samples wait for a slow reader before more
	// are dropped.
	subBuffer = 64
)

// Sample is one observed record, decoded.
type Sample struct {
	Component string `json:"component"`
	// Step is the transform step (1-based) for step taps, else 0.
	Step      int    `json:"step,omitempty"`
	Direction string `json:"direction"`
	// Topic, Partition and Offset say where the record is: the topic it
	// was read from (in) or is written to (out); offsets of records
	// read from a topic.
	Topic     string     `json:"topic,omitempty"`
	Partition *int32     `json:"partition,omitempty"`
	Offset    *int64     `json:"offset,omitempty"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
	Key       *string    `json:"key,omitempty"`
	// Value is the record value as JSON (Avro decoded through the
	// registry); ValueError says why it could not be decoded, and
	// ValueText then holds its bytes when they are text.
	Value      json.RawMessage `json:"value,omitempty"`
	ValueError string          `json:"value_error,omitempty"`
	ValueText  string          `json:"value_text,omitempty"`
	// Outcome is what a step or transform did with the record when it
	// is not kept: "dropped" or "dead_letter".
	Outcome string `json:"outcome,omitempty"`
	// Skipped counts records this subscriber's rate let pass unseen
	// since its previous sample.
	Skipped int64 `json:"skipped,omitempty"`
}

// SubOptions shape a subscription.
type SubOptions struct {
	// Rate is the most samples per second (0: DefaultRate; at most
	// MaxRate).
	Rate float64
	// Limit ends the subscription after this many samples (0: none).
	Limit int
}

// Sub is one subscriber of a point. C is closed when the subscription
// ends (Limit reached or Close).
type Sub struct {
	C <-chan Sample

	c       chan Sample
	p       *Point
	rate    float64
	tokens  float64
	last    time.Time
	left    int // samples still wanted (-1: no limit)
	skipped int64
	closed  bool
	// Lost counts samples dropped because the reader was slow.
	Lost atomic.Int64
}

// Point is one place records can be observed: a component's output or
// input, or a transform step's. Its methods are safe for concurrent use
// and a nil Point is never active.
type Point struct {
	Component string
	Step      int
	Direction string

	n      atomic.Int32
	parent *atomic.Int32 // the component's step points together (may be nil)
	mu     sync.Mutex
	subs   []*Sub
}

// Active reports whether anybody taps the point: the one check on a
// component's hot path.
func (p *Point) Active() bool { return p != nil && p.n.Load() > 0 }

// Publish offers one record to the point's subscribers. build fills in
// the record's fields (where, key, value) and is called at most once,
// only when a subscriber's rate admits a sample. It never blocks.
func (p *Point) Publish(build func(*Sample)) {
	if !p.Active() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var s *Sample
	for i := 0; i < len(p.subs); i++ {
		sub := p.subs[i]
		if !sub.admit(now) {
			continue
		}
		if s == nil {
			s = &Sample{Component: p.Component, Step: p.Step, Direction: p.Direction}
			build(s)
		}
		out := *s
		out.Skipped, sub.skipped = sub.skipped, 0
		select {
		case sub.c <- out:
			if sub.left > 0 {
				sub.left--
				if sub.left == 0 {
					p.removeLocked(sub)
					i--
				}
			}
		default:
			sub.Lost.Add(1)
		}
	}
}

// admit takes a token of the subscriber's rate (burst: one second's).
func (s *Sub) admit(now time.Time) bool {
	s.tokens = min(s.tokens+now.Sub(s.last).Seconds()*s.rate, max(s.rate, 1))
	s.last = now
	if s.tokens < 1 {
		s.skipped++
		return false
	}
	s.tokens--
	return true
}

// removeLocked ends sub's subscription; p.mu is held.
func (p *Point) removeLocked(sub *Sub) {
	if sub.closed {
		return
	}
	sub.closed = true
	for i, x := range p.subs {
		if x == sub {
			p.subs = append(p.subs[:i], p.subs[i+1:]...)
			break
		}
	}
	p.n.Add(-1)
	if p.parent != nil {
		p.parent.Add(-1)
	}
	close(sub.c)
}

// Close ends the subscription (C is closed). Calling it again is a no-op.
func (s *Sub) Close() {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.removeLocked(s)
}

// Hub holds the points of a run. Points live as long as the hub, so a
// restarted component finds its subscribers again.
type Hub struct {
	mu     sync.Mutex
	points map[pointKey]*Point
	steps  map[string]*atomic.Int32 // component → active step points
}

type pointKey struct {
	comp string
	step int
	dir  string
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{points: map[pointKey]*Point{}, steps: map[string]*atomic.Int32{}}
}

// Point returns the point of component's direction (step 0) or of its
// transform step (1-based), creating it.
func (h *Hub) Point(component string, step int, dir string) *Point {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k := pointKey{component, step, dir}
	p := h.points[k]
	if p == nil {
		p = &Point{Component: component, Step: step, Direction: dir}
		if step > 0 {
			p.parent = h.stepsLocked(component)
		}
		h.points[k] = p
	}
	return p
}

// Steps returns the count of active step points of component: a chain
// checks it once per record to know whether to run its steps one by one
// with taps.
func (h *Hub) Steps(component string) *atomic.Int32 {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stepsLocked(component)
}

func (h *Hub) stepsLocked(component string) *atomic.Int32 {
	c := h.steps[component]
	if c == nil {
		c = &atomic.Int32{}
		h.steps[component] = c
	}
	return c
}

// Subscribe taps a point. The caller must Close the Sub when done.
func (h *Hub) Subscribe(component string, step int, dir string, o SubOptions) (*Sub, error) {
	if dir != In && dir != Out {
		return nil, fmt.Errorf("direction %q: want %q or %q", dir, In, Out)
	}
	rate := o.Rate
	switch {
	case rate < 0 || rate > MaxRate:
		return nil, fmt.Errorf("rate %v: want 0 < rate ≤ %d samples/s", rate, MaxRate)
	case rate == 0:
		rate = DefaultRate
	}
	if o.Limit < 0 {
		return nil, fmt.Errorf("limit %d: want 0 (none) or more", o.Limit)
	}
	p := h.Point(component, step, dir)
	c := make(chan Sample, subBuffer)
	s := &Sub{C: c, c: c, p: p, rate: rate, tokens: max(rate, 1), last: time.Now(), left: -1}
	if o.Limit > 0 {
		s.left = o.Limit
	}
	p.mu.Lock()
	p.subs = append(p.subs, s)
	p.n.Add(1)
	if p.parent != nil {
		p.parent.Add(1)
	}
	p.mu.Unlock()
	return s, nil
}
