package txncoord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"weir/broker/group"
	"weir/broker/internal/deadlines"
)

// Storage is __transaction_state as the coordinator needs it; the Kafka
// server implements it over its partition logs.
//
// Contract: Partitions returns the topic's partition count, or 0 when it
// does not exist; CreateTopic creates it (compacted, n partitions, the
// transaction.state.log.* settings) or returns the existing count.
// Append appends one uncompressed RecordBatch v2 (the caller's slice may
// be modified) and returns only once it is as durable as an acks=all
// produce; its error wraps the *kerr.Error of the failed append when
// there is one. Replay calls fn with the partition's record batches from
// its start to its end, in order; fn must not keep the slice.
type Storage interface {
	Partitions() int32
	CreateTopic(n int32) (int32, error)
	Append(p int32, batch []byte) error
	Replay(p int32, fn func(batches []byte) error) error
}

// PartitionLeader is an optional Storage capability: whether this broker
// leads partition p of the state topic now, and in which leader epoch
// (the coordinator epoch of its markers). When the topic appears the
// coordinator loads only those partitions (all of them, epoch 0, without
// it); the server calls Load and Unload as leadership moves.
type PartitionLeader interface {
	LeaderEpoch(p int32) (epoch int32, leads bool)
}

// MarkerWriter writes transaction markers. WriteMarkers makes one attempt
// at writing mk's marker to each of parts (at each partition's leader:
// this broker, or another over the inter-broker listener) and returns
// the error of each partition that failed; a partition missing from the
// map is written. A partition whose topic no longer exists counts as
// written (Kafka skips it). The coordinator retries the failed ones
// (backing off) until every marker is written, except after
// INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED: a newer
// coordinator or epoch owns the transaction, and this one stops (as
// Kafka's TransactionMarkerRequestCompletionHandler).
type MarkerWriter interface {
	WriteMarkers(ctx context.Context, mk Markers, parts []TP) map[TP]*kerr.Error
}

// ErrClosed is returned by a Coordinator that was closed.
var ErrClosed = errors.New("transaction coordinator closed")

// ErrNotStarted is Load's error before the state topic exists: the
// partition is loaded when the topic's creation starts the coordinator,
// which loads every partition this broker leads then.
var ErrNotStarted = errors.New("the transaction state topic does not exist yet")

// Marker retry backoff bounds.
const (
	markerBackoffMin = 20 * time.Millisecond
	markerBackoffMax = time.Second
)

// Coordinator runs a Machine: one mutex serializes calls, one goroutine
// fires timers, one writer goroutine per partition appends the Machine's
// Writes (in order, what queues meanwhile in one batch), one goroutine
// per marker job writes markers until done.
type Coordinator struct {
	cfg    Config
	st     Storage
	mw     MarkerWriter
	newPID func() (int64, error)
	now    func() time.Time
	log    *zap.Logger

	mu      sync.Mutex
	m       *Machine // nil until the state topic exists
	writers map[int32]*writer
	parts   map[int32]*partJobs // marker jobs of a loaded partition
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	jobs    sync.WaitGroup

	timers *deadlines.Loop
}

// Options are a Coordinator's collaborators.
type Options struct {
	Now    func() time.Time // nil: time.Now
	Logger *zap.Logger      // nil: none
}

// NewCoordinator validates cfg and starts the timer goroutine. When
// __transaction_state exists, the partitions this broker leads are loaded
// at once; otherwise it is created by the first request that needs it.
// newPID allocates producer ids.
func NewCoordinator(cfg Config, st Storage, mw MarkerWriter, newPID func() (int64, error), opts Options) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{
		cfg: cfg, st: st, mw: mw, newPID: newPID, now: opts.Now, log: opts.Logger,
		writers: map[int32]*writer{}, parts: map[int32]*partJobs{},
		timers: deadlines.New(),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	if n := st.Partitions(); n > 0 {
		if err := c.start(n); err != nil {
			return nil, err
		}
	}
	c.timers.Start(c.now, c.tick)
	return c, nil
}

// Close stops the timers and the marker senders.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.timers.Stop()
	c.jobs.Wait()
}

func (c *Coordinator) start(n int32) error {
	c.mu.Lock()
	if c.m != nil {
		c.mu.Unlock()
		return nil
	}
	c.m = NewMachine(c.cfg, n, c.newPID)
	pl, _ := c.st.(PartitionLeader)
	type led struct{ p, epoch int32 }
	var mine []led
	for p := int32(0); p < n; p++ {
		var epoch int32
		if pl != nil {
			e, ok := pl.LeaderEpoch(p)
			if !ok {
				continue
			}
			epoch = e
		}
		c.m.loading[p] = true
		mine = append(mine, led{p, epoch})
	}
	c.mu.Unlock()
	for _, l := range mine {
		if err := c.Load(l.p, l.epoch); err != nil {
			return err
		}
	}
	return nil
}

