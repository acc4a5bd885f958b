package pipelines

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/pipelines/codec"
	"weir/pipelines/expr"
	"weir/pipelines/observe"
)

// transformer applies a chain to record values: decode, steps, encode
// for the destination topic.
type transformer struct {
	chain    *Chain
	keyFn    expr.Fn // select_key (nil: keep the key)
	dec      *codec.Decoder
	encs     map[string]*codec.Encoder // by topic name; missing: JSON
	defTopic string
	log      *zap.Logger
	errors   atomic.Int64
	lastLog  atomic.Int64 // unix nanos of the last logged step error
	// Taps (observed.go): steps of the chain, a source's events before
	// the steps (in), a stateless stream's results (out, filled by fill).
	steps *stepTap
	in    *observe.Point
	out   *observe.Point
	fill  func(s *observe.Sample, topic string, key, value []byte, ts time.Time)
}

// result is what became of one record.
type result struct {
	outcome Outcome
	topic   string
	key     []byte
	value   []byte
	ts      time.Time
	err     error
}

// input is one record handed to the transformer.
type input struct {
	key, value []byte
	ts         time.Time
	// fields is a raw source's event (connectors.RawSource); value is
	// then its payload and is not decoded.
	fields []connectors.RawField
}

// scratch is one worker's reusable memory: the event object (which
// does not outlive apply: results are encoded) and a slab the encoded
// values are cut from (never reused: the producer owns them).
type scratch struct {
	obj expr.Object
	ev  Event
	out []byte
}

var scratches = sync.Pool{New: func() any {
	return &scratch{obj: expr.Object{Keys: make([]string, 0, 16), Vals: make([]any, 0, 16)}}
}}

// reset empties the event object for the next record.
func (sc *scratch) reset() *expr.Object {
	sc.ev = Event{}
	o := &sc.obj
	clear(o.Keys)
	clear(o.Vals)
	o.Keys, o.Vals = o.Keys[:0], o.Vals[:0]
	return o
}

// slab returns an empty slice with room for about n bytes, cut from the
// slab (see keep).
func (sc *scratch) slab(n int) []byte {
	if cap(sc.out)-len(sc.out) < n {
		sc.out = make([]byte, 0, max(n, 128<<10))
	}
	return sc.out[len(sc.out):len(sc.out)]
}

// keep marks v (appended to a slice from slab) as used and returns it
// with its capacity cut, so later values cannot overwrite it.
func (sc *scratch) keep(v []byte) []byte {
	free := sc.out[len(sc.out):cap(sc.out)]
	if len(v) > 0 && len(free) >= len(v) && unsafe.SliceData(v) == unsafe.SliceData(free) {
		sc.out = sc.out[:len(sc.out)+len(v)]
	}
	return v[:len(v):len(v)]
}

// rawObject builds the event of a raw source's record into o: byte
// values that are valid UTF-8 become strings sharing their memory (a
// record's bytes are never modified after Poll), string maps objects
// with sorted keys, as the source's JSON encoding would write them.
func rawObject(o *expr.Object, fs []connectors.RawField) *expr.Object {
	for _, f := range fs {
		v := f.Value
		switch x := v.(type) {
		case []byte:
			if utf8.Valid(x) {
				v = codec.View(x)
			}
		case map[string]string:
			m := &expr.Object{Keys: make([]string, 0, len(x)), Vals: make([]any, 0, len(x))}
			for k := range x {
				m.Keys = append(m.Keys, k)
			}
			sort.Strings(m.Keys)
			for _, k := range m.Keys {
				m.Vals = append(m.Vals, x[k])
			}
			v = m
		case nil, bool, string, int64:
		default:
			v = codec.FromNative(v)
		}
		o.Keys = append(o.Keys, f.Name)
		o.Vals = append(o.Vals, v)
	}
	return o
}

