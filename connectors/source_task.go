package connectors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/partition"
)

// SourceOptions tune one source task. Zero values take the defaults.
type SourceOptions struct {
	// Topic is the destination of records that name none. Required.
	Topic string
	// DeadLetterTopic receives records the broker refuses for good
	// (default deadletter.Topic(name)).
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
	// ExactlyOnce writes the records of each commit interval and the
	// source positions they reach in one Kafka transaction (Kafka
	// Connect's exactly.once.support, KIP-618; source_txn.go): a task
	// killed mid-interval leaves an open transaction that its restart
	// fences and aborts, and it resumes from positions read with
	// read_committed, so read_committed consumers see each record once.
	ExactlyOnce bool
	// TransactionalID is the producer's transactional.id when ExactlyOnce
	// (default "weir-source-<name>"). It must be stable across restarts
	// and unique per task: a restarted task fences its zombie by it.
	TransactionalID string
	// Worker is set when the source runs on every worker of a group
	// (a PerWorker kind in a worker group): each worker's task stores its
	// positions, heads its records' source-position headers and names its
	// transactional id as the connector "<name>@<worker>", so the
	// workers' positions never mix. Empty: the connector is "<name>".
	Worker string
	// GroupWorker is the id of the worker of a worker group that runs
	// the task (singleton and per-worker sources alike): every record it
	// produces carries it in a WorkerHeader header, so which worker
	// wrote a record, and that a singleton never ran on two workers at
	// once, can be read from the topic. Empty: no such header.
	GroupWorker string
	// TransactionTimeout is the producer's transaction.timeout.ms when
	// ExactlyOnce (default 60s): the coordinator aborts a transaction
	// open longer (a hung task's).
	TransactionTimeout time.Duration
	// Observe, when set, sees every batch Poll returned before it is
	// produced (weir run's tap hub, pipelines/observe). It must not keep
	// or change the records, and should return at once when nobody
	// looks (one atomic check).
	Observe func([]SourceRecord)
	// RequirePositions (ExactlyOnce only; a worker group's singleton
	// sources) refuses to start from scratch a source that ran before:
	// when fencing finds its transactional id used (producer epoch > 0)
	// but the offsets topic holds no record of the connector (the topic
	// was deleted or emptied), the task fails with ErrPositionsLost
	// instead of reading its source from the beginning again (a mysql
	// source would snapshot every table again: every row twice). The
	// first start writes its scan record in a transaction before reading
	// anything, so only a topic that lost its records looks like this.
	// RecoverPositions and ResetPositions are the ways on.
	RequirePositions bool
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
	offset int64         // destination offset once acked (-1: dead-lettered)
	push   *pushBatch    // a pushed record's batch (see PushSource)
	alone  bool          // produced again alone after its batch was too large
	tm     *TopicMetrics // rec.Topic's counters (the graph edge's)
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
	// conn names the connector in the offsets topic and the records'
	// source-position headers: name, or name@worker (SourceOptions.Worker).
	conn string
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
	inflight atomic.Int64               // records produced and not acknowledged (or dead-lettered) yet
	fatal    error
	dlqWG    sync.WaitGroup // dead-letter writes and produceAlone calls

	// push is the push source inside src (nil for a poll source); pctx
	// is the context of pushed records, which outlives ctx until the
	// final flush or the stop deadline.
	push     *pushSource
	pctx     context.Context
	pcancel  context.CancelFunc
	lastDown atomic.Int64 // unix nanos of the last failed broker connect; 0 after a success
	leftover []SourceRecord
	flushing atomic.Bool // a flush asked for by a full push source runs

	popts   []kgo.Opt
	aloneMu sync.Mutex  // one produceAlone at a time
	alone   *kgo.Client // produceAlone's client, made on first use

	txn txnState // exactly-once mode (source_txn.go)

	workerHdr []byte // value of the WorkerHeader (SourceOptions.GroupWorker)

	otID [16]byte // the offsets topic's id at the last commit (zero: not known)
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
		opts.DeadLetterTopic = deadletter.Topic(name)
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
	conn := name
	if opts.Worker != "" {
		conn = name + "@" + opts.Worker
	}
	if opts.ExactlyOnce && opts.TransactionalID == "" {
		opts.TransactionalID = "weir-source-" + conn
	}
	if opts.TransactionTimeout <= 0 {
		opts.TransactionTimeout = 60 * time.Second
	}
	if opts.ExactlyOnce && opts.CommitInterval >= opts.TransactionTimeout {
		return fmt.Errorf("%w: source connector %q: the commit interval (%v) must be shorter than the transaction timeout (%v)",
			ErrConfig, name, opts.CommitInterval, opts.TransactionTimeout)
	}
	t := &sourceTask{rt: rt, name: name, conn: conn, opts: opts, src: src, log: rt.logger(name), m: rt.metrics(name),
		sps: map[string]*spState{}, marks: scanMarks{}, maxAcked: map[string]map[int32]int64{}}
	if opts.GroupWorker != "" {
		t.workerHdr = []byte(opts.GroupWorker)
	}
	t.pctx, t.pcancel = context.WithCancel(context.Background())
	defer t.pcancel()
	if ps := pushSourceOf(src); ps != nil {
		t.push, ps.task = ps, t
		if ps.o.Linger > 0 {
			opts.Linger = ps.o.Linger
		}
		t.opts.Linger = opts.Linger
	}
	popts := []kgo.Opt{
		kgo.WithHooks(connHooks{t}),
		kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(opts.Linger),
		kgo.MaxBufferedBytes(int(opts.MaxBufferedBytes)),
		kgo.MaxBufferedRecords(1 << 30),
		kgo.ProducerBatchMaxBytes(1 << 20),
	}
	if opts.Compression != nil {
		popts = append(popts, kgo.ProducerBatchCompression(*opts.Compression))
	} else {
		popts = append(popts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	t.popts = popts
	if opts.ExactlyOnce {
		t.txn.on = true
		popts = append(slices.Clip(popts), kgo.TransactionalID(opts.TransactionalID), kgo.TransactionTimeout(opts.TransactionTimeout))
	}
	cl, err := kafkaclient.New(rt.client(), popts...)
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
	stopPushed := context.AfterFunc(stopCtx, t.pcancel) // pushed records give up at the deadline
	defer stopPushed()
	if runErr == nil && t.push != nil {
		runErr = t.drain(stopCtx)
	}
	if err := cl.Flush(stopCtx); err != nil {
		t.log.Warn("final flush did not complete; unacknowledged records will be read again", zap.Error(err))
	}
	t.dlqWG.Wait()
	if t.alone != nil {
		t.alone.Close()
	}
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
	if t.txn.on {
		// Fence a zombie of this task and abort its open transaction
		// before reading positions (Kafka Connect's initTransactions).
		if err := t.fence(ctx); err != nil {
			return err
		}
	}
	restored, seen, err := restorePositions(ctx, t.rt.client(), t.adm, otopic, t.conn, t.txn.on)
	if err != nil {
		return err
	}
	if t.txn.on && t.opts.RequirePositions && !seen && t.txn.epoch > 0 {
		return fmt.Errorf("%w: %s holds no position of %q, yet the source ran before (its transactional id %q is at producer epoch %d): "+
			"the topic was deleted or emptied after its last commit. Not starting from scratch, which would write everything again "+
			"(a mysql source: every row twice). To resume where it stopped, rebuild the positions from the records it wrote: "+
			"`weir connector positions %s --recover-from TOPIC...` with its destination topics; to start from scratch anyway: "+
			"`weir connector positions %s --reset`",
			ErrPositionsLost, otopic, t.conn, t.opts.TransactionalID, t.txn.epoch, t.conn, t.conn)
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
	t.log.Debug("source starting", zap.Int("restored_positions", len(positions)), zap.Bool("exactly_once", t.txn.on))
	return t.src.Open(ctx, t, positions)
}

// addTopic makes sure topic exists, marks its partitions' current ends
// as scan starts and stores the marks.
func (t *sourceTask) addTopic(ctx context.Context, topic string) error {
	if err := ensureTopic(ctx, t.adm, topic, -1, nil); err != nil {
		return err
	}
	ends, err := kafkaclient.ListEnds(ctx, t.adm, false, topic)
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
			t.leftover = buf // a push source's are produced by drain
			return nil
		}
		if err != nil {
			settleAll(buf, err)
			return fmt.Errorf("poll: %w", err)
		}
		if t.opts.Observe != nil && len(buf) > 0 {
			t.opts.Observe(buf)
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
			// A stop asked for during a commit lets it finish (bounded by
			// StopTimeout, as the final commit): cancelled, an exactly-once
			// commit would abort its transaction and fail the task.
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), t.opts.StopTimeout)
			err := t.commit(cctx)
			ccancel()
			if err != nil && ctx.Err() == nil {
				t.m.Error("commit")
				t.log.Warn("storing source positions failed; will retry", zap.Error(err))
			}
		}
	}
}