// Load (re)loads partition p from Storage and serves its transactional
// ids, in coordinator epoch epoch: at startup and when this broker
// becomes the partition's leader. Transactions found preparing a commit
// or abort get their markers (again).
func (c *Coordinator) Load(p, epoch int32) error {
	c.mu.Lock()
	if c.m == nil {
		c.mu.Unlock()
		return fmt.Errorf("txncoord: loading %s-%d: %w", StateTopic, p, ErrNotStarted)
	}
	c.stopMarkers(p)
	l := c.m.Load(p, epoch)
	c.mu.Unlock()
	start := time.Now()
	n := 0
	err := c.st.Replay(p, func(b []byte) error {
		return group.ParseBatches(b, func(k, v []byte) error {
			n++
			if err := l.Apply(k, v); err != nil {
				c.log.Warn("skipping undecodable __transaction_state record", zap.Int32("partition", p), zap.Error(err))
			}
			return nil
		})
	})
	if err != nil {
		c.mu.Lock()
		c.m.Unload(p)
		c.mu.Unlock()
		return fmt.Errorf("txncoord: loading %s-%d: %w", StateTopic, p, err)
	}
	c.mu.Lock()
	l.Finish(c.now())
	c.flush()
	c.mu.Unlock()
	c.poke()
	if n > 0 {
		c.log.Info("loaded transaction state partition", zap.Int32("partition", p), zap.Int32("coordinator_epoch", epoch), zap.Int("records", n), zap.Duration("took", time.Since(start)))
	}
	return nil
}

// Serving reports whether partition p is loaded or being loaded, and in
// which coordinator epoch.
func (c *Coordinator) Serving(p int32) (int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return 0, false
	}
	if c.m.loading[p] {
		return 0, true
	}
	return c.m.Loaded(p)
}

// Unload stops serving partition p (leadership moved away) and its
// marker senders.
func (c *Coordinator) Unload(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m != nil {
		c.m.Unload(p)
	}
	c.stopMarkers(p)
}

// partJobs is the context of one partition's marker jobs, canceled when
// the partition is unloaded or reloaded.
type partJobs struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// stopMarkers cancels the marker jobs of partition p. c.mu held.
func (c *Coordinator) stopMarkers(p int32) {
	if j := c.parts[p]; j != nil {
		j.cancel()
		delete(c.parts, p)
	}
}

// ensure makes sure the state topic exists and is loaded.
func (c *Coordinator) ensure() error {
	c.mu.Lock()
	ok := c.m != nil
	c.mu.Unlock()
	if ok {
		return nil
	}
	n, err := c.st.CreateTopic(c.cfg.StateLogPartitions)
	if err != nil {
		return fmt.Errorf("txncoord: creating %s: %w", StateTopic, err)
	}
	return c.start(n)
}

// with runs fn on the Machine under the lock, then starts the Writes and
// marker jobs it queued; it returns COORDINATOR_NOT_AVAILABLE when the
// state topic cannot be created.
func (c *Coordinator) with(fn func(m *Machine, now time.Time)) *kerr.Error {
	if err := c.ensure(); err != nil {
		c.log.Warn("transaction coordinator not available", zap.Error(err))
		return kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kerr.CoordinatorNotAvailable
	}
	fn(c.m, c.now())
	c.flush()
	return nil
}

func (c *Coordinator) poke() { c.timers.Kick() }

// tick runs the Machine's timers and returns its next deadline (the
// zero time while there is no Machine); the timer loop calls it.
func (c *Coordinator) tick() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return time.Time{}
	}
	c.m.Tick(c.now())
	c.flush()
	return c.m.NextDeadline()
}

type writer struct {
	p       int32
	queue   []*Write
	running bool
}

// flush hands the Machine's new Writes to their writers and starts its
// marker jobs. c.mu held.
func (c *Coordinator) flush() {
	if c.closed {
		// Nothing new is appended after Close: the writes fail, the
		// marker jobs are dropped (the next coordinator resends them).
		now := c.now()
		for {
			ws := c.m.TakeWrites()
			if len(ws) == 0 {
				break
			}
			for _, w := range ws {
				w.Done(now, ErrClosed)
			}
		}
		c.m.TakeMarkers()
		return
	}
	for _, w := range c.m.TakeWrites() {
		wr := c.writers[w.Partition]
		if wr == nil {
			wr = &writer{p: w.Partition}
			c.writers[w.Partition] = wr
		}
		wr.queue = append(wr.queue, w)
		if !wr.running {
			wr.running = true
			go c.runWriter(wr)
		}
	}
	for _, mk := range c.m.TakeMarkers() {
		p := PartitionFor(mk.TransactionalID, c.m.nparts)
		j := c.parts[p]
		if j == nil {
			j = &partJobs{}
			j.ctx, j.cancel = context.WithCancel(c.ctx)
			c.parts[p] = j
		}
		c.startMarkers(j.ctx, mk)
	}
}

