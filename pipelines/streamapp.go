package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"weir/internal/deadletter"
	"weir/pipelines/codec"
	"weir/pipelines/expr"
	"weir/pipelines/observe"
	"weir/streams"
)

// An aggregating stream block runs as a streams application (package
// streams): one consumer group named by the block's group (its
// application id), state stores backed by compacted changelog topics
// <group>-<store>-changelog, and a repartition topic
// <group>-<store>-repartition when group_by changes the key. The
// topology it builds:
//
//	From(each from topic) ─ merge ─ decode + transform steps + group_by key
//	   (records a step dead-letters, or whose group_by fails, go to the
//	   dead-letter topic weir-dlq-<stream>; filtered ones and null group
//	   keys are dropped; the steps run in the source's value decoder, not
//	   in an operator, because parse_timestamp may set the event time,
//	   which the source's streams.EventTime needs before any operator)
//	 ─ GroupByKey (repartition when group_by is set or several topics merge)
//	 ─ [WindowedBy tumbling/hopping | SessionWindowedBy]
//	 ─ Count | TryAggregate(initial, add[, merge]) (a failing add or merge
//	   dead-letters the record and leaves the aggregate as it was)
//	 ─ result object ─ To(to topic)
//
// Results: key = the group key (UTF-8 text; a JSON key when group_by is
// an object or list), value = an object in the to topic's format (JSON,
// or Avro when the topic declares a schema):
//
//	{"<key field>": "checkout", "window_start": ..., "window_end": ...,
//	 "count": 3}
//
// where the key field is named after group_by's last attribute
// (record.service → "service", else "key"), the window fields appear
// only for windowed streams (timestamps: RFC 3339 in JSON), and an
// aggregate's object fields take the place of "count" (a scalar
// aggregate is written as "value", or the block's field). Event time is
// the input records' timestamp, unless a parse_timestamp step of the
// stream sets the record time: then it is the time that step parsed
// (streams.EventTime), and a record it gave no time (its field missing
// or unparsable with on_error = "keep") goes to the dead-letter topic.

// Store names of the aggregation (internal topics are named after them).
const (
	countStore     = "count"
	aggregateStore = "aggregate"
)

// row is one decoded input record on its way to the grouping.
type row struct {
	fields *expr.Object
	key    []byte    // the group key (group_by), or nil
	time   time.Time // the record time the steps set (parse_timestamp), or zero
}

// statefulStream holds what the topology's functions share.
type statefulStream struct {
	s   *Stream
	ag  *aggSpec
	tr  *transformer
	ctx context.Context
	enc *codec.Encoder
	out atomic.Int64 // results written
}

// stateSerde keeps values in the tagged state encoding (codec.AppendState).
func stateSerde[T any]() streams.Serde[T] {
	return streams.SerdeFuncs[T]{
		Enc: func(v T) ([]byte, error) { return codec.AppendState(nil, v), nil },
		Dec: func(b []byte) (T, error) {
			var zero T
			v, err := codec.DecodeState(b)
			if err != nil {
				return zero, err
			}
			if v == nil {
				return zero, nil
			}
			t, ok := v.(T)
			if !ok {
				return zero, fmt.Errorf("%w: holds a %s", codec.ErrStateValue, expr.TypeName(v))
			}
			return t, nil
		},
	}
}

// decodeRow reads an input value, runs the transform steps and computes
// the group key. A nil row (no error) is dropped; an error sends the
// record to the dead-letter topic.
func (ss *statefulStream) decodeRow(v []byte) (*row, error) {
	if v == nil {
		return nil, nil // a tombstone: aggregations skip null values
	}
	fields, err := ss.tr.dec.Decode(ss.ctx, v, &expr.Object{})
	if err != nil {
		ss.tr.noteErr(err)
		return nil, err
	}
	ev := Event{Fields: fields}
	if ss.tr.in.Active() {
		ss.tr.in.Publish(func(s *observe.Sample) { fillEvent(s, &ev, Keep) })
	}
	out, err := applyChain(ss.s.Steps, &ev, ss.tr.steps)
	if err != nil {
		ss.tr.noteErr(err)
	}
	switch out {
	case Drop:
		return nil, nil
	case DeadLetter:
		if err == nil {
			err = fmt.Errorf("%w: dead-lettered by a transform", ErrStep)
		}
		return nil, err
	}
	r := &row{fields: ev.Fields, time: ev.Time}
	if ss.ag.groupBy != nil {
		k, err := keyBytes(ss.ag.groupBy, ev.Fields)
		if err != nil {
			err = fmt.Errorf("group_by: %w", err)
			ss.tr.noteErr(err)
			return nil, err
		}
		if k == nil {
			return nil, nil // a null group key: the record belongs to no group
		}
		r.key = k
	}
	return r, nil
}

