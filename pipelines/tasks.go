package pipelines

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
)

// transformer applies a chain to record values: decode, steps, encode
// for the destination topic.
type transformer struct {
	chain    *Chain
	dec      *decoder
	encs     map[string]*topicEncoder // by topic name; missing: JSON
	defTopic string
	log      *zap.Logger
	errors   atomic.Int64
	lastLog  atomic.Int64 // unix nanos of the last logged step error
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

func (t *transformer) apply(ctx context.Context, key, value []byte, ts time.Time) result {
	fields, err := t.dec.decode(ctx, value)
	if err != nil {
		t.noteErr(err)
		return result{outcome: DeadLetter, err: err}
	}
	ev := Event{Fields: fields, Key: key, Time: ts}
	out, err := t.chain.Apply(&ev)
	if err != nil {
		t.noteErr(err)
	}
	if out != Keep {
		return result{outcome: out, err: err}
	}
	topic := ev.Topic
	if topic == "" {
		topic = t.defTopic
	}
	v, eerr := t.encs[topic].encode(make([]byte, 0, len(value)+64), ev.Fields)
	if eerr != nil {
		eerr = fmt.Errorf("encoding for topic %s: %w", topic, eerr)
		t.noteErr(eerr)
		return result{outcome: DeadLetter, err: eerr}
	}
	return result{outcome: Keep, topic: topic, key: ev.Key, value: v, ts: ev.Time, err: err}
}

// parallelMin is the batch size from which applyAll spreads the work
// over the processors.
const parallelMin = 256

// applyAll transforms n records (rec(i) gives record i) into dst,
// splitting large batches over GOMAXPROCS goroutines: the chain, the
// decoder and the encoders are safe for concurrent use, and results keep
// their order.
func (t *transformer) applyAll(ctx context.Context, dst []result, n int, rec func(int) ([]byte, []byte, time.Time)) []result {
	if cap(dst) < n {
		dst = make([]result, n)
	}
	dst = dst[:n]
	workers := runtime.GOMAXPROCS(0)
	if n < parallelMin || workers < 2 {
		for i := 0; i < n; i++ {
			k, v, ts := rec(i)
			dst[i] = t.apply(ctx, k, v, ts)
		}
		return dst
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				k, v, ts := rec(i)
				dst[i] = t.apply(ctx, k, v, ts)
			}
		}(lo, hi)
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
const errHeader = connectors.HeaderErrMessage

// transformSource wraps a connector's Source: every polled record goes
// through the transformer before the runtime produces it. Dropped
// records are not produced (their source position is stored with the
// next record kept); failed ones go to the dead-letter topic with their
// position, so a restart neither repeats nor loses them.
type transformSource struct {
	inner connectors.Source
	t     *transformer
	dlq   string
	tmp   []connectors.SourceRecord
	res   []result
}

func (s *transformSource) Open(ctx context.Context, sc connectors.SourceContext, restored map[string][]byte) error {
	return s.inner.Open(ctx, sc, restored)
}

func (s *transformSource) Poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	in, err := s.inner.Poll(ctx, s.tmp[:0])
	s.tmp = in
	s.res = s.t.applyAll(ctx, s.res[:0], len(in), func(i int) ([]byte, []byte, time.Time) {
		return in[i].Key, in[i].Value, in[i].Timestamp
	})
	for i := range in {
		r := in[i]
		res := s.res[i]
		switch res.outcome {
		case Drop:
			continue
		case DeadLetter:
			msg := "dead-lettered by a transform"
			if res.err != nil {
				msg = res.err.Error()
			}
			r.Topic = s.dlq
			r.Headers = append(r.Headers[:len(r.Headers):len(r.Headers)], kgo.RecordHeader{Key: errHeader, Value: []byte(msg)})
		default:
			r.Topic, r.Key, r.Value = res.topic, res.key, res.value
			if !res.ts.IsZero() {
				r.Timestamp = res.ts
			}
		}
		buf = append(buf, r)
	}
	clear(in)
	clear(s.res)
	return buf, err
}

func (s *transformSource) Close() error { return s.inner.Close() }

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
	t       *transformer
	brokers []string
	opts    []kgo.Opt
	cl      *kgo.Client
	sc      connectors.SinkContext
	res     []result

	mu     sync.Mutex
	failed []*kgo.Record
	err    error
}

func (s *streamSink) Open(_ context.Context, sc connectors.SinkContext) error {
	s.sc = sc
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.brokers...), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5 * time.Millisecond)}, s.opts...)...)
	if err != nil {
		return err
	}
	s.cl = cl
	return nil
}

func (s *streamSink) promise(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	s.failed = append(s.failed, r)
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

func (s *streamSink) Write(ctx context.Context, rs []*kgo.Record) error {
	s.res = s.t.applyAll(ctx, s.res[:0], len(rs), func(i int) ([]byte, []byte, time.Time) {
		return rs[i].Key, rs[i].Value, rs[i].Timestamp
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
		s.cl.Produce(ctx, &kgo.Record{Topic: res.topic, Key: res.key, Value: res.value, Headers: hs, Timestamp: ts}, s.promise)
	}
	return nil
}

func (s *streamSink) Flush(ctx context.Context) error {
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
