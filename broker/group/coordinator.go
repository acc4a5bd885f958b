package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"weir/broker/internal/deadlines"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Storage is __consumer_offsets as the coordinator needs it; the Kafka
// server implements it over its partition logs.
//
// Contract: Partitions returns the topic's partition count, or 0 when it
// does not exist; CreateTopic creates it (compacted, n partitions) or
// returns the existing count. Append appends one or more concatenated
// uncompressed RecordBatch v2 (the caller's slice may be modified) and
// returns only once they are as durable as an acks=all produce. Replay
// calls fn with the partition's record batches from its start to its end,
// in order; fn must not keep the slice. An Append error wraps the
// *kerr.Error of the failed append when there is one (group requests map
// it, see writeError).
type Storage interface {
	Partitions() int32
	CreateTopic(n int32) (int32, error)
	Append(p int32, batches []byte) error
	Replay(p int32, fn func(batches []byte) error) error
}

// PartitionLeader is an optional Storage capability: whether this broker
// leads partition p of the offsets topic now. When the topic appears the
// coordinator loads only those partitions (all of them without it); the
// server calls Load and Unload as leadership moves.
type PartitionLeader interface {
	Leads(p int32) bool
}

// LogCommitter is an optional Storage capability: WaitLogCommitted
// returns nil once every record in partition p's log is committed (on
// every in-sync replica, where a new leader has it), or an error when ctx
// ends first or this broker stops leading p. After a failed append the
// coordinator reloads the partition from its log (see revert) only once
// the log is committed, so that it never answers from records a leader
// change could still truncate. Without it the log is taken as committed.
type LogCommitter interface {
	WaitLogCommitted(ctx context.Context, p int32) error
}

// ErrClosed is returned by a Coordinator that was closed.
var ErrClosed = errors.New("group coordinator closed")

// ErrNotStarted is Load's error before the offsets topic exists: the
// partition is loaded when the topic's creation starts the coordinator,
// which loads every partition this broker leads then.
var ErrNotStarted = errors.New("the offsets topic does not exist yet")

// maxBatchBytes bounds one group-commit append (below message.max.bytes).
const maxBatchBytes = 512 << 10

// Coordinator runs a Machine: it serializes calls with one mutex, fires
// timers from one goroutine, appends the Machine's Writes with one writer
// goroutine per partition (everything queued while an append runs goes
// into the next batch), and loads partitions from Storage.
type Coordinator struct {
	cfg    Config
	st     Storage
	now    func() time.Time
	log    *zap.Logger
	topics func() Topics

	mu      sync.Mutex
	m       *Machine // nil until the offsets topic exists
	writers map[int32]*writer
	closed  bool
	// gens counts each partition's loads and unloads: a load or a
	// revert's reload whose partition was loaded or unloaded again
	// meanwhile is dropped.
	gens map[int32]uint64

	timers *deadlines.Loop
}

// Options are a Coordinator's collaborators.
type Options struct {
	Now    func() time.Time // nil: time.Now
	Logger *zap.Logger      // nil: none
	// Topics is the cluster's topics now, for consumer-protocol groups'
	// assignors (nil: no topics, nothing is assigned).
	Topics func() Topics
}

// NewCoordinator validates cfg and starts the timer goroutine. When
// __consumer_offsets exists, the partitions this broker leads are loaded
// at once (see PartitionLeader); otherwise it is created by the first
// request that needs it.
func NewCoordinator(cfg Config, st Storage, opts Options) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Coordinator{
		cfg: cfg, st: st, now: opts.Now, log: opts.Logger, topics: opts.Topics,
		writers: map[int32]*writer{}, gens: map[int32]uint64{},
		timers: deadlines.New(),
	}
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

// Close stops the timers; requests still waiting return ErrClosed through
// their contexts' owners. Writes in flight finish.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.timers.Stop()
}

// start creates the Machine for n partitions and loads them all.
func (c *Coordinator) start(n int32) error {
	c.mu.Lock()
	if c.m != nil {
		c.mu.Unlock()
		return nil
	}
	c.m = NewMachine(c.cfg, n)
	c.m.topics = c.topics
	pl, _ := c.st.(PartitionLeader)
	var mine []int32
	for p := int32(0); p < n; p++ {
		if pl == nil || pl.Leads(p) {
			c.m.loading[p] = true
			mine = append(mine, p)
		}
	}
	c.mu.Unlock()
	for _, p := range mine {
		if pl != nil && !pl.Leads(p) {
			c.Unload(p) // moved away meanwhile
			continue
		}
		if err := c.Load(p); err != nil {
			return err
		}
	}
	return nil
}