func (t *transformer) apply(ctx context.Context, in *input, sc *scratch) result {
	var fields *expr.Object
	if in.fields != nil {
		fields = rawObject(sc.reset(), in.fields)
	} else {
		var err error
		if fields, err = t.dec.Decode(ctx, in.value, sc.reset()); err != nil {
			t.noteErr(err)
			return result{outcome: DeadLetter, err: err}
		}
	}
	ev := &sc.ev
	*ev = Event{Fields: fields, Key: in.key, Time: in.ts}
	if t.in.Active() {
		t.in.Publish(func(s *observe.Sample) { fillEvent(s, ev, Keep) })
	}
	out, err := applyChain(t.chain, ev, t.steps)
	if err != nil {
		t.noteErr(err)
	}
	if out != Keep {
		return result{outcome: out, err: err}
	}
	if t.keyFn != nil {
		k, kerr := keyBytes(t.keyFn, ev.Fields)
		if kerr != nil {
			kerr = fmt.Errorf("select_key: %w", kerr)
			t.noteErr(kerr)
			return result{outcome: DeadLetter, err: kerr}
		}
		ev.Key = k
	}
	topic := ev.Topic
	if topic == "" {
		topic = t.defTopic
	}
	v, eerr := t.encs[topic].Encode(sc.slab(len(in.value)+256), ev.Fields)
	if eerr != nil {
		eerr = fmt.Errorf("encoding for topic %s: %w", topic, eerr)
		t.noteErr(eerr)
		return result{outcome: DeadLetter, err: eerr}
	}
	return result{outcome: Keep, topic: topic, key: ev.Key, value: sc.keep(v), ts: ev.Time, err: err}
}

// parallelMin is the batch size from which applyAll spreads the work
// over the processors.
const parallelMin = 256

// applyAll transforms n records (rec(i, in) fills in with record i) into
// dst, splitting large batches over GOMAXPROCS goroutines: the chain,
// the decoder and the encoders are safe for concurrent use, and results
// keep their order.
func (t *transformer) applyAll(ctx context.Context, dst []result, n int, rec func(int, *input)) []result {
	if cap(dst) < n {
		dst = make([]result, n)
	}
	dst = dst[:n]
	workers := runtime.GOMAXPROCS(0)
	run := func(lo, hi int) {
		sc := scratches.Get().(*scratch)
		var in input
		for i := lo; i < hi; i++ {
			rec(i, &in)
			dst[i] = t.apply(ctx, &in, sc)
		}
		sc.reset()
		scratches.Put(sc)
	}
	if n < parallelMin || workers < 2 {
		run(0, n)
		return dst
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(lo, hi)
		}()
	}
	wg.Wait()
	return dst
}

// noteErr counts a record error and logs at most one per second.
func (t *transformer) noteErr(err error) {
	t.errors.Add(1)
	now := time.Now().UnixNano()
	if last := t.lastLog.Load(); now-last > int64(time.Second) && t.lastLog.CompareAndSwap(last, now) {
		t.log.Warn("transform error (logged at most once a second; see weir_pipeline_transform_errors_total)", zap.Error(err))
	}
}

// errHeader carries a step's error on records sent to a dead-letter topic.
const errHeader = deadletter.HeaderMessage

// transformSource wraps a connector's Source: every polled record goes
// through the transformer before the runtime produces it. Dropped
// records are not produced (their source position is stored with the
// next record kept); failed ones go to the dead-letter topic with their
// position, so a restart neither repeats nor loses them.
//
// Reading and transforming overlap with producing: while the runtime
// produces the batch one Poll returned, a goroutine already polls the
// inner source and transforms the next batch (at most one batch ahead,
// so backpressure still reaches the inner source). A batch prefetched
// when the task stops was never produced, so its positions were never
// stored and a restart reads it again.
type transformSource struct {
	inner connectors.Source
	t     *transformer
	dlq   string

	m       *connectors.Metrics // the source's: records dead-lettered by a step count there
	ctx     context.Context     // the fetch goroutine's; cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	next    chan polled // capacity 1: the fetch goroutine never blocks
	pending bool        // a fetch runs or its batch waits in next

	// used only by the fetch goroutine (one at a time)
	tmp []connectors.SourceRecord
	res []result
	out []connectors.SourceRecord
}