// drain runs after ctx ended for a push source: it closes the push
// source (no more pushes) and keeps producing what was pushed until
// every pushed record's fate is known or stopCtx ends.
func (t *sourceTask) drain(stopCtx context.Context) error {
	t.push.stop()
	buf := t.leftover
	t.leftover = nil
	for {
		if err := t.produce(stopCtx, buf); err != nil {
			if stopCtx.Err() != nil {
				break
			}
			return err
		}
		clear(buf)
		if t.push.drained() || stopCtx.Err() != nil {
			break
		}
		t.mu.Lock()
		fatal := t.fatal
		t.mu.Unlock()
		if fatal != nil {
			return fatal
		}
		var err error
		if buf, err = t.src.Poll(stopCtx, buf[:0]); err != nil {
			settleAll(buf, err)
			return fmt.Errorf("poll: %w", err)
		}
	}
	if !t.push.drained() {
		t.log.Warn("stopping before the broker acknowledged every pushed record; they are reported failed")
	}
	return nil
}

// settleAll fails the pushed records of rs that will not be produced.
func settleAll(rs []SourceRecord, err error) {
	if err == nil {
		err = ErrStopped
	}
	for i := range rs {
		if rs[i].push != nil {
			rs[i].push.settle(fateFailed, err)
		}
	}
}

