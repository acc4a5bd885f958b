package pipelines

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/pipelines/codec"
	"weir/pipelines/expr"
	"weir/pipelines/observe"
	"weir/schemas"
)

// Observation of a running pipeline (package observe): the runner's
// side. The tap points are wired into the components' hot paths here;
// each costs one atomic load per batch (sources, sinks, stream inputs)
// or per record (transform steps, stream outputs) while nobody taps.

// Observed returns the runner as an observe.Pipeline: its graph, its
// counters (Status), restarts and tap hub.
func (r *Runner) Observed() observe.Pipeline { return observed{r} }

type observed struct{ r *Runner }

func (o observed) Taps() *observe.Hub { return o.r.hub }

func (o observed) Restart(ctx context.Context, id string) error { return o.r.Restart(ctx, id) }

func (o observed) Graph() observe.Graph {
	o.r.mu.Lock()
	cfg := o.r.cfg
	o.r.mu.Unlock()
	var g observe.Graph
	if cfg == nil {
		return g
	}
	for _, s := range cfg.Sources {
		g.Components = append(g.Components, observe.Component{ID: s.ID(), Type: s.Type, Kind: s.Kind, Steps: s.Steps.kinds()})
	}
	for _, s := range cfg.Streams {
		kind := "stream"
		if s.Stateful() {
			kind = "aggregate"
		}
		g.Components = append(g.Components, observe.Component{ID: s.ID(), Type: s.Type, Kind: kind, Steps: s.Steps.kinds()})
	}
	for _, s := range cfg.Sinks {
		g.Components = append(g.Components, observe.Component{ID: s.ID(), Type: s.Type, Kind: s.Kind})
	}
	if cfg.Graph != nil {
		for _, n := range cfg.Graph.Nodes {
			if t, ok := strings.CutPrefix(n, "topic."); ok {
				g.Topics = append(g.Topics, t)
			}
		}
		for _, e := range cfg.Graph.Edges {
			g.Edges = append(g.Edges, observe.Edge{From: e.From, To: e.To})
		}
	}
	return g
}

func (o observed) Counters() []observe.Counters {
	sts := o.r.Status()
	out := make([]observe.Counters, len(sts))
	for i, s := range sts {
		c := observe.Counters{ID: s.ID, State: s.State, Starts: s.Starts, RecordsIn: s.RecordsIn, RecordsOut: s.RecordsOut,
			BytesIn: s.BytesIn, BytesOut: s.BytesOut, Errors: s.Errors, DeadLetters: s.DeadLetters, Lag: s.Lag, Late: s.Late}
		if s.Topics != nil {
			c.Topics = make(map[string]observe.TopicCounters, len(s.Topics))
			for k, v := range s.Topics {
				c.Topics[k] = observe.TopicCounters(v)
			}
		}
		if s.LastErr != nil {
			at := s.LastErrAt
			c.LastError, c.LastErrorAt = s.LastErr.Error(), &at
		}
		out[i] = c
	}
	return out
}

// Restart stops the component id (a final flush and commit, as a
// reload does) and starts it again. observe.ErrUnknownComponent: no
// component of that ID; observe.ErrNotRunningHere: a worker group runs
// it on another worker.
func (r *Runner) Restart(ctx context.Context, id string) error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return fmt.Errorf("restarting %s: the runner is stopping", id)
	}
	if _, ok := r.comps[id]; !ok {
		r.mu.Unlock()
		return fmt.Errorf("%w %q", observe.ErrUnknownComponent, id)
	}
	t, ok := r.running[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("%w: %s", observe.ErrNotRunningHere, id)
	}
	delete(r.running, id)
	r.mu.Unlock()
	// The stop (final flush and commit) may take a while: Status and
	// the other components' reloads do not wait for it.
	t.cancel()
	select {
	case <-t.done:
	case <-ctx.Done():
		r.log.Warn("component restart: the old run is still stopping; starting the new one", zap.String("component", id))
	}
	r.log.Info("pipeline component restarting on request", zap.String("component", id))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reconcileLocked()
	if nt := r.running[id]; nt != nil && nt != t {
		nt.mu.Lock()
		nt.starts += t.starts
		nt.mu.Unlock()
	}
	return nil
}

// stepTap publishes a chain's events to a component's step points.
type stepTap struct {
	active  *atomic.Int32
	in, out []*observe.Point // by step-1
}

func (r *Runner) newStepTap(id string, c *Chain) *stepTap {
	n := c.Len()
	if n == 0 {
		return nil
	}
	st := &stepTap{active: r.hub.Steps(id), in: make([]*observe.Point, n), out: make([]*observe.Point, n)}
	for i := range n {
		st.in[i] = r.hub.Point(id, i+1, observe.In)
		st.out[i] = r.hub.Point(id, i+1, observe.Out)
	}
	return st
}