// Load (re)loads partition p from Storage and serves its groups: at
// startup and when this broker becomes the partition's leader.
func (c *Coordinator) Load(p int32) error {
	_, err := c.load(p, 0)
	return err
}

// errSuperseded: a load whose partition was loaded or unloaded again
// meanwhile.
var errSuperseded = errors.New("superseded by a later load or unload")

// load is Load; gen, when not 0, is the partition's generation the load
// must start in (a revert's reload: errSuperseded otherwise). It returns
// the generation it loaded in.
func (c *Coordinator) load(p int32, gen uint64) (uint64, error) {
	c.mu.Lock()
	if c.m == nil {
		c.mu.Unlock()
		return 0, fmt.Errorf("group: loading %s-%d: %w", OffsetsTopic, p, ErrNotStarted)
	}
	if gen != 0 && c.gens[p] != gen {
		c.mu.Unlock()
		return 0, errSuperseded
	}
	c.gens[p]++
	mine := c.gens[p]
	l := c.m.Load(p)
	c.mu.Unlock()
	start := time.Now()
	n := 0
	err := c.st.Replay(p, func(b []byte) error {
		return ReplayBatches(b, func(pid int64, k, v []byte) error {
			n++
			if err := l.ApplyRecord(pid, k, v); err != nil {
				c.log.Warn("skipping undecodable __consumer_offsets record", zap.Int32("partition", p), zap.Error(err))
			}
			return nil
		}, func(pid int64, commit bool) error {
			l.ApplyMarker(pid, commit)
			return nil
		})
	})
	if err != nil {
		return mine, fmt.Errorf("group: loading %s-%d: %w", OffsetsTopic, p, err)
	}
	c.mu.Lock()
	if c.gens[p] != mine {
		c.mu.Unlock()
		return mine, errSuperseded
	}
	l.Finish(c.now())
	c.flushWrites()
	c.mu.Unlock()
	c.poke()
	if n > 0 {
		c.log.Info("loaded group partition", zap.Int32("partition", p), zap.Int("records", n), zap.Duration("took", time.Since(start)))
	}
	return mine, nil
}

// Serving reports whether partition p is loaded or being loaded.
func (c *Coordinator) Serving(p int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m != nil && (c.m.loaded[p] || c.m.loading[p])
}

// Unload stops serving partition p (leadership moved away).
func (c *Coordinator) Unload(p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gens[p]++
	if c.m != nil {
		c.m.Unload(p)
	}
}

// ensure makes sure the offsets topic exists and is loaded.
func (c *Coordinator) ensure() error {
	c.mu.Lock()
	ok := c.m != nil
	c.mu.Unlock()
	if ok {
		return nil
	}
	n, err := c.st.CreateTopic(c.cfg.OffsetsTopicPartitions)
	if err != nil {
		return fmt.Errorf("group: creating %s: %w", OffsetsTopic, err)
	}
	return c.start(n)
}

// with runs fn on the Machine under the lock, then starts the Writes it
// queued; it returns COORDINATOR_NOT_AVAILABLE when the offsets topic
// cannot be created.
func (c *Coordinator) with(fn func(m *Machine, now time.Time)) *kerr.Error {
	if err := c.ensure(); err != nil {
		c.log.Warn("group coordinator not available", zap.Error(err))
		return kerr.CoordinatorNotAvailable
	}
	c.mu.Lock()
	fn(c.m, c.now())
	c.flushWrites()
	c.mu.Unlock()
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
	c.flushWrites()
	return c.m.NextDeadline()
}

// writer appends one partition's Writes, batching what queues up.
type writer struct {
	p       int32
	queue   []*Write
	running bool
}

// flushWrites hands the Machine's new Writes to their writers. c.mu held.
func (c *Coordinator) flushWrites() {
	for _, w := range c.m.TakeWrites() {
		c.enqueue(w)
	}
}