// connHooks track whether the broker is reachable (Pusher.BrokerDown).
type connHooks struct{ t *sourceTask }

func (h connHooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.t.lastDown.Store(time.Now().UnixNano())
	} else {
		h.t.lastDown.Store(0)
	}
}

func (h connHooks) OnProduceBatchWritten(kgo.BrokerMetadata, string, int32, kgo.ProduceBatchMetrics) {
	h.t.lastDown.Store(0)
}

func (t *sourceTask) brokerDown() bool {
	d := t.lastDown.Load()
	return d != 0 && time.Since(time.Unix(0, d)) < 10*time.Second
}

func (t *sourceTask) produce(ctx context.Context, rs []SourceRecord) error {
	if len(rs) == 0 {
		return nil
	}
	chunk := make([]pending, len(rs))
	var hdrBuf []byte
	lastTopic := "" // known to have scan marks
	var tm *TopicMetrics
	tmTopic := ""
	t.inflight.Add(int64(len(rs)))
	for i := range rs {
		sr := &rs[i]
		topic := sr.Topic
		if topic == "" || topic == lastTopic {
			if topic == "" {
				topic = t.opts.Topic
			}
		} else {
			t.mu.Lock()
			_, known := t.marks[topic]
			t.mu.Unlock()
			if known {
				lastTopic = topic
			} else {
				if err := t.addTopic(ctx, topic); err != nil {
					if sr.push != nil && ctx.Err() == nil {
						// One pushed record's topic: fail it, not the task.
						t.m.Error("produce")
						t.m.Topic(topic).Errors.Inc()
						sr.push.settle(fateFailed, err)
						t.inflight.Add(-1)
						continue
					}
					settleAll(rs[i:], err)
					t.inflight.Add(-int64(len(rs) - i))
					return err
				}
			}
		}
		p := &chunk[i]
		p.offset = -2
		if tm == nil || topic != tmTopic {
			tm, tmTopic = t.m.Topic(topic), topic
		}
		p.tm = tm
		p.pos = sr.Position
		p.push = sr.push
		pctx := ctx
		if sr.push != nil || t.txn.on {
			// Pushed records, and every record of a transaction, outlive
			// ctx until the final flush (a record failed by ctx would
			// abort the transaction).
			pctx = t.pctx
		}
		hs := sr.Headers
		if t.opts.GroupWorker != "" {
			hs = append(append(make([]kgo.RecordHeader, 0, len(hs)+2), hs...), kgo.RecordHeader{Key: WorkerHeader, Value: t.workerHdr})
		}
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
			hdrBuf = appendSourceHeader(hdrBuf, t.conn, sr.SourcePartition, p.seq, sr.Position)
			hs = append(hs[:len(hs):len(hs)],
				kgo.RecordHeader{Key: SourceHeader, Value: hdrBuf[start:len(hdrBuf):len(hdrBuf)]})
		}
		p.rec = kgo.Record{Topic: topic, Key: sr.Key, Value: sr.Value, Headers: hs, Timestamp: sr.Timestamp}
		t.txn.produced++
		n := len(sr.Key) + len(sr.Value)
		t.m.RecordsIn.Inc()
		t.m.BytesIn.Add(float64(n))
		if t.txn.on {
			t.txn.promises.Add(1)
		}
		if t.cl.BufferedProduceBytes() >= t.opts.MaxBufferedBytes {
			t.m.Paused.Set(1)
			t.cl.Produce(pctx, &p.rec, t.promise)
			t.m.Paused.Set(0)
		} else {
			t.cl.Produce(pctx, &p.rec, t.promise)
		}
	}
	t.m.Lag.Set(float64(t.inflight.Load()))
	return nil
}