// on reports whether any step of the chain is tapped (the per-record check).
func (st *stepTap) on() bool { return st != nil && st.active.Load() > 0 }

func (st *stepTap) before(step int, ev *Event) {
	st.in[step-1].Publish(func(s *observe.Sample) { fillEvent(s, ev, Keep) })
}

func (st *stepTap) after(step int, ev *Event, out Outcome) {
	st.out[step-1].Publish(func(s *observe.Sample) { fillEvent(s, ev, out) })
}

// applyChain runs a chain, through the step taps when any is active.
func applyChain(c *Chain, ev *Event, st *stepTap) (Outcome, error) {
	if st.on() {
		return c.apply(ev, st)
	}
	return c.Apply(ev)
}

func outcomeName(o Outcome) string {
	switch o {
	case Drop:
		return "dropped"
	case DeadLetter:
		return "dead_letter"
	}
	return ""
}

func fillEvent(s *observe.Sample, ev *Event, out Outcome) {
	s.Value = json.RawMessage(codec.AppendJSON(nil, ev.Fields))
	if ev.Key != nil {
		k := string(ev.Key)
		s.Key = &k
	}
	if !ev.Time.IsZero() {
		t := ev.Time
		s.Timestamp = &t
	}
	s.Topic = ev.Topic
	s.Outcome = outcomeName(out)
}

// fillValue decodes a record value for a sample: Avro through the
// registry, JSON as it is, text as text.
func (r *Runner) fillValue(s *observe.Sample, v []byte) {
	switch {
	case v == nil:
		s.Value = json.RawMessage("null")
	case len(v) >= 5 && v[0] == schemas.Magic:
		ctx, cancel := context.WithTimeout(r.baseCtx, 5*time.Second)
		defer cancel()
		o, err := r.dec.Decode(ctx, v, &expr.Object{})
		if err != nil {
			s.ValueError = err.Error()
			return
		}
		s.Value = json.RawMessage(codec.AppendJSON(nil, o))
	case json.Valid(v):
		s.Value = json.RawMessage(append([]byte(nil), v...))
	case utf8.Valid(v):
		s.ValueText = string(v)
	default:
		s.ValueError = fmt.Sprintf("%d bytes, neither Avro (registry framing), JSON nor text", len(v))
	}
}

func (r *Runner) fillRecord(s *observe.Sample, topic string, key, value []byte, ts time.Time) {
	s.Topic = topic
	if key != nil {
		k := string(key)
		s.Key = &k
	}
	if !ts.IsZero() {
		s.Timestamp = &ts
	}
	r.fillValue(s, value)
}

// observeSource returns the SourceOptions.Observe hook of a source:
// the records it hands to the producer (after its steps).
func (r *Runner) observeSource(id string) func([]connectors.SourceRecord) {
	p := r.hub.Point(id, 0, observe.Out)
	return func(rs []connectors.SourceRecord) {
		if !p.Active() {
			return
		}
		for i := range rs {
			rec := &rs[i]
			p.Publish(func(s *observe.Sample) {
				r.fillRecord(s, rec.Topic, rec.Key, rec.Value, rec.Timestamp)
				if rec.Topic == "" {
					s.Topic = "(default)"
				}
			})
		}
	}
}

// observeRecords returns the SinkOptions.Observe hook of a component's
// input (sinks, stateless streams): records read from topics.
func (r *Runner) observeRecords(id string) func([]*kgo.Record) {
	p := r.hub.Point(id, 0, observe.In)
	return func(rs []*kgo.Record) {
		if !p.Active() {
			return
		}
		for _, rec := range rs {
			p.Publish(func(s *observe.Sample) { r.fillRead(s, rec) })
		}
	}
}

// fillRead fills a sample from a record read from a topic.
func (r *Runner) fillRead(s *observe.Sample, rec *kgo.Record) {
	part, off := rec.Partition, rec.Offset
	s.Partition, s.Offset = &part, &off
	r.fillRecord(s, rec.Topic, rec.Key, rec.Value, rec.Timestamp)
}

// addTopicMetric adds one weir_connector_topic_* series to topics.
func addTopicMetric(topics map[string]map[string]*TopicCounts, connector, topic, metric string, v float64) {
	if topics[connector] == nil {
		topics[connector] = map[string]*TopicCounts{}
	}
	tc := topics[connector][topic]
	if tc == nil {
		tc = &TopicCounts{}
		topics[connector][topic] = tc
	}
	switch metric {
	case "weir_connector_topic_records_in_total":
		tc.RecordsIn += v
	case "weir_connector_topic_records_out_total":
		tc.RecordsOut += v
	case "weir_connector_topic_errors_total":
		tc.Errors += v
	case "weir_connector_topic_dead_letters_total":
		tc.DeadLetters += v
	}
}