// enqueue hands w to its partition's writer. c.mu held.
func (c *Coordinator) enqueue(w *Write) {
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

func (c *Coordinator) runWriter(wr *writer) {
	for {
		c.mu.Lock()
		q := wr.queue
		if len(q) == 0 {
			wr.running = false
			c.mu.Unlock()
			return
		}
		// Take Writes up to maxBatchBytes (at least one); a
		// transactional Write goes alone in its batch.
		var (
			recs []Record
			size int
			k    int
		)
		for k < len(q) {
			if k > 0 && (q[k].ProducerID >= 0 || q[0].ProducerID >= 0) {
				break
			}
			ws := 0
			for _, r := range q[k].Records {
				ws += len(r.Key) + len(r.Value) + 16
			}
			if k > 0 && size+ws > maxBatchBytes {
				break
			}
			size += ws
			recs = append(recs, q[k].Records...)
			k++
		}
		taken := q[:k:k]
		wr.queue = q[k:]
		c.mu.Unlock()

		var batch []byte
		if w := q[0]; w.ProducerID >= 0 {
			batch = BuildTxnBatch(recs, c.now().UnixMilli(), w.ProducerID, w.ProducerEpoch)
		} else {
			batch = BuildBatch(recs, c.now().UnixMilli())
		}
		err := c.st.Append(wr.p, batch)
		if err != nil {
			c.log.Warn("appending to __consumer_offsets failed", zap.Int32("partition", wr.p), zap.Int("records", len(recs)), zap.Error(err))
		}
		c.mu.Lock()
		now := c.now()
		for _, w := range taken {
			w.Done(now, err)
		}
		if err != nil {
			c.revert(wr, err)
		}
		c.flushWrites()
		c.mu.Unlock()
		c.poke()
	}
}

// revert follows a failed append to partition wr.p. The Machine changed
// its groups when it queued the Writes, and answers since then may have
// shown the changes, but the log may never hold them (an append that
// timed out waiting for replication is lost if the leader changes before
// it commits). As Kafka's coordinator runtime reverts its state to the
// last committed offset, the partition is unloaded (its queued Writes
// fail with the same error) and loaded again from its log once the log
// is committed to its end (reload); meanwhile its groups answer
// COORDINATOR_LOAD_IN_PROGRESS, and clients retry. c.mu held.
func (c *Coordinator) revert(wr *writer, err error) {
	now, p := c.now(), wr.p
	// The queued Writes, and those the failures' callbacks queue, carry
	// changes the reload drops: they fail too.
	for failed := true; failed; {
		failed = false
		q := wr.queue
		wr.queue = nil
		for _, w := range q {
			w.Done(now, err)
			failed = true
		}
		for _, w := range c.m.TakeWrites() {
			if w.Partition != p {
				c.enqueue(w)
				continue
			}
			w.Done(now, err)
			failed = true
		}
	}
	if c.closed || c.m == nil || !c.m.loaded[p] {
		return // unloaded or being loaded meanwhile: nothing to revert
	}
	c.log.Warn("reloading a group partition from its log after a failed append", zap.Int32("partition", p), zap.Error(err))
	c.m.Unload(p)
	c.m.loading[p] = true
	c.gens[p]++
	go c.reload(p, c.gens[p])
}

// reload is revert's second half: it loads partition p from its log once
// the log is committed, unless the partition was loaded or unloaded in
// the meantime (generation gen) or this broker no longer leads it.
func (c *Coordinator) reload(p int32, gen uint64) {
	backoff := 50 * time.Millisecond
	for {
		c.mu.Lock()
		current := !c.closed && c.gens[p] == gen
		c.mu.Unlock()
		if !current {
			return
		}
		if pl, ok := c.st.(PartitionLeader); ok && !pl.Leads(p) {
			c.mu.Lock()
			if c.gens[p] == gen {
				c.gens[p]++
				c.m.Unload(p)
			}
			c.mu.Unlock()
			return
		}
		var err error
		if lc, ok := c.st.(LogCommitter); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = lc.WaitLogCommitted(ctx, p)
			cancel()
		}
		if err == nil {
			var took uint64
			took, err = c.load(p, gen)
			if err == nil || errors.Is(err, errSuperseded) {
				return
			}
			gen = took // the failed load left the partition loading in its generation
		}
		c.log.Debug("reloading a group partition: not yet", zap.Int32("partition", p), zap.Error(err))
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// CoordinatorFor answers FindCoordinator for a group: nil when this broker
// coordinates it (creating and loading __consumer_offsets if needed).
func (c *Coordinator) CoordinatorFor(group string) *kerr.Error {
	var e *kerr.Error
	if ce := c.with(func(m *Machine, _ time.Time) { e = m.coordinatorError(group) }); ce != nil {
		return ce
	}
	return e
}

// Join runs a JoinGroup; it returns when the rebalance completes (or ctx
// ends: the connection closed or the server is shutting down).
func (c *Coordinator) Join(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) (*kmsg.JoinGroupResponse, error) {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.Join(now, req, clientID, clientHost, func(r *kmsg.JoinGroupResponse) { ch <- r })
	}); e != nil {
		return joinError(req.MemberID, e), nil
	}
	c.poke()
	return deadlines.Await(ctx, ch)
}