func (t *sourceTask) promise(r *kgo.Record, err error) {
	p := (*pending)(unsafe.Pointer(r))
	if t.txn.on {
		defer t.txn.promises.Done()
	}
	if err != nil {
		t.failed(p, err)
		return
	}
	t.m.RecordsOut.Inc()
	t.m.BytesOut.Add(float64(len(r.Key) + len(r.Value)))
	p.tm.RecordsOut.Inc()
	t.acked(p, r.Offset)
	if p.push != nil {
		t.settle(p.push, fateStored, nil)
	}
}

// settle tells a pushed record's fate, at once, or in exactly-once mode
// when its transaction ends (a sender is answered only after the commit).
func (t *sourceTask) settle(b *pushBatch, f fate, err error) {
	if t.txn.on {
		t.mu.Lock()
		t.txn.settles = append(t.txn.settles, txnSettle{b, f, err})
		t.mu.Unlock()
		return
	}
	b.settle(f, err)
}

func (t *sourceTask) acked(p *pending, offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p.acked, p.offset = true, offset
	t.inflight.Add(-1)
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
	if t.txn.on && !recordRefusal(err) {
		// The transaction cannot commit without this record.
		t.txnFailed(fmt.Errorf("producing to %s: %w", p.rec.Topic, err))
		if p.push != nil {
			p.push.settle(fateFailed, err)
		}
		return
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) {
		if p.push != nil {
			p.push.settle(fateFailed, err)
		}
		return
	}
	if !p.alone && !t.txn.on && (errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)) {
		// The refusal may be the batch's: records that fit share a batch
		// with one that does not. franz-go does not split the batch as
		// Kafka's Java producer does, so each record is tried alone.
		p.alone = true
		t.dlqWG.Add(1)
		go t.produceAlone(p)
		return
	}
	t.m.Error("produce")
	r := &p.rec
	tm := p.tm
	tm.Errors.Inc()
	t.log.Warn("broker refused a record; sending it to the dead-letter topic",
		zap.String("topic", r.Topic), zap.String("dead_letter_topic", t.opts.DeadLetterTopic),
		zap.String("source_partition", spName(p)), zap.Error(err))
	extra := []kgo.RecordHeader{{Key: deadletter.HeaderTopic, Value: []byte(r.Topic)}}
	if p.sp != nil {
		extra = append(extra, kgo.RecordHeader{Key: deadletter.HeaderSourcePartition, Value: []byte(p.sp.name)},
			kgo.RecordHeader{Key: deadletter.HeaderSourcePosition, Value: p.pos})
	}
	value := r.Value
	if len(value) > 512<<10 {
		value = value[:512<<10]
		extra = append(extra, kgo.RecordHeader{Key: deadletter.HeaderTruncated, Value: []byte("true")})
	}
	dl := deadletter.Record(t.opts.DeadLetterTopic, t.name, r.Key, value, r.Headers, r.Timestamp, err, extra...)
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
			if p.push != nil {
				p.push.settle(fateFailed, err)
			}
			return
		}
		t.m.DeadLetters.Inc()
		tm.DeadLetters.Inc()
		t.acked(p, -1)
		if p.push != nil {
			t.settle(p.push, fateDeadLettered, err)
		}
	})
}