// polled is one transformed batch and the inner Poll's error.
type polled struct {
	recs []connectors.SourceRecord
	err  error
}

func (s *transformSource) Open(ctx context.Context, sc connectors.SourceContext, restored map[string][]byte) error {
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.next = make(chan polled, 1)
	if sc != nil { // tests and weir test open it without a runtime
		s.m = sc.Metrics()
	}
	return s.inner.Open(ctx, sc, restored)
}

func (s *transformSource) Poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	if !s.pending {
		s.startFetch()
	}
	var p polled
	select {
	case p = <-s.next:
	case <-ctx.Done():
		return buf, nil // the batch stays for the next Poll, if any
	}
	s.pending = false
	buf = append(buf, p.recs...)
	clear(p.recs)
	s.out = p.recs[:0]
	if p.err == nil {
		s.startFetch() // overlap the next batch with producing this one
	}
	return buf, p.err
}

func (s *transformSource) startFetch() {
	s.pending = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		recs, err := s.fetch(s.ctx, s.out[:0])
		s.next <- polled{recs: recs, err: err}
	}()
}

// fetch polls the inner source once and appends the transformed records
// to buf.
func (s *transformSource) fetch(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	in, err := s.inner.Poll(ctx, s.tmp[:0])
	s.tmp = in
	s.res = s.t.applyAll(ctx, s.res[:0], len(in), func(i int, r *input) {
		*r = input{key: in[i].Key, value: in[i].Value, ts: in[i].Timestamp, fields: in[i].Fields}
	})
	for i := range in {
		r := in[i]
		res := s.res[i]
		switch res.outcome {
		case Drop:
			in[i].Drop() // a push source learns the record's fate
			continue
		case DeadLetter:
			msg := "dead-lettered by a transform"
			if res.err != nil {
				msg = res.err.Error()
			}
			r.Topic = s.dlq
			if s.m != nil {
				s.m.DeadLetters.Inc()
			}
			r.Headers = append(r.Headers[:len(r.Headers):len(r.Headers)], kgo.RecordHeader{Key: errHeader, Value: []byte(msg)})
		default:
			r.Topic, r.Key, r.Value = res.topic, res.key, res.value
			if !res.ts.IsZero() {
				r.Timestamp = res.ts
			}
		}
		r.Fields = nil
		buf = append(buf, r)
	}
	clear(in)
	clear(s.res)
	return buf, err
}

// Close stops a running fetch (its batch was never produced) and closes
// the inner source.
func (s *transformSource) Close() error {
	if s.cancel != nil {
		s.cancel()
		s.wg.Wait()
	}
	return s.inner.Close()
}

// Unwrap returns the inner source, so the runtime finds its
// capabilities (connectors.Unwrapper).
func (s *transformSource) Unwrap() connectors.Source { return s.inner }

// Committed forwards to the inner source when it wants to know.
func (s *transformSource) Committed(p map[string][]byte) {
	if c, ok := s.inner.(connectors.Committer); ok {
		c.Committed(p)
	}
}

// streamSink is a stream block run as a sink task: records of the From
// topics are transformed and produced to To (or a route's topic); Flush
// waits for the broker's acknowledgements, so the consumer offsets are
// committed only for records whose results are stored (at-least-once;
// a clean stop or reload repeats nothing).
type streamSink struct {
	t      *transformer
	client kafkaclient.Options
	cl     *kgo.Client
	txn    connectors.Producer // under exactly_once, instead of cl
	sc     connectors.SinkContext
	res    []result

	mu     sync.Mutex
	failed []*kgo.Record
	err    error
	// out and outBytes count the results the broker acknowledged (the
	// stream's records out: Status).
	out, outBytes atomic.Int64
}

// UseProducer implements connectors.TransactionalSink (exactly_once):
// results go through the runtime's transactional client, and a failed
// one fails the flush, which aborts the transaction.
func (s *streamSink) UseProducer(p connectors.Producer) { s.txn = p }