// Sync runs a SyncGroup; it returns once the leader's assignment is
// stored (or ctx ends).
func (c *Coordinator) Sync(ctx context.Context, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.Sync(now, req, func(r *kmsg.SyncGroupResponse) { ch <- r })
	}); e != nil {
		return syncError(e), nil
	}
	c.poke()
	return deadlines.Await(ctx, ch)
}

// Heartbeat runs a Heartbeat.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	var r *kmsg.HeartbeatResponse
	if e := c.with(func(m *Machine, now time.Time) { r = m.Heartbeat(now, req) }); e != nil {
		r = kmsg.NewPtrHeartbeatResponse()
		r.ErrorCode = e.Code
	}
	return r
}

// Leave runs a LeaveGroup.
func (c *Coordinator) Leave(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	var r *kmsg.LeaveGroupResponse
	if e := c.with(func(m *Machine, now time.Time) { r = m.Leave(now, req) }); e != nil {
		r = kmsg.NewPtrLeaveGroupResponse()
		r.ErrorCode = e.Code
	}
	c.poke()
	return r
}

// Commit runs an OffsetCommit; it returns after the commit is appended.
// exists reports whether a topic partition exists.
func (c *Coordinator) Commit(ctx context.Context, req *kmsg.OffsetCommitRequest, exists func(string, int32) bool) (*kmsg.OffsetCommitResponse, error) {
	ch := make(chan *kmsg.OffsetCommitResponse, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.Commit(now, req, exists, func(r *kmsg.OffsetCommitResponse) { ch <- r })
	}); e != nil {
		r := kmsg.NewPtrOffsetCommitResponse()
		for _, t := range req.Topics {
			rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: e.Code})
			}
			r.Topics = append(r.Topics, rt)
		}
		return r, nil
	}
	return deadlines.Await(ctx, ch)
}

// FetchOffsets returns a group's committed offsets (topics nil: all);
// requireStable: UNSTABLE_OFFSET_COMMIT for partitions with pending
// transactional offsets.
func (c *Coordinator) FetchOffsets(group string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) ([]kmsg.OffsetFetchResponseTopic, *kerr.Error) {
	var (
		out []kmsg.OffsetFetchResponseTopic
		ge  *kerr.Error
	)
	if e := c.with(func(m *Machine, _ time.Time) { out, ge = m.FetchOffsets(group, topics, requireStable) }); e != nil {
		return nil, e
	}
	return out, ge
}

// FetchOffsetsAs is FetchOffsets for an OffsetFetch v9+ naming a member
// (memberID non-nil or epoch >= 0): in a consumer-protocol group the
// member must exist (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH).
func (c *Coordinator) FetchOffsetsAs(group string, memberID *string, epoch int32, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) ([]kmsg.OffsetFetchResponseTopic, *kerr.Error) {
	var (
		out []kmsg.OffsetFetchResponseTopic
		ge  *kerr.Error
	)
	if e := c.with(func(m *Machine, _ time.Time) {
		if ge = m.coordinatorError(group); ge != nil {
			return
		}
		if ge = m.groups[group].fetchMemberError(memberID, epoch); ge != nil {
			return
		}
		out, ge = m.FetchOffsets(group, topics, requireStable)
	}); e != nil {
		return nil, e
	}
	return out, ge
}

