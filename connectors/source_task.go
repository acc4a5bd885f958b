package connectors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/ingest/partition"
)

// SourceOptions tune one source task. Zero values take the defaults.
type SourceOptions struct {
	// Topic is the destination of records that name none. Required.
	Topic string
	// DeadLetterTopic receives records the broker refuses for good
	// (default DeadLetterTopic(name)).
	DeadLetterTopic string
	// CommitInterval is how often acknowledged positions are stored
	// (default 1s).
	CommitInterval time.Duration
	// MaxBufferedBytes bounds the producer buffer; when full the task
	// stops polling the source (default 64 MiB).
	MaxBufferedBytes int64
	// Linger is the producer's linger (default 5ms).
	Linger time.Duration
	// Compression is the batch codec (default none).
	Compression *kgo.CompressionCodec
	// StopTimeout bounds the final flush and commit (default 30s).
	StopTimeout time.Duration
	// Backoff paces retries of retriable Poll errors (default DefaultBackoff).
	Backoff *Backoff
}

// pending is one produced record and its source position. rec is the
// first field so the produce promise finds its pending from the
// *kgo.Record without a closure per record.
type pending struct {
	rec    kgo.Record
	sp     *spState
	seq    uint64
	pos    []byte
	acked  bool
	offset int64 // destination offset once acked (-1: dead-lettered)
}

type spState struct {
	name      string
	nextSeq   uint64
	q         []*pending
	covered   storedPos // newest position with everything before it acked
	storedSeq uint64    // seq of the last position written to the offsets topic
}

type sourceTask struct {
	rt   *Runtime
	name string
	opts SourceOptions
	src  Source
	log  *zap.Logger
	m    *Metrics
	cl   *kgo.Client
	adm  *kadm.Client

	mu       sync.Mutex
	sps      map[string]*spState
	marks    scanMarks                  // destination partition → scan-from offset
	maxAcked map[string]map[int32]int64 // destination partition → last acked offset
	inflight int64
	fatal    error
	dlqWG    sync.WaitGroup
}

func (t *sourceTask) Name() string        { return t.name }
func (t *sourceTask) Logger() *zap.Logger { return t.log }
func (t *sourceTask) Metrics() *Metrics   { return t.m }

