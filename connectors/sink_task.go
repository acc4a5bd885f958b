package connectors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/balancer"
)

// SinkOptions tune one sink task. Zero values take the defaults.
type SinkOptions struct {
	// Topics to consume. Required.
	Topics []string
	// Group is the consumer group (default "weir-connect-<name>"); run
	// more tasks in the same group to share the partitions.
	Group string
	// DeadLetterTopic receives records the sink cannot handle (default
	// deadletter.Topic(name)).
	DeadLetterTopic string
	// FlushInterval is how often the sink is flushed and offsets
	// committed (default 1s).
	FlushInterval time.Duration
	// MaxPollRecords bounds one Write (default 5000).
	MaxPollRecords int
	// StartAtEnd starts a group without committed offsets at the
	// partition ends instead of the starts.
	StartAtEnd bool
	// Balancer is the group's partition-assignment strategy: "range"
	// (default), "roundrobin" or "cooperative-sticky" (see
	// internal/kafkaclient/balancer).
	Balancer string
	// InstanceID makes the task a static member of its group (Kafka's
	// group.instance.id, KIP-345), passed to the client as
	// kgo.InstanceID; empty (the default) is a dynamic member. A task
	// restarted with the same id, after a crash or kill -9 too, takes
	// the old member's place at once, with its assignment and without a
	// rebalance, instead of waiting out the dead member's session
	// timeout (45s). Two live tasks must never share an id: the later
	// one fences the earlier (FENCED_INSTANCE_ID), which loses its
	// partitions and consumes nothing more. A clean stop does not leave
	// the group (except right after revoking partitions in a
	// cooperative rebalance), so its partitions wait, unconsumed, for
	// the restart or for the session timeout; give every task of a
	// group its own id that stays the same across restarts (e.g.
	// "<host>-<n>").
	InstanceID string
	// SessionTimeout and HeartbeatInterval are the member's
	// session.timeout.ms and heartbeat.interval.ms (0: the client's
	// defaults, 45s and 3s). A worker group (pipelines/workgroup) sets
	// them short, so a dead worker's partitions move within seconds.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// FetchMaxWait is fetch.max.wait.ms (0: the client's 5s). A newly
	// assigned partition is fetched only when the fetch in flight
	// returns, so a worker group sets Kafka's consumer default, 500ms.
	FetchMaxWait time.Duration
	// StopTimeout bounds the final flush and commit (default 30s).
	StopTimeout time.Duration
	// ExactlyOnce makes each flush interval one transaction holding the
	// sink's records and the consumed offsets (sink_txn.go); the sink
	// must be a TransactionalSink, and its topics on the cluster the
	// runtime consumes from. Input is read read_committed.
	ExactlyOnce bool
	// TransactionTimeout is transaction.timeout.ms under ExactlyOnce
	// (default 10s): how long a killed task's open transaction holds
	// back read_committed readers of its topics and its partitions' next
	// owner.
	TransactionTimeout time.Duration
	// Backoff paces retries of retriable Write/Flush errors.
	Backoff *Backoff
	// Observe, when set, sees every batch before the sink's Write
	// (weir run's tap hub, pipelines/observe). It must not keep or
	// change the records, and should return at once when nobody looks
	// (one atomic check).
	Observe func([]*kgo.Record)
}

type sinkTask struct {
	rt   *Runtime
	name string
	opts SinkOptions
	sink Sink
	log  *zap.Logger
	m    *Metrics
	cl   *kgo.Client
	co   kafkaclient.Options
	// sess is cl as a transact session under ExactlyOnce (else nil);
	// txnFails counts consecutive aborted flushes.
	sess     *kgo.GroupTransactSession
	txnFails int

	mu      sync.Mutex // serializes Write/Flush/commit (loop vs rebalance callbacks)
	dirty   bool
	closed  bool
	lag     map[string]map[int32]int64
	fatalMu sync.Mutex
	fatal   error
}

func (t *sinkTask) Name() string        { return t.name }
func (t *sinkTask) Logger() *zap.Logger { return t.log }
func (t *sinkTask) Metrics() *Metrics   { return t.m }

// DeadLetter implements SinkContext.
func (t *sinkTask) DeadLetter(r *kgo.Record, err error) {
	t.log.Warn("record sent to the dead-letter topic", zap.String("topic", r.Topic),
		zap.Int32("partition", r.Partition), zap.Int64("offset", r.Offset),
		zap.String("dead_letter_topic", t.opts.DeadLetterTopic), zap.Error(err))
	dl := deadletter.Record(t.opts.DeadLetterTopic, t.name, r.Key, r.Value, r.Headers, r.Timestamp, err, deadletter.Consumed(r)...)
	tm := t.m.Topic(r.Topic)
	t.cl.Produce(context.Background(), dl, func(_ *kgo.Record, derr error) {
		if derr != nil {
			t.m.Error("dead_letter")
			tm.Errors.Inc()
			t.setFatal(fmt.Errorf("writing %s/%d@%d to dead-letter topic %s: %w", r.Topic, r.Partition, r.Offset, t.opts.DeadLetterTopic, derr))
			return
		}
		t.m.DeadLetters.Inc()
		tm.DeadLetters.Inc()
	})
}