func (s *streamSink) Open(_ context.Context, sc connectors.SinkContext) error {
	s.sc = sc
	if s.txn != nil {
		return nil
	}
	cl, err := kafkaclient.New(s.client, kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	s.cl = cl
	return nil
}

func (s *streamSink) promise(r *kgo.Record, err error) {
	var tm *connectors.TopicMetrics // the output edge's (nil in weir test)
	if m := s.sc.Metrics(); m != nil {
		tm = m.Topic(r.Topic)
	}
	if err == nil {
		s.out.Add(1)
		s.outBytes.Add(int64(len(r.Key) + len(r.Value)))
		if tm != nil {
			tm.RecordsOut.Inc()
		}
		return
	}
	if tm != nil {
		tm.Errors.Inc()
	}
	s.mu.Lock()
	s.failed = append(s.failed, r)
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *streamSink) Write(ctx context.Context, rs []*kgo.Record) error {
	s.res = s.t.applyAll(ctx, s.res[:0], len(rs), func(i int, r *input) {
		*r = input{key: rs[i].Key, value: rs[i].Value, ts: rs[i].Timestamp}
	})
	defer clear(s.res)
	for i, r := range rs {
		res := s.res[i]
		switch res.outcome {
		case Drop:
			continue
		case DeadLetter:
			err := res.err
			if err == nil {
				err = errors.New("dead-lettered by a transform")
			}
			s.sc.DeadLetter(r, fmt.Errorf("%w: %w", connectors.ErrBadRecord, err))
			continue
		}
		hs := make([]kgo.RecordHeader, 0, len(r.Headers))
		for _, h := range r.Headers {
			if h.Key != connectors.SourceHeader {
				hs = append(hs, h)
			}
		}
		ts := res.ts
		if ts.IsZero() {
			ts = r.Timestamp
		}
		out := &kgo.Record{Topic: res.topic, Key: res.key, Value: res.value, Headers: hs, Timestamp: ts}
		if s.t.out.Active() {
			s.t.out.Publish(func(smp *observe.Sample) { s.t.fill(smp, out.Topic, out.Key, out.Value, out.Timestamp) })
		}
		if s.txn != nil {
			s.txn.Produce(ctx, out, s.promise)
			continue
		}
		s.cl.Produce(ctx, out, s.promise)
	}
	return nil
}

func (s *streamSink) Flush(ctx context.Context) error {
	if s.txn != nil { // the runtime flushed its client
		s.mu.Lock()
		failed, err := s.failed, s.err
		s.failed, s.err = nil, nil
		s.mu.Unlock()
		if len(failed) > 0 {
			return fmt.Errorf("%w: %d stream results failed (%v); aborting the transaction", connectors.ErrRetriable, len(failed), err)
		}
		return nil
	}
	if err := s.cl.Flush(ctx); err != nil {
		return fmt.Errorf("%w: stream flush: %v", connectors.ErrRetriable, err)
	}
	s.mu.Lock()
	failed, err := s.failed, s.err
	s.failed, s.err = nil, nil
	s.mu.Unlock()
	if len(failed) == 0 {
		return nil
	}
	for _, r := range failed {
		s.cl.Produce(ctx, &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}, s.promise)
	}
	return fmt.Errorf("%w: %d stream results failed (%v); producing them again", connectors.ErrRetriable, len(failed), err)
}

func (s *streamSink) Close() error {
	if s.cl != nil {
		s.cl.Close()
	}
	return nil
}

// keyBytes evaluates a key expression (select_key, group_by) into record
// key bytes: strings as they are, numbers, bools and timestamps as text,
// objects and lists as JSON, null as no key (nil).
func keyBytes(fn expr.Fn, fields *expr.Object) ([]byte, error) {
	v, err := fn(fields)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	case []byte:
		return append([]byte(nil), x...), nil
	case *expr.Object, []any:
		return codec.AppendJSON(nil, x), nil
	}
	s, err := expr.ToString(v)
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}