func (c *Coordinator) startMarkers(ctx context.Context, mk Markers) {
	c.jobs.Add(1)
	go func() {
		defer c.jobs.Done()
		c.sendMarkers(ctx, mk)
	}()
}

// sendMarkers writes mk's markers, retrying until all are written, then
// completes the transaction.
func (c *Coordinator) sendMarkers(ctx context.Context, mk Markers) {
	remaining := mk.Partitions
	backoff := markerBackoffMin
	for attempt := 1; len(remaining) > 0; attempt++ {
		res := c.mw.WriteMarkers(ctx, mk, remaining)
		var retry []TP
		for _, tp := range remaining {
			switch e := res[tp]; e {
			case nil, kerr.UnsupportedForMessageFormat, kerr.UnsupportedVersion:
			case kerr.InvalidProducerEpoch, kerr.TransactionCoordinatorFenced:
				c.log.Warn("transaction markers refused: a newer producer epoch or coordinator owns the transaction; stopping",
					zap.String("transactional_id", mk.TransactionalID), zap.Int64("producer_id", mk.ProducerID),
					zap.Int16("producer_epoch", mk.ProducerEpoch), zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Error(e))
				return
			default:
				retry = append(retry, tp)
				if attempt%50 == 0 {
					c.log.Warn("transaction marker not written yet; retrying", zap.String("transactional_id", mk.TransactionalID),
						zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Int("attempts", attempt), zap.Error(e))
				}
			}
		}
		remaining = retry
		if len(remaining) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, markerBackoffMax)
	}
	if ctx.Err() != nil {
		return
	}
	c.with(func(m *Machine, now time.Time) { m.MarkersWritten(now, mk) })
}

func (c *Coordinator) runWriter(wr *writer) {
	for {
		c.mu.Lock()
		q := wr.queue
		if len(q) == 0 {
			wr.running = false
			c.mu.Unlock()
			return
		}
		var recs []Record
		for _, w := range q {
			recs = append(recs, w.Records...)
		}
		wr.queue = nil
		c.mu.Unlock()

		err := c.st.Append(wr.p, group.BuildBatch(recs, c.now().UnixMilli()))
		if err != nil {
			c.log.Warn("appending to __transaction_state failed", zap.Int32("partition", wr.p), zap.Int("records", len(recs)), zap.Error(err))
		}
		c.mu.Lock()
		now := c.now()
		for _, w := range q {
			w.Done(now, err)
		}
		c.flush()
		c.mu.Unlock()
		c.poke()
	}
}

// CoordinatorFor answers FindCoordinator for a transactional id: nil when
// this broker coordinates it (creating and loading __transaction_state
// if needed).
func (c *Coordinator) CoordinatorFor(id string) *kerr.Error {
	var e *kerr.Error
	if ce := c.with(func(m *Machine, _ time.Time) { e = m.CoordinatorError(id) }); ce != nil {
		return ce
	}
	return e
}

// Partitions is the state topic's partition count (0 before it exists).
func (c *Coordinator) Partitions() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return 0
	}
	return c.m.nparts
}

// InitProducerID runs InitProducerId for a transactional id.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, pid int64, epoch int16) (InitResult, error) {
	ch := make(chan InitResult, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.InitProducerID(now, id, timeoutMs, pid, epoch, func(r InitResult) { ch <- r })
	}); e != nil {
		return InitResult{ProducerID: -1, Epoch: -1, Err: e}, nil
	}
	c.poke()
	return deadlines.Await(ctx, ch)
}

// AddPartitions adds partitions to a transaction.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, tps []TP) (*kerr.Error, error) {
	ch := make(chan *kerr.Error, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.AddPartitions(now, id, pid, epoch, tps, func(e *kerr.Error) { ch <- e })
	}); e != nil {
		return e, nil
	}
	c.poke()
	return deadlines.Await(ctx, ch)
}

// Verify checks that partitions are in a producer's ongoing transaction.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, tps []TP) (map[TP]*kerr.Error, *kerr.Error) {
	var (
		out map[TP]*kerr.Error
		ve  *kerr.Error
	)
	if e := c.with(func(m *Machine, _ time.Time) { out, ve = m.Verify(id, pid, epoch, tps) }); e != nil {
		return nil, e
	}
	return out, ve
}

// EndTxn commits or aborts a transaction; it returns once the decision is
// written (the markers follow).
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) (*kerr.Error, error) {
	ch := make(chan *kerr.Error, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.EndTxn(now, id, pid, epoch, commit, func(e *kerr.Error) { ch <- e })
	}); e != nil {
		return e, nil
	}
	c.poke()
	return deadlines.Await(ctx, ch)
}

// Describe runs fn on the Machine for read-only answers (Describe, List).
func (c *Coordinator) Describe(fn func(m *Machine, now time.Time)) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return kerr.CoordinatorNotAvailable
	}
	fn(c.m, c.now())
	return nil
}