// add folds one record into an aggregate. A failing expression
// (counted and logged as a transform error) sends the record to the
// dead-letter topic and leaves the aggregate as it was
// (streams.TryAggregate).
func (ss *statefulStream) add(k []byte, v *expr.Object, a any) (any, error) {
	scope := &expr.Object{Keys: []string{expr.RecordVar, aggVar, keyVar}, Vals: []any{v, a, string(k)}}
	n, err := ss.ag.add(scope)
	if err != nil {
		err = fmt.Errorf("aggregate add at %s: %w", ss.ag.addAt, err)
		ss.tr.noteErr(err)
		return a, err
	}
	return n, nil
}

// merge combines two sessions' aggregates; failing, like add, it
// dead-letters the record that bridged them and merges nothing.
func (ss *statefulStream) merge(k []byte, a, b any) (any, error) {
	scope := &expr.Object{Keys: []string{aggVar, otherVar, keyVar}, Vals: []any{a, b, string(k)}}
	n, err := ss.ag.mergeFn(scope)
	if err != nil {
		err = fmt.Errorf("aggregate merge at %s: %w", ss.ag.mergeAt, err)
		ss.tr.noteErr(err)
		return a, err
	}
	return n, nil
}

// result builds an output value.
func (ss *statefulStream) result(key []byte, start, end *time.Time, a any) *expr.Object {
	o := &expr.Object{Keys: make([]string, 0, 6), Vals: make([]any, 0, 6)}
	o.Set(ss.ag.keyField, string(key))
	if start != nil {
		o.Set("window_start", start.UTC())
		o.Set("window_end", end.UTC())
	}
	if ao, ok := a.(*expr.Object); ok && !ss.ag.count {
		for i, k := range ao.Keys {
			o.Set(k, ao.Vals[i])
		}
		return o
	}
	o.Set(ss.ag.field, a)
	return o
}

func (ss *statefulStream) outSerde() streams.Serde[*expr.Object] {
	return streams.SerdeFuncs[*expr.Object]{Enc: func(o *expr.Object) ([]byte, error) {
		if o == nil {
			return nil, nil
		}
		b, err := ss.enc.Encode(nil, o)
		if err != nil {
			return nil, fmt.Errorf("stream %q: result for topic %s: %w", ss.s.Name, ss.s.To, err)
		}
		if ss.tr.out.Active() {
			ss.tr.out.Publish(func(s *observe.Sample) {
				s.Topic, s.Value = ss.s.To, json.RawMessage(codec.AppendJSON(nil, o))
			})
		}
		ss.out.Add(1)
		return b, nil
	}, Dec: func([]byte) (*expr.Object, error) {
		return nil, fmt.Errorf("%w: results are write-only", streams.ErrDecode)
	}}
}

func keySerde() streams.Serde[streams.Windowed[[]byte]] {
	return streams.SerdeFuncs[streams.Windowed[[]byte]]{
		Enc: func(w streams.Windowed[[]byte]) ([]byte, error) { return w.Key, nil },
		Dec: func(b []byte) (streams.Windowed[[]byte], error) { return streams.Windowed[[]byte]{Key: b}, nil },
	}
}

// rowTime is the event time of a stream whose steps set the record time.
// A dropped row (filtered, a null group key) is given the epoch, so that
// its Kafka timestamp does not move stream time (it reaches no window).
func rowTime(_ []byte, r *row, _ time.Time) (time.Time, error) {
	switch {
	case r == nil:
		return time.UnixMilli(0), nil
	case r.time.IsZero():
		return time.Time{}, errNoEventTime
	}
	return r.time, nil
}

var errNoEventTime = errors.New("parse_timestamp set no record time (its field is missing or did not parse)")