// ConsumerHeartbeat runs a ConsumerGroupHeartbeat (KIP-848); it returns
// once what it changed is written (or ctx ends).
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	ch := make(chan *kmsg.ConsumerGroupHeartbeatResponse, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.ConsumerHeartbeat(now, req, clientID, clientHost, func(r *kmsg.ConsumerGroupHeartbeatResponse) { ch <- r })
	}); e != nil {
		return heartbeatError(e, ""), nil
	}
	c.poke()
	return deadlines.Await(ctx, ch)
}

// ConsumerDescribe describes consumer-protocol groups
// (ConsumerGroupDescribe).
func (c *Coordinator) ConsumerDescribe(ids []string) []kmsg.ConsumerGroupDescribeResponseGroup {
	out := make([]kmsg.ConsumerGroupDescribeResponseGroup, len(ids))
	if e := c.with(func(m *Machine, _ time.Time) {
		for i, id := range ids {
			out[i] = m.ConsumerDescribe(id)
		}
	}); e != nil {
		for i, id := range ids {
			out[i] = kmsg.NewConsumerGroupDescribeResponseGroup()
			out[i].Group, out[i].ErrorCode = id, e.Code
		}
	}
	return out
}

// TxnCommit runs a TxnOffsetCommit whose producer the caller verified;
// it returns after the transactional batch is appended.
func (c *Coordinator) TxnCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, exists func(string, int32) bool) (*kmsg.TxnOffsetCommitResponse, error) {
	ch := make(chan *kmsg.TxnOffsetCommitResponse, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.TxnCommit(now, req, exists, func(r *kmsg.TxnOffsetCommitResponse) { ch <- r })
	}); e != nil {
		return TxnCommitErrors(req, e.Code), nil
	}
	return deadlines.Await(ctx, ch)
}

// TxnCommitErrors answers every partition of a TxnOffsetCommit with code.
func TxnCommitErrors(req *kmsg.TxnOffsetCommitRequest, code int16) *kmsg.TxnOffsetCommitResponse {
	r := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// TxnMarker tells the coordinator that a transaction marker of producerID
// was appended to partition p of __consumer_offsets: that producer's
// pending offsets become committed (commit) or are dropped.
func (c *Coordinator) TxnMarker(p int32, producerID int64, commit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return
	}
	c.m.TxnMarker(c.now(), p, producerID, commit)
	c.flushWrites()
}

// DeleteOffsets runs an OffsetDelete.
func (c *Coordinator) DeleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	ch := make(chan *kmsg.OffsetDeleteResponse, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.DeleteOffsets(now, req, func(r *kmsg.OffsetDeleteResponse) { ch <- r })
	}); e != nil {
		r := kmsg.NewPtrOffsetDeleteResponse()
		r.ErrorCode = e.Code
		return r, nil
	}
	return deadlines.Await(ctx, ch)
}

// Describe describes groups.
func (c *Coordinator) Describe(ids []string) []kmsg.DescribeGroupsResponseGroup {
	out := make([]kmsg.DescribeGroupsResponseGroup, len(ids))
	if e := c.with(func(m *Machine, _ time.Time) {
		for i, id := range ids {
			out[i] = m.Describe(id)
		}
	}); e != nil {
		for i, id := range ids {
			out[i] = kmsg.NewDescribeGroupsResponseGroup()
			out[i].Group, out[i].ErrorCode = id, e.Code
		}
	}
	return out
}

// List lists groups, optionally filtered by state. Before any group
// exists (no offsets topic yet) the list is empty.
func (c *Coordinator) List(states []string) []kmsg.ListGroupsResponseGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		return []kmsg.ListGroupsResponseGroup{}
	}
	return c.m.List(states)
}

// Delete runs a DeleteGroups; it returns after the tombstones are written.
func (c *Coordinator) Delete(ctx context.Context, ids []string) ([]kmsg.DeleteGroupsResponseGroup, error) {
	ch := make(chan []kmsg.DeleteGroupsResponseGroup, 1)
	if e := c.with(func(m *Machine, now time.Time) {
		m.Delete(now, ids, func(r []kmsg.DeleteGroupsResponseGroup) { ch <- r })
	}); e != nil {
		out := make([]kmsg.DeleteGroupsResponseGroup, len(ids))
		for i, id := range ids {
			out[i] = kmsg.NewDeleteGroupsResponseGroup()
			out[i].Group, out[i].ErrorCode = id, e.Code
		}
		return out, nil
	}
	return deadlines.Await(ctx, ch)
}