// produceAlone produces p again in a batch of its own (a client that
// produces one record at a time) and handles the outcome as the first
// produce's; refused again, p goes to the dead-letter topic.
func (t *sourceTask) produceAlone(p *pending) {
	defer t.dlqWG.Done()
	t.aloneMu.Lock()
	defer t.aloneMu.Unlock()
	if t.alone == nil {
		cl, err := kafkaclient.New(t.rt.client(), append(slices.Clip(t.popts), kgo.ProducerLinger(0))...)
		if err != nil {
			t.failed(p, fmt.Errorf("producing a record alone: %w", err))
			return
		}
		t.alone = cl
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.StopTimeout)
	defer cancel()
	t.promise(&p.rec, t.alone.ProduceSync(ctx, &p.rec).FirstErr())
}

func spName(p *pending) string {
	if p.sp == nil {
		return ""
	}
	return p.sp.name
}

// commit stores the positions covered since the last commit and the
// scan marks, then tells a Committer source. In exactly-once mode it
// commits the open transaction with them (commitTxn).
func (t *sourceTask) commit(ctx context.Context) error {
	t.keepOffsetsTopic(ctx)
	if t.txn.on {
		return t.commitTxn(ctx)
	}
	recs, stored, committed := t.positionRecords()
	if err := t.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("storing positions in %s: %w", t.rt.offsetsTopic(), err)
	}
	t.positionsStored(stored, committed)
	return nil
}

// storedSeq is a source partition's seq written by a commit.
type storedSeq struct {
	sp  *spState
	seq uint64
}

// positionRecords builds the offsets topic records of a commit: the
// positions covered since the last one and the scan marks.
func (t *sourceTask) positionRecords() (recs []*kgo.Record, stored []storedSeq, committed map[string][]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	committed = map[string][]byte{}
	for _, sp := range t.sps {
		if sp.covered.Seq > sp.storedSeq || (sp.storedSeq == 0 && sp.covered.Seq > 0) {
			v, _ := jsonMarshal(sp.covered)
			recs = append(recs, &kgo.Record{Topic: t.rt.offsetsTopic(), Key: positionKey(t.conn, sp.name), Value: v})
			stored = append(stored, storedSeq{sp, sp.covered.Seq})
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
	recs = append(recs, &kgo.Record{Topic: t.rt.offsetsTopic(), Key: scanKey(t.conn), Value: encodeScan(t.marks)})
	for _, r := range recs {
		partition.Set(r, 0)
	}
	return recs, stored, committed
}

// positionsStored records that a commit stored positions.
func (t *sourceTask) positionsStored(stored []storedSeq, committed map[string][]byte) {
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
}