// topology builds the stream's streams topology.
func (ss *statefulStream) topology() (*streams.Topology, error) {
	s, ag := ss.s, ss.ag
	b := streams.NewBuilder()
	in := streams.SerdeFuncs[*row]{
		Dec: ss.decodeRow,
		Enc: func(*row) ([]byte, error) { return nil, fmt.Errorf("%w: input rows are read-only", streams.ErrEncode) },
	}
	var opts []streams.SourceOption[[]byte, *row]
	if s.Steps.setsTime() {
		opts = append(opts, streams.EventTime(rowTime))
	}
	var ins []streams.Stream[[]byte, *row]
	for _, t := range s.From {
		ins = append(ins, streams.From(b, t, streams.Bytes(), streams.Serde[*row](in), opts...))
	}
	st := ins[0]
	if len(ins) > 1 {
		st = st.Merge(ins[1:]...)
	}
	st = st.Filter(func(_ []byte, r *row) bool { return r != nil })
	objs := stateSerde[*expr.Object]()
	var g streams.Grouped[[]byte, *expr.Object]
	if ag.groupBy != nil {
		g = streams.GroupByKey(streams.Map(st, func(_ []byte, r *row) ([]byte, *expr.Object) { return r.key, r.fields }),
			streams.Bytes(), objs)
	} else {
		g = streams.GroupByKey(streams.MapValues(st, func(_ []byte, r *row) *expr.Object { return r.fields }),
			streams.Bytes(), objs)
	}
	aggs := stateSerde[any]()
	init := func() any { return ag.initial }
	out := ss.outSerde()
	toWindowed := func(w streams.Stream[streams.Windowed[[]byte], any]) {
		streams.MapValues(w, func(k streams.Windowed[[]byte], a any) *expr.Object {
			return ss.result(k.Key, &k.Start, &k.End, a)
		}).To(s.To, keySerde(), out)
	}
	countAny := func(n int64) any { return n }
	switch w := ag.window; {
	case w == nil && ag.count:
		t := streams.Count(g, countStore).ToStream()
		streams.MapValues(t, func(k []byte, n int64) *expr.Object { return ss.result(k, nil, nil, countAny(n)) }).
			To(s.To, streams.Bytes(), out)
	case w == nil:
		t := streams.TryAggregate(g, aggregateStore, init, ss.add, aggs).ToStream()
		streams.MapValues(t, func(k []byte, a any) *expr.Object { return ss.result(k, nil, nil, a) }).
			To(s.To, streams.Bytes(), out)
	case w.kind == "session":
		sg := streams.SessionWindowedBy(g, streams.SessionWindows{Gap: w.gap, Grace: w.grace, EmitFinal: w.emitFinal})
		if ag.count {
			toWindowed(streams.MapValues(streams.CountSessions(sg, countStore),
				func(_ streams.Windowed[[]byte], n int64) any { return countAny(n) }))
		} else {
			toWindowed(streams.TryAggregateSessions(sg, aggregateStore, init, ss.add, ss.merge, aggs))
		}
	default:
		tw := streams.TimeWindows{Size: w.size, Advance: w.advance, Grace: w.grace, EmitFinal: w.emitFinal}
		wg := streams.WindowedBy(g, tw)
		if ag.count {
			toWindowed(streams.MapValues(streams.CountWindowed(wg, countStore),
				func(_ streams.Windowed[[]byte], n int64) any { return countAny(n) }))
		} else {
			toWindowed(streams.TryAggregateWindowed(wg, aggregateStore, init, ss.add, aggs))
		}
	}
	return b.Build()
}

// runStatefulStream runs an aggregating stream block until ctx ends.
func (r *Runner) runStatefulStream(ctx context.Context, t *task, s *Stream) error {
	tr := r.transformer(s.ID(), s.Steps, s.To)
	tr.in, tr.out = r.hub.Point(s.ID(), 0, observe.In), r.hub.Point(s.ID(), 0, observe.Out)
	enc := tr.encs[s.To]
	if enc == nil {
		enc = codec.JSON
	}
	ss := &statefulStream{s: s, ag: s.agg, tr: tr, ctx: ctx, enc: enc}
	tp, err := ss.topology()
	if err != nil {
		return fmt.Errorf("stream %q: %w", s.Name, err)
	}
	reg := &trackingRegisterer{inner: prometheus.WrapRegistererWith(prometheus.Labels{"stream": s.Name}, r.streamsReg)}
	defer reg.unregisterAll()
	app, err := streams.New(tp, streams.Config{
		ApplicationID:   s.Group,
		Client:          r.streamsClient(),
		StateDir:        r.stateDir(),
		CommitInterval:  r.opts.StreamsCommitInterval,
		DeadLetterTopic: deadletter.Topic(s.Name),
		Balancer:        s.Balancer,
		InstanceID:      r.staticMember(s.Group, s.Component, ""),
		ExactlyOnce:     s.ExactlyOnce,
		Logger:          r.log.Named("streams").With(zap.String("component", s.ID())),
		Registerer:      reg,
	})
	if err != nil {
		return fmt.Errorf("stream %q: %w", s.Name, err)
	}
	t.mu.Lock()
	t.tr, t.app, t.out, t.from = tr, app, &ss.out, s.From
	t.mu.Unlock()
	return app.Run(ctx)
}

// stateDir is where aggregating streams keep their local stores.
func (r *Runner) stateDir() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.StateDir != "" {
		return r.opts.StateDir
	}
	return r.defStateDir
}

// defaultStateDir is the state directory of a configuration's streams
// when RunOptions.StateDir is unset: "streams" in the broker's data
// directory (the broker's log manager reads only <topic>-<partition>
// folders there).
func defaultStateDir(cfg *Config) string {
	if cfg.Broker == nil {
		return filepath.Join(DefaultDataDir, "streams")
	}
	return filepath.Join(cfg.Broker.DataDir, "streams")
}

// trackingRegisterer remembers what a streams app registers, so the
// metrics go away with the app (a restarted stream registers again).
type trackingRegisterer struct {
	inner prometheus.Registerer
	mu    sync.Mutex
	cs    []prometheus.Collector
}

func (t *trackingRegisterer) Register(c prometheus.Collector) error {
	if err := t.inner.Register(c); err != nil {
		return err
	}
	t.mu.Lock()
	t.cs = append(t.cs, c)
	t.mu.Unlock()
	return nil
}

func (t *trackingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := t.Register(c); err != nil {
			panic(err)
		}
	}
}

func (t *trackingRegisterer) Unregister(c prometheus.Collector) bool { return t.inner.Unregister(c) }

func (t *trackingRegisterer) unregisterAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.cs {
		t.inner.Unregister(c)
	}
	t.cs = nil
}