func (t *sinkTask) setFatal(err error) {
	t.fatalMu.Lock()
	defer t.fatalMu.Unlock()
	if t.fatal == nil {
		t.fatal = err
	}
}

func (t *sinkTask) getFatal() error {
	t.fatalMu.Lock()
	defer t.fatalMu.Unlock()
	return t.fatal
}

// RunSink runs sink as the connector called name until ctx is done or the
// sink fails. On a clean stop it flushes the sink and commits the
// consumer-group offsets of everything flushed (the final commit); on a
// failure it commits nothing past the last successful flush.
func (rt *Runtime) RunSink(ctx context.Context, name string, sink Sink, opts SinkOptions) error {
	if len(opts.Topics) == 0 {
		return fmt.Errorf("%w: sink connector %q: no topics", ErrConfig, name)
	}
	if opts.Group == "" {
		opts.Group = "weir-connect-" + name
	}
	if opts.DeadLetterTopic == "" {
		opts.DeadLetterTopic = deadletter.Topic(name)
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = time.Second
	}
	if opts.MaxPollRecords <= 0 {
		opts.MaxPollRecords = 5000
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	if opts.Backoff == nil {
		opts.Backoff = &DefaultBackoff
	}
	if opts.TransactionTimeout <= 0 {
		opts.TransactionTimeout = 10 * time.Second
	}
	co := rt.client()
	if opts.Balancer != "" {
		if _, err := balancer.For(opts.Balancer); err != nil {
			return fmt.Errorf("%w: sink connector %q: balancer: %v", ErrConfig, name, err)
		}
		co.Balancers = []string{opts.Balancer}
	}
	t := &sinkTask{rt: rt, name: name, opts: opts, sink: sink, log: rt.logger(name), m: rt.metrics(name),
		lag: map[string]map[int32]int64{}, co: co}
	reset := kgo.NewOffset().AtStart()
	if opts.StartAtEnd {
		reset = kgo.NewOffset().AtEnd()
	}
	copts := []kgo.Opt{
		kgo.ConsumerGroup(opts.Group),
		kgo.ConsumeTopics(opts.Topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(reset),
		kgo.OnPartitionsRevoked(t.revoked),
		kgo.OnPartitionsLost(t.lost),
		kgo.OnPartitionsAssigned(t.assigned),
		kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// A sink never delivers records of an aborted transaction (an
		// exactly-once source's open transaction when it was killed);
		// for non-transactional topics read_committed reads the same.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	}
	if opts.InstanceID != "" {
		copts = append(copts, kgo.InstanceID(opts.InstanceID))
	}
	if opts.SessionTimeout > 0 {
		copts = append(copts, kgo.SessionTimeout(opts.SessionTimeout))
	}
	if opts.HeartbeatInterval > 0 {
		copts = append(copts, kgo.HeartbeatInterval(opts.HeartbeatInterval))
	}
	if opts.FetchMaxWait > 0 {
		copts = append(copts, kgo.FetchMaxWait(opts.FetchMaxWait))
	}
	var err error
	if opts.ExactlyOnce {
		err = t.txnSession(copts)
	} else {
		t.cl, err = kafkaclient.New(co, copts...)
	}
	if err != nil {
		return fmt.Errorf("sink connector %q: client: %w", name, err)
	}
	cl := t.cl
	// The dead-letter topic exists before the first record needs it (as
	// Kafka Connect does): created lazily by the first dead letter, in
	// the middle of a Flush, a broker may not serve the new partition
	// yet, and the client then waits for its next metadata refresh (5 s)
	// before the flush, and the records behind it, can go on. A broker
	// that refuses (no create permission) leaves it to auto-creation.
	if err := ensureTopic(ctx, kadm.NewClient(cl), opts.DeadLetterTopic, -1, nil); err != nil && ctx.Err() == nil {
		t.log.Warn("dead-letter topic not created ahead; the first dead letter creates it", zap.String("topic", opts.DeadLetterTopic), zap.Error(err))
	}
	if err := sink.Open(ctx, t); err != nil {
		cl.Close()
		t.m.Error("open")
		return fmt.Errorf("sink connector %q: open: %w", name, err)
	}
	runErr := t.begin()
	if runErr == nil {
		runErr = t.loop(ctx)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), opts.StopTimeout)
	defer cancel()
	t.mu.Lock()
	var stopErr error
	if runErr == nil {
		stopErr = t.flushAndCommit(stopCtx)
	}
	if t.sess != nil {
		if _, err := t.sess.End(stopCtx, kgo.TryAbort); err != nil && runErr == nil { // what is left open
			stopErr = errors.Join(stopErr, err)
		}
	}
	closeErr := sink.Close()
	t.closed = true
	t.mu.Unlock()
	cl.Close()
	t.log.Info("sink stopped", zap.Error(runErr))
	if runErr != nil {
		return fmt.Errorf("sink connector %q: %w", name, runErr)
	}
	if err := errors.Join(stopErr, closeErr); err != nil {
		return fmt.Errorf("sink connector %q: stopping: %w", name, err)
	}
	return nil
}

func (t *sinkTask) loop(ctx context.Context) error {
	last := time.Now()
	for {
		if err := t.getFatal(); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, t.opts.FlushInterval)
		fs := t.cl.PollRecords(pctx, t.opts.MaxPollRecords)
		cancel()
		if ctx.Err() != nil {
			t.cl.AllowRebalance()
			return nil
		}
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			t.m.Error("fetch")
			t.m.Topic(topic).Errors.Inc()
			t.log.Warn("fetch failed", zap.String("topic", topic), zap.Int32("partition", p), zap.Error(err))
		})
		recs := fs.Records()
		t.updateLag(fs)
		t.mu.Lock()
		err := t.write(ctx, recs)
		if err == nil && (time.Since(last) >= t.opts.FlushInterval) {
			last = time.Now()
			err = t.flushAndCommit(ctx)
		}
		t.mu.Unlock()
		t.cl.AllowRebalance()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

func (t *sinkTask) write(ctx context.Context, recs []*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	n := 0
	for _, r := range recs {
		n += len(r.Key) + len(r.Value)
	}
	t.m.RecordsIn.Add(float64(len(recs)))
	t.m.BytesIn.Add(float64(n))
	countByTopic(t.m, recs)
	if t.opts.Observe != nil {
		t.opts.Observe(recs)
	}
	err := Retry(ctx, *t.opts.Backoff, t.m, func(ctx context.Context) error {
		err := t.sink.Write(ctx, recs)
		if err != nil && ctx.Err() == nil {
			t.m.Error("write")
			t.log.Warn("sink write failed", zap.Error(err))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	t.dirty = true
	t.m.RecordsOut.Add(float64(len(recs)))
	t.m.BytesOut.Add(float64(n))
	return nil
}

// countByTopic counts records read per topic (the edges of a pipeline
// graph); a fetch's records come grouped by topic.
func countByTopic(m *Metrics, recs []*kgo.Record) {
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].Topic == recs[i].Topic {
			j++
		}
		m.Topic(recs[i].Topic).RecordsIn.Add(float64(j - i))
		i = j
	}
}

// flushAndCommit flushes the sink and the dead-letter writes, then
// commits the offsets of every record polled so far. t.mu is held.
func (t *sinkTask) flushAndCommit(ctx context.Context) error {
	if !t.dirty || t.closed {
		return nil
	}
	if t.sess != nil {
		return t.flushAndCommitTxn(ctx)
	}
	err := Retry(ctx, *t.opts.Backoff, t.m, func(ctx context.Context) error {
		err := t.sink.Flush(ctx)
		if err != nil && ctx.Err() == nil {
			t.m.Error("flush")
			t.log.Warn("sink flush failed", zap.Error(err))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := t.cl.Flush(ctx); err != nil { // dead-letter writes
		return fmt.Errorf("flushing dead-letter writes: %w", err)
	}
	if err := t.getFatal(); err != nil {
		return err
	}
	if err := t.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.m.Error("commit")
		return fmt.Errorf("committing offsets of group %s: %w", t.opts.Group, err)
	}
	t.dirty = false
	t.m.Commits.Inc()
	return nil
}

func (t *sinkTask) updateLag(fs kgo.Fetches) {
	changed := false
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		if t.lag[p.Topic] == nil {
			t.lag[p.Topic] = map[int32]int64{}
		}
		end := p.HighWatermark
		if p.LastStableOffset >= 0 && p.LastStableOffset < end {
			end = p.LastStableOffset // what read_committed can reach
		}
		t.lag[p.Topic][p.Partition] = end - p.Records[len(p.Records)-1].Offset - 1
		changed = true
	})
	if changed {
		var sum int64
		for _, ps := range t.lag {
			for _, l := range ps {
				sum += l
			}
		}
		t.m.Lag.Set(float64(sum))
	}
}

func (t *sinkTask) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	t.log.Debug("partitions assigned", zap.Any("partitions", m))
	if pa, ok := t.sink.(PartitionAware); ok {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.closed {
			pa.Assigned(m)
		}
	}
}

func (t *sinkTask) revoked(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if t.sess != nil {
		// Exactly-once: the session aborts the open transaction at its
		// next end (a commit cannot be ended inside the callback).
		if len(m) > 0 {
			t.log.Info("partitions revoked during a transaction; it will abort and its records be consumed again", zap.Any("partitions", m))
		}
	} else if err := t.flushAndCommit(ctx); err != nil {
		t.log.Warn("flush before revocation failed; records will be delivered again", zap.Error(err))
	}
	for topic, ps := range m {
		for _, p := range ps {
			delete(t.lag[topic], p)
		}
	}
	if pa, ok := t.sink.(PartitionAware); ok {
		pa.Revoked(m)
	}
}

func (t *sinkTask) lost(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	t.log.Warn("partitions lost without a commit; their records may be delivered again", zap.Any("partitions", m))
	t.mu.Lock()
	defer t.mu.Unlock()
	if pa, ok := t.sink.(PartitionAware); ok && !t.closed {
		pa.Revoked(m)
	}
}
