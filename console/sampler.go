package console

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"go.uber.org/zap"
)

// ring keeps the last len(buf) samples.
type ring struct {
	buf  []Point
	next int
	full bool
}

func newRing(n int) *ring { return &ring{buf: make([]Point, n)} }

func (r *ring) add(p Point) {
	r.buf[r.next] = p
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

// points returns the samples oldest first (a copy).
func (r *ring) points() []Point {
	if !r.full {
		return append([]Point(nil), r.buf[:r.next]...)
	}
	return append(append([]Point(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// sampler records, every interval, each topic's summed end offsets and
// each group's lag per topic. It runs while the console is looked at:
// from a page view until idleSamples intervals without one (the history
// kept meanwhile stays), and stops at Close.
type sampler struct {
	c        *Console
	interval time.Duration
	size     int

	mu      sync.Mutex
	running bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
	viewed  time.Time                   // the last page view
	ends    map[string]*ring            // topic → summed end offsets
	lag     map[string]map[string]*ring // group → topic → summed lag
	last    time.Time                   // of the last complete sample
	lastAt  time.Time                   // of the last snapshot recorded
	lastEr  error
}

// idleSamples is how many intervals without a page view stop sampling.
const idleSamples = 30

func newSampler(c *Console, interval time.Duration, size int) *sampler {
	return &sampler{c: c, interval: interval, size: size, ends: map[string]*ring{}, lag: map[string]map[string]*ring{}}
}

// start notes a page view and runs the sampler if it is not running.
func (s *sampler) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.viewed = time.Now()
	if s.running || s.closed {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.running, s.cancel, s.done = true, cancel, make(chan struct{})
	go s.run(ctx, s.done)
}

func (s *sampler) stop() {
	s.mu.Lock()
	s.closed = true
	running, cancel, done := s.running, s.cancel, s.done
	s.mu.Unlock()
	if running {
		cancel()
		<-done
	}
}

func (s *sampler) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		idle := time.Since(s.viewed) > idleSamples*s.interval
		if idle {
			s.running = false
			s.cancel()
		}
		s.mu.Unlock()
		if idle {
			return
		}
	}
}

// sample takes one sample of every topic's end offsets and every
// group's lag: the lag snapshot (shared with the groups list, so a
// snapshot taken by a page view less than half an interval ago is used).
func (s *sampler) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.RequestTimeout)
	defer cancel()
	snap, at, err := s.c.lags(ctx, s.interval/2)
	if snap == nil {
		s.fail(ctx, "lag snapshot", err)
		return
	}
	if snap.EndsErr != nil {
		s.fail(ctx, "end offsets", snap.EndsErr)
		return
	}
	sums := map[string]int64{}
	snap.Ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			sums[o.Topic] += o.Offset
		}
	})
	if snap.LagsErr != nil {
		s.fail(ctx, "group lag", snap.LagsErr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !at.After(s.lastAt) {
		return // this snapshot is already recorded
	}
	s.lastAt = at
	for topic, v := range sums {
		r := s.ends[topic]
		if r == nil {
			r = newRing(s.size)
			s.ends[topic] = r
		}
		r.add(Point{T: at, V: float64(v)})
	}
	for topic := range s.ends {
		if _, ok := sums[topic]; !ok {
			delete(s.ends, topic) // deleted
		}
	}
	if snap.LagsErr == nil {
		seen := map[string]bool{}
		for g, gv := range snap.Groups {
			if gv.Err != nil {
				continue
			}
			seen[g] = true
			byTopic := s.lag[g]
			if byTopic == nil {
				byTopic = map[string]*ring{}
				s.lag[g] = byTopic
			}
			for topic, lag := range gv.byTopic() {
				r := byTopic[topic]
				if r == nil {
					r = newRing(s.size)
					byTopic[topic] = r
				}
				r.add(Point{T: at, V: float64(lag)})
			}
		}
		for g := range s.lag {
			if !seen[g] {
				delete(s.lag, g)
			}
		}
		s.last, s.lastEr = at, nil
	}
}

func (s *sampler) fail(ctx context.Context, what string, err error) {
	if ctx.Err() != nil && context.Cause(ctx) == context.Canceled {
		return
	}
	s.c.lg.Debug("console: sampling failed", zap.String("what", what), zap.Error(err))
	s.mu.Lock()
	s.lastEr = err
	s.mu.Unlock()
}

// throughput is topic's rate of appended records (records/s) between
// samples.
func (s *sampler) throughput(topic string) Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Series{Name: topic}
	r := s.ends[topic]
	if r == nil {
		return out
	}
	pts := r.points()
	for i := 1; i < len(pts); i++ {
		dt := pts[i].T.Sub(pts[i-1].T).Seconds()
		if dt <= 0 {
			continue
		}
		dv := pts[i].V - pts[i-1].V
		if dv < 0 {
			dv = 0 // the topic was recreated
		}
		out.Points = append(out.Points, Point{T: pts[i].T, V: dv / dt})
	}
	return out
}

// groupLag is the group's lag history, one series per topic.
func (s *sampler) groupLag(group string) []Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Series
	for topic, r := range s.lag[group] {
		out = append(out, Series{Name: topic, Points: r.points()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