// RunSource runs src as the connector called name until ctx is done or
// the source fails, then flushes the producer, stores the acknowledged
// positions (the final commit) and closes src. It returns nil after a
// clean stop on ctx.
func (rt *Runtime) RunSource(ctx context.Context, name string, src Source, opts SourceOptions) error {
	if opts.Topic == "" {
		return fmt.Errorf("%w: source connector %q: no destination topic", ErrConfig, name)
	}
	if opts.DeadLetterTopic == "" {
		opts.DeadLetterTopic = DeadLetterTopic(name)
	}
	if opts.CommitInterval <= 0 {
		opts.CommitInterval = time.Second
	}
	if opts.MaxBufferedBytes <= 0 {
		opts.MaxBufferedBytes = 64 << 20
	}
	if opts.Linger <= 0 {
		opts.Linger = 5 * time.Millisecond
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	if opts.Backoff == nil {
		opts.Backoff = &DefaultBackoff
	}
	t := &sourceTask{rt: rt, name: name, opts: opts, src: src, log: rt.logger(name), m: rt.metrics(name),
		sps: map[string]*spState{}, marks: scanMarks{}, maxAcked: map[string]map[int32]int64{}}
	popts := append(rt.baseOpts(),
		partition.Option(),
		kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(opts.Linger),
		kgo.MaxBufferedBytes(int(opts.MaxBufferedBytes)),
		kgo.MaxBufferedRecords(1<<30),
		kgo.ProducerBatchMaxBytes(1<<20),
	)
	if opts.Compression != nil {
		popts = append(popts, kgo.ProducerBatchCompression(*opts.Compression))
	} else {
		popts = append(popts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	cl, err := kgo.NewClient(popts...)
	if err != nil {
		return fmt.Errorf("source connector %q: client: %w", name, err)
	}
	t.cl, t.adm = cl, kadm.NewClient(cl)
	defer cl.Close()
	if err := t.start(ctx); err != nil {
		t.m.Error("start")
		return fmt.Errorf("source connector %q: %w", name, err)
	}
	runErr := t.loop(ctx)
	stopCtx, cancel := context.WithTimeout(context.Background(), opts.StopTimeout)
	defer cancel()
	if err := cl.Flush(stopCtx); err != nil {
		t.log.Warn("final flush did not complete; unacknowledged records will be read again", zap.Error(err))
	}
	t.dlqWG.Wait()
	cerr := t.commit(stopCtx)
	if cerr != nil {
		t.m.Error("commit")
	}
	closeErr := src.Close()
	t.log.Info("source stopped", zap.Error(runErr))
	if runErr != nil {
		return fmt.Errorf("source connector %q: %w", name, runErr)
	}
	if err := errors.Join(cerr, closeErr); err != nil {
		return fmt.Errorf("source connector %q: stopping: %w", name, err)
	}
	return nil
}

func (t *sourceTask) start(ctx context.Context) error {
	otopic := t.rt.offsetsTopic()
	compact := "compact"
	if err := ensureTopic(ctx, t.adm, otopic, 1, map[string]*string{"cleanup.policy": &compact}); err != nil {
		return err
	}
	restored, err := restorePositions(ctx, t.rt.baseOpts(), t.adm, otopic, t.name)
	if err != nil {
		return err
	}
	positions := make(map[string][]byte, len(restored))
	for sp, p := range restored {
		t.sps[sp] = &spState{name: sp, nextSeq: p.Seq + 1, covered: p, storedSeq: 0}
		positions[sp] = p.Pos
	}
	// Write the restored positions back (they may come from the scan) and
	// the scan marks of the destination topic, before producing anything.
	if err := t.addTopic(ctx, t.opts.Topic); err != nil {
		return err
	}
	t.log.Info("source starting", zap.Int("restored_positions", len(positions)))
	return t.src.Open(ctx, t, positions)
}

// addTopic makes sure topic exists, marks its partitions' current ends
// as scan starts and stores the marks.
func (t *sourceTask) addTopic(ctx context.Context, topic string) error {
	if err := ensureTopic(ctx, t.adm, topic, -1, nil); err != nil {
		return err
	}
	ends, err := t.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	t.mu.Lock()
	if t.marks[topic] == nil {
		t.marks[topic] = map[int32]int64{}
	}
	ends.Each(func(o kadm.ListedOffset) {
		if _, ok := t.marks[topic][o.Partition]; !ok && o.Err == nil {
			t.marks[topic][o.Partition] = o.Offset
		}
	})
	t.mu.Unlock()
	return t.commit(ctx)
}

func (t *sourceTask) loop(ctx context.Context) error {
	var buf []SourceRecord
	last := time.Now()
	for {
		t.mu.Lock()
		fatal := t.fatal
		t.mu.Unlock()
		if fatal != nil {
			return fatal
		}
		var err error
		err = Retry(ctx, *t.opts.Backoff, t.m, func(ctx context.Context) error {
			buf, err = t.src.Poll(ctx, buf[:0])
			if err != nil && ctx.Err() == nil {
				t.m.Error("poll")
				t.log.Warn("source poll failed", zap.Error(err))
			}
			return err
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if err := t.produce(ctx, buf); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		clear(buf) // drop references; the runtime owns the records now
		if time.Since(last) >= t.opts.CommitInterval {
			last = time.Now()
			if err := t.commit(ctx); err != nil && ctx.Err() == nil {
				t.m.Error("commit")
				t.log.Warn("storing source positions failed; will retry", zap.Error(err))
			}
		}
	}
}

func (t *sourceTask) produce(ctx context.Context, rs []SourceRecord) error {
	if len(rs) == 0 {
		return nil
	}
	chunk := make([]pending, len(rs))
	var hdrBuf []byte
	for i := range rs {
		sr := &rs[i]
		topic := sr.Topic
		if topic == "" {
			topic = t.opts.Topic
		} else {
			t.mu.Lock()
			_, known := t.marks[topic]
			t.mu.Unlock()
			if !known {
				if err := t.addTopic(ctx, topic); err != nil {
					return err
				}
			}
		}
		p := &chunk[i]
		p.offset = -2
		p.pos = sr.Position
		var hs []kgo.RecordHeader
		if sr.SourcePartition != "" {
			t.mu.Lock()
			sp := t.sps[sr.SourcePartition]
			if sp == nil {
				sp = &spState{name: sr.SourcePartition, nextSeq: 1}
				t.sps[sr.SourcePartition] = sp
			}
			p.sp, p.seq = sp, sp.nextSeq
			sp.nextSeq++
			sp.q = append(sp.q, p)
			t.mu.Unlock()
			start := len(hdrBuf)
			hdrBuf = appendSourceHeader(hdrBuf, t.name, sr.SourcePartition, p.seq, sr.Position)
			hs = append(sr.Headers[:len(sr.Headers):len(sr.Headers)],
				kgo.RecordHeader{Key: SourceHeader, Value: hdrBuf[start:len(hdrBuf):len(hdrBuf)]})
		} else {
			hs = sr.Headers
		}
		p.rec = kgo.Record{Topic: topic, Key: sr.Key, Value: sr.Value, Headers: hs, Timestamp: sr.Timestamp}
		n := len(sr.Key) + len(sr.Value)
		t.m.RecordsIn.Inc()
		t.m.BytesIn.Add(float64(n))
		t.mu.Lock()
		t.inflight++
		t.mu.Unlock()
		if t.cl.BufferedProduceBytes() >= t.opts.MaxBufferedBytes {
			t.m.Paused.Set(1)
			t.cl.Produce(ctx, &p.rec, t.promise)
			t.m.Paused.Set(0)
		} else {
			t.cl.Produce(ctx, &p.rec, t.promise)
		}
	}
	t.mu.Lock()
	t.m.Lag.Set(float64(t.inflight))
	t.mu.Unlock()
	return nil
}

func (t *sourceTask) promise(r *kgo.Record, err error) {
	p := (*pending)(unsafe.Pointer(r))
	if err != nil {
		t.failed(p, err)
		return
	}
	t.m.RecordsOut.Inc()
	t.m.BytesOut.Add(float64(len(r.Key) + len(r.Value)))
	t.acked(p, r.Offset)
}

func (t *sourceTask) acked(p *pending, offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p.acked, p.offset = true, offset
	t.inflight--
	if offset >= 0 {
		m := t.maxAcked[p.rec.Topic]
		if m == nil {
			m = map[int32]int64{}
			t.maxAcked[p.rec.Topic] = m
		}
		if offset > m[p.rec.Partition] || m[p.rec.Partition] == 0 {
			m[p.rec.Partition] = offset
		}
		if _, ok := t.marks[p.rec.Topic][p.rec.Partition]; !ok && t.marks[p.rec.Topic] != nil {
			// A partition added while running: the next commit marks it.
			t.marks[p.rec.Topic][p.rec.Partition] = offset
		}
	}
	sp := p.sp
	if sp == nil {
		return
	}
	i := 0
	for ; i < len(sp.q) && sp.q[i].acked; i++ {
		sp.covered = storedPos{Seq: sp.q[i].seq, Pos: sp.q[i].pos}
	}
	if i > 0 {
		clear(sp.q[:i])
		sp.q = sp.q[i:]
	}
}

// failed handles a record the producer gave up on: a context end leaves
// it unacknowledged (read again after restart); a refusal by the broker
// sends it to the dead-letter topic, and only that write acknowledges it.
func (t *sourceTask) failed(p *pending, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
		return
	}
	t.m.Error("produce")
	r := &p.rec
	t.log.Warn("broker refused a record; sending it to the dead-letter topic",
		zap.String("topic", r.Topic), zap.String("dead_letter_topic", t.opts.DeadLetterTopic),
		zap.String("source_partition", spName(p)), zap.Error(err))
	extra := []kgo.RecordHeader{{Key: HeaderErrTopic, Value: []byte(r.Topic)}}
	if p.sp != nil {
		extra = append(extra, kgo.RecordHeader{Key: HeaderErrSourcePartition, Value: []byte(p.sp.name)},
			kgo.RecordHeader{Key: HeaderErrSourcePosition, Value: p.pos})
	}
	value := r.Value
	if len(value) > 512<<10 {
		value = value[:512<<10]
		extra = append(extra, kgo.RecordHeader{Key: "__weir.errors.truncated", Value: []byte("true")})
	}
	dl := deadLetter(t.opts.DeadLetterTopic, t.name, r.Key, value, r.Headers, r.Timestamp, err, extra...)
	t.dlqWG.Add(1)
	t.cl.Produce(context.Background(), dl, func(_ *kgo.Record, derr error) {
		defer t.dlqWG.Done()
		if derr != nil {
			t.m.Error("dead_letter")
			t.mu.Lock()
			if t.fatal == nil {
				t.fatal = fmt.Errorf("record for %s refused (%v) and dead-letter topic %s failed too: %w", r.Topic, err, t.opts.DeadLetterTopic, derr)
			}
			t.mu.Unlock()
			return
		}
		t.m.DeadLetters.Inc()
		t.acked(p, -1)
	})
}

func spName(p *pending) string {
	if p.sp == nil {
		return ""
	}
	return p.sp.name
}

// commit stores the positions covered since the last commit and the
// scan marks, then tells a Committer source.
func (t *sourceTask) commit(ctx context.Context) error {
	t.mu.Lock()
	var recs []*kgo.Record
	type done struct {
		sp  *spState
		seq uint64
	}
	var stored []done
	committed := map[string][]byte{}
	for _, sp := range t.sps {
		if sp.covered.Seq > sp.storedSeq || (sp.storedSeq == 0 && sp.covered.Seq > 0) {
			v, _ := jsonMarshal(sp.covered)
			recs = append(recs, &kgo.Record{Topic: t.rt.offsetsTopic(), Key: positionKey(t.name, sp.name), Value: v})
			stored = append(stored, done{sp, sp.covered.Seq})
			committed[sp.name] = sp.covered.Pos
		}
	}
	// Scan marks: the lowest offset that may hold a record not covered.
	for topic, ps := range t.marks {
		for p := range ps {
			if a, ok := t.maxAcked[topic][p]; ok && a+1 > ps[p] {
				ps[p] = a + 1
			}
		}
	}
	for _, sp := range t.sps {
		for _, q := range sp.q {
			if q.acked && q.offset >= 0 {
				if m, ok := t.marks[q.rec.Topic][q.rec.Partition]; ok && q.offset < m {
					t.marks[q.rec.Topic][q.rec.Partition] = q.offset
				}
			}
		}
	}
	recs = append(recs, &kgo.Record{Topic: t.rt.offsetsTopic(), Key: scanKey(t.name), Value: encodeScan(t.marks)})
	t.mu.Unlock()
	for _, r := range recs {
		partition.Set(r, 0)
	}
	if err := t.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("storing positions in %s: %w", t.rt.offsetsTopic(), err)
	}
	t.mu.Lock()
	for _, d := range stored {
		if d.seq > d.sp.storedSeq {
			d.sp.storedSeq = d.seq
		}
	}
	t.mu.Unlock()
	t.m.Commits.Inc()
	if c, ok := t.src.(Committer); ok && len(committed) > 0 {
		c.Committed(committed)
	}
	return nil
}
