package streams

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/balancer"
	"weir/streams/internal/store"
)

// Config configures one instance of a streams application. Instances with
// the same ApplicationID share the work: they form one consumer group.
type Config struct {
	// ApplicationID names the consumer group and prefixes internal topics
	// (<id>-<store>-changelog, <id>-<store>-repartition). Required.
	ApplicationID string
	// Client is how the app's Kafka clients connect (weir or Apache
	// Kafka): seed brokers (required), TLS, SASL; its Extra options are
	// appended to every client's (tuning, test hooks). Balancers are
	// set from Balancer.
	Client kafkaclient.Options
	// StateDir holds this instance's stores, under <StateDir>/<id>/<task>.
	// Required; instances on one machine need different directories.
	StateDir string
	// CommitInterval: how often stores flush and offsets commit (default
	// 1s). Larger intervals mean fewer changelog writes for hot keys and
	// more records replayed after a crash.
	CommitInterval time.Duration
	// CacheMaxBytes is each store's write cache (default 10 MiB); beyond it
	// entries spill to the on-disk store.
	CacheMaxBytes int
	// StoreBlockCacheBytes and StoreMemTableBytes bound each store's
	// Pebble memory (defaults 16 MiB each; two memtables may coexist).
	StoreBlockCacheBytes int64
	StoreMemTableBytes   uint64
	// DeadLetterTopic receives input records that fail to decode (default
	// <id>-dlq).
	DeadLetterTopic string
	// Balancer is the group assignment strategy (default
	// cooperative-sticky, so a rebalance moves only the tasks it must).
	Balancer string
	// InstanceID makes the instance a static member of the group
	// (Kafka's group.instance.id, KIP-345; "" = dynamic, the default):
	// an instance restarted with the same id, even after a crash, takes
	// its old place and tasks back without a rebalance and without
	// waiting for its old session to expire. A static member does not
	// leave the group when it stops: its tasks wait for it (or for the
	// session timeout). Two live instances must not share an id (the
	// later one fences the earlier: FENCED_INSTANCE_ID).
	InstanceID string
	// ReplicationFactor of internal topics (default -1: the broker's).
	ReplicationFactor int16
	// MinCompactionLag is min.compaction.lag.ms of changelog topics
	// (default 1h): the orphaned tail of a crashed flush must not be
	// compacted before the next owner rewrites it (see changelog.go).
	MinCompactionLag time.Duration
	// MaxPollRecords bounds one processing round (default 10,000).
	MaxPollRecords int
	// ExactlyOnce is Kafka Streams' processing.guarantee=exactly_once_v2
	// (eos.go): each commit interval's writes and input offsets are one
	// transaction, inputs and changelogs are read read_committed. Off
	// (the default): at-least-once, as the package doc describes.
	ExactlyOnce bool
	// TransactionTimeout is the transactional producer's
	// transaction.timeout.ms under ExactlyOnce (default 10s, as Kafka
	// Streams sets it): how long a killed instance's open transaction
	// holds back read_committed readers and the next owner of its tasks.
	// It must exceed CommitInterval.
	TransactionTimeout time.Duration
	// Logger (default zap.NewNop) and Registerer (default: none) for
	// logs and metrics.
	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

func (c *Config) validate() error {
	switch {
	case c.ApplicationID == "":
		return fmt.Errorf("%w: ApplicationID is required", ErrConfig)
	case len(c.Client.Brokers) == 0:
		return fmt.Errorf("%w: Client.Brokers is required", ErrConfig)
	case c.StateDir == "":
		return fmt.Errorf("%w: StateDir is required", ErrConfig)
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = time.Second
	}
	if c.CacheMaxBytes <= 0 {
		c.CacheMaxBytes = 10 << 20
	}
	if c.DeadLetterTopic == "" {
		c.DeadLetterTopic = c.ApplicationID + "-dlq"
	}
	if c.Balancer == "" {
		c.Balancer = "cooperative-sticky"
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.MinCompactionLag <= 0 {
		c.MinCompactionLag = time.Hour
	}
	if c.MaxPollRecords <= 0 {
		c.MaxPollRecords = 10000
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.TransactionTimeout <= 0 {
		c.TransactionTimeout = 10 * time.Second
	}
	if c.ExactlyOnce && c.TransactionTimeout <= c.CommitInterval {
		return fmt.Errorf("%w: TransactionTimeout (%s) must exceed CommitInterval (%s)", ErrConfig, c.TransactionTimeout, c.CommitInterval)
	}
	return nil
}

// App is one running instance of a topology.
type App struct {
	cfg   Config
	tp    *Topology
	log   *zap.Logger
	parts map[string]int32 // by source key
	srcs  map[string]*node // by resolved topic name

	cl *kgo.Client
	// sess is cl as a transact session under ExactlyOnce (else nil);
	// abortPending: a rebalance took tasks during the open transaction,
	// which must abort (eos.go). txns, aborts count transactions
	// committed and aborted.
	sess         *kgo.GroupTransactSession
	abortPending atomic.Bool
	txns, aborts atomic.Int64
	// processed: the open transaction has processed input (the loop's;
	// begin clears it). An abort before that leaves the stores as the
	// last commit left them, so the tasks stay open (resetTasks).
	processed bool

	mu    sync.Mutex // guards tasks against metric readers
	tasks map[string]*task

	prodMu  sync.Mutex
	prodErr error
	promise func(*kgo.Record, error) // a.promiseFn, bound once
	fatal   error                    // set in callbacks, read by the loop (serialized by the rebalance gate)
	// restored counts changelog records read by restores over the
	// instance's life (tests, logs).
	restored atomic.Int64
	metrics  *metrics
}

// New prepares an instance; Run starts it.
func New(tp *Topology, cfg Config) (*App, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, err := balancer.For(cfg.Balancer); err != nil {
		return nil, fmt.Errorf("%w: Balancer: %v", ErrConfig, err)
	}
	a := &App{cfg: cfg, tp: tp, log: cfg.Logger.With(zap.String("app", cfg.ApplicationID)),
		tasks: make(map[string]*task), srcs: make(map[string]*node)}
	a.promise = a.promiseFn
	for _, src := range tp.sources {
		a.srcs[topicName(cfg.ApplicationID, src)] = src
	}
	if cfg.Registerer != nil {
		a.metrics = newMetrics(a)
		if err := cfg.Registerer.Register(a.metrics); err != nil {
			return nil, fmt.Errorf("%w: registering metrics: %v", ErrConfig, err)
		}
	}
	return a, nil
}

// Run creates the internal topics, joins the group and processes until
// ctx is canceled (then it commits, checkpoints the stores, leaves the
// group and returns nil) or a fatal error (a refused write, a store
// failure, an encode error: it stops without committing and returns it).
func (a *App) Run(ctx context.Context) error {
	if err := a.setup(ctx); err != nil {
		return err
	}
	topics := make([]string, 0, len(a.srcs))
	for t := range a.srcs {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	opts := append(kafkaclient.Producer(kafkaclient.AcksAll, kgo.NoCompression()),
		kgo.ConsumerGroup(a.cfg.ApplicationID),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(a.onAssigned),
		kgo.OnPartitionsRevoked(a.onRevoked),
		kgo.OnPartitionsLost(a.onLost),
		kgo.MaxBufferedRecords(1<<17),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if a.cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(a.cfg.InstanceID))
	}
	var err error
	if a.cfg.ExactlyOnce {
		err = a.newSession(opts)
	} else {
		a.cl, err = kafkaclient.New(a.client(), opts...)
	}
	if err != nil {
		return fmt.Errorf("streams app %s: client: %w", a.cfg.ApplicationID, err)
	}
	cl := a.cl
	err = a.begin()
	if err == nil {
		err = a.loop(ctx)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err != nil {
		if a.sess != nil {
			if _, aerr := a.sess.End(cctx, kgo.TryAbort); aerr != nil {
				a.log.Warn("aborting the transaction at a failed stop", zap.Error(aerr))
			}
		}
		a.closeTasks(false)
		cl.AllowRebalance()
		cl.Close()
		return err
	}
	clean := false
	if a.sess != nil {
		clean, err = a.commitTxn(cctx)
	} else {
		err = a.commit(cctx, a.taskList())
		clean = err == nil
	}
	a.closeTasks(clean)
	cl.AllowRebalance()
	cl.Close()
	return err
}

func (a *App) loop(ctx context.Context) error {
	last := time.Now()
	for {
		// Poll until the next commit is due at the latest, so commits keep
		// their schedule when the input goes idle (and an idle instance
		// still commits what it processed last).
		wait := max(time.Until(last.Add(a.cfg.CommitInterval)), time.Millisecond)
		pctx, pcancel := context.WithTimeout(ctx, wait)
		fs := a.cl.PollRecords(pctx, a.cfg.MaxPollRecords)
		pcancel()
		if ctx.Err() != nil {
			return nil
		}
		if a.fatal != nil {
			return a.fatal
		}
		if a.abortPending.Load() {
			// Tasks moved during the transaction: it aborts (and what
			// this poll returned is fetched again from the committed
			// offsets).
			if err := a.abortAndBegin(ctx); err != nil {
				return err
			}
			last = time.Now()
			a.cl.AllowRebalance()
			continue
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				a.log.Warn("fetch error", zap.String("topic", topic), zap.Int32("partition", p), zap.Error(err))
			}
		})
		var ferr error
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 || ferr != nil {
				return
			}
			a.mu.Lock()
			t := a.tasks[taskID(p.Topic, p.Partition)]
			a.mu.Unlock()
			if t == nil {
				return
			}
			a.processed = true
			for _, r := range p.Records {
				t.process(r)
			}
			t.m.lag.Store(max(0, p.HighWatermark-t.next))
			ferr = t.err
		})
		if ferr != nil {
			return ferr
		}
		if err := a.produceErr(); err != nil {
			if a.sess == nil || !abortableProduce(err) {
				return err
			}
			// Exactly-once: the refused write dooms only the open
			// transaction; it aborts and the tasks reopen (eos.go).
			a.log.Warn("a write was refused: aborting the transaction", zap.Error(err))
			if err := a.abortAndBegin(ctx); err != nil {
				return err
			}
			last = time.Now()
			a.cl.AllowRebalance()
			continue
		}
		due := time.Since(last) >= a.cfg.CommitInterval
		if due {
			if err := a.commitDue(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			last = time.Now()
		}
		// Exactly-once: a rebalance waits for the end of the
		// transaction (at most a commit interval), so its callbacks,
		// whose restores can outlast the transaction timeout, never run
		// with writes open at the coordinator (eos.go).
		if a.sess == nil || due {
			a.cl.AllowRebalance()
		}
	}
}

// commitDue is the periodic commit of either guarantee.
func (a *App) commitDue(ctx context.Context) error {
	if a.sess == nil {
		return a.commit(ctx, a.taskList())
	}
	committed, err := a.commitTxn(ctx)
	if err != nil {
		return err
	}
	if !committed {
		if err := a.resetTasks(); err != nil {
			return err
		}
	}
	return a.begin()
}

func (a *App) taskList() []*task {
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := make([]*task, 0, len(a.tasks))
	for _, t := range a.tasks {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(x, y *task) int {
		if x.id < y.id {
			return -1
		}
		if x.id > y.id {
			return 1
		}
		return 0
	})
	return ts
}

// send implements producer. Records without a done hook (all but
// markers) share one promise, a.promise, so a send allocates no closure.
func (a *App) send(r *kgo.Record, done func(*kgo.Record, error)) {
	if done == nil {
		a.cl.Produce(context.Background(), r, a.promise)
		return
	}
	a.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
		a.promise(r, err)
		done(r, err)
	})
}

// promiseFn records the first refused write (the next commit fails on
// it); New binds it to a.promise once.
func (a *App) promiseFn(r *kgo.Record, err error) {
	if err == nil {
		return
	}
	a.prodMu.Lock()
	if a.prodErr == nil {
		a.prodErr = fmt.Errorf("%w: topic %s partition %d: %w", ErrProduce, r.Topic, r.Partition, err)
	}
	a.prodMu.Unlock()
}

func (a *App) produceErr() error {
	a.prodMu.Lock()
	defer a.prodMu.Unlock()
	return a.prodErr
}

// commit is the at-least-once step: flush the tasks' stores (changelog
// entries, markers, table emits), wait until the broker acknowledged every
// record written so far, then commit the tasks' input positions.
func (a *App) commit(ctx context.Context, ts []*task) error {
	for _, t := range ts {
		if err := t.flush(); err != nil {
			return err
		}
	}
	if err := a.cl.Flush(ctx); err != nil {
		return fmt.Errorf("streams app %s: waiting for acknowledgements: %w", a.cfg.ApplicationID, err)
	}
	if err := a.produceErr(); err != nil {
		return err
	}
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	for _, t := range ts {
		if t.next < 0 {
			continue
		}
		if offsets[t.topic] == nil {
			offsets[t.topic] = make(map[int32]kgo.EpochOffset)
		}
		offsets[t.topic][t.partition] = kgo.EpochOffset{Epoch: t.epoch, Offset: t.next}
	}
	if len(offsets) == 0 {
		return nil
	}
	var cerr error
	a.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && cerr == nil {
					cerr = fmt.Errorf("topic %s partition %d: %w", t.Topic, p.Partition, e)
				}
			}
		}
	})
	if cerr != nil {
		return fmt.Errorf("streams app %s: committing offsets: %w", a.cfg.ApplicationID, cerr)
	}
	return nil
}

func (a *App) onAssigned(ctx context.Context, _ *kgo.Client, assigned map[string][]int32) {
	if a.fatal != nil {
		return
	}
	rd := &kgoReader{a: a}
	for topic, ps := range assigned {
		src := a.srcs[topic]
		if src == nil {
			continue
		}
		for _, p := range ps {
			if _, err := a.openTask(src, p, rd); err != nil {
				a.fatal = err
				return
			}
		}
	}
}

// openTask creates the task of src's partition p and restores its stores.
func (a *App) openTask(src *node, p int32, rd changelogReader) (*task, error) {
	t := a.tp.newTask(a.cfg.ApplicationID, src, p)
	t.out = a
	t.dlq = a.cfg.DeadLetterTopic
	t.cacheMax = a.cfg.CacheMaxBytes
	t.stateDir = filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, t.id)
	po := store.PebbleOptions{BlockCacheBytes: a.cfg.StoreBlockCacheBytes, MemTableBytes: a.cfg.StoreMemTableBytes}
	t.openBack = func(dir string) (store.Backend, error) { return store.OpenPebble(dir, po) }
	a.mu.Lock()
	a.tasks[t.id] = t
	a.mu.Unlock()
	start := time.Now()
	if err := t.open(rd); err != nil {
		a.log.Error("restore failed", zap.String("task", t.id), zap.Error(err))
		return nil, err
	}
	a.restored.Add(t.m.restored.Load())
	if len(t.stores) > 0 {
		a.log.Debug("task restored", zap.String("task", t.id), zap.Int64("changelog_records", t.m.restored.Load()), zap.Duration("took", time.Since(start)))
	}
	return t, nil
}

func (a *App) onRevoked(ctx context.Context, _ *kgo.Client, revoked map[string][]int32) {
	ts := a.tasksOf(revoked)
	if len(ts) == 0 {
		return
	}
	if a.sess != nil {
		// Exactly-once: the open transaction holds every task's work;
		// it aborts and the remaining tasks reopen (eos.go).
		a.abortPending.Store(true)
		a.dropTasks(ts, false)
		return
	}
	err := a.fatal
	if err == nil {
		err = a.commit(ctx, ts)
	}
	if err != nil && a.fatal == nil {
		a.fatal = err
	}
	a.dropTasks(ts, err == nil)
}

func (a *App) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	if a.sess != nil {
		a.abortPending.Store(true)
	}
	a.dropTasks(a.tasksOf(lost), false)
}

func (a *App) tasksOf(m map[string][]int32) []*task {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ts []*task
	for topic, ps := range m {
		for _, p := range ps {
			if t := a.tasks[taskID(topic, p)]; t != nil {
				ts = append(ts, t)
			}
		}
	}
	return ts
}

func (a *App) dropTasks(ts []*task, clean bool) {
	for _, t := range ts {
		if err := t.close(clean); err != nil {
			a.log.Warn("closing task", zap.String("task", t.id), zap.Error(err))
		}
		a.mu.Lock()
		delete(a.tasks, t.id)
		a.mu.Unlock()
	}
}

func (a *App) closeTasks(clean bool) { a.dropTasks(a.taskList(), clean) }

// Metrics returns a snapshot of this instance's tasks.
func (a *App) Metrics() []TaskMetrics {
	ts := a.taskList()
	out := make([]TaskMetrics, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.metrics())
	}
	return out
}

// client returns the options of the app's Kafka clients.
func (a *App) client() kafkaclient.Options {
	o := a.cfg.Client
	if a.cfg.Balancer != "" {
		o.Balancers = []string{a.cfg.Balancer}
	}
	return o
}

// setup creates the internal topics (changelogs compacted, repartition
// topics sized like their upstream) and the dead-letter topic.
func (a *App) setup(ctx context.Context) error {
	cl, err := kafkaclient.New(a.client())
	if err != nil {
		return fmt.Errorf("streams app %s: admin client: %w", a.cfg.ApplicationID, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var ext []string
	for _, src := range a.tp.sources {
		if !src.source.internal {
			ext = append(ext, src.source.topic)
		}
	}
	td, err := adm.ListTopics(ctx, ext...)
	if err != nil {
		return fmt.Errorf("streams app %s: listing input topics: %w", a.cfg.ApplicationID, err)
	}
	counts := make(map[string]int32)
	for _, name := range ext {
		if d, ok := td[name]; ok && d.Err == nil {
			counts[name] = int32(len(d.Partitions))
		}
	}
	if a.parts, err = a.tp.partitionCounts(counts); err != nil {
		return fmt.Errorf("streams app %s: %w", a.cfg.ApplicationID, err)
	}
	lag := strconv.FormatInt(a.cfg.MinCompactionLag.Milliseconds(), 10)
	compact, del := "compact", "delete"
	type want struct {
		name string
		n    int32
		cfg  map[string]*string
	}
	var wants []want
	for _, src := range a.tp.sources {
		if src.source.internal {
			wants = append(wants, want{topicName(a.cfg.ApplicationID, src), a.parts[sourceKey(src)], map[string]*string{"cleanup.policy": &del}})
		}
	}
	for _, s := range a.tp.stores {
		wants = append(wants, want{a.cfg.ApplicationID + "-" + s.name + "-changelog", a.parts[s.owner],
			map[string]*string{"cleanup.policy": &compact, "min.compaction.lag.ms": &lag}})
	}
	wants = append(wants, want{a.cfg.DeadLetterTopic, 1, nil})
	for _, w := range wants {
		resp, err := adm.CreateTopic(ctx, w.n, a.cfg.ReplicationFactor, w.cfg, w.name)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("streams app %s: creating internal topic %s: %w", a.cfg.ApplicationID, w.name, err)
		}
	}
	return nil
}

// kgoReader reads changelog partitions for restore with a short-lived
// direct (groupless) consumer.
type kgoReader struct{ a *App }

func (r *kgoReader) read(topic string, p int32, from int64, progress func(int64), fn func(*kgo.Record) error) error {
	a := r.a
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	adm := kadm.NewClient(a.cl)
	opts := []kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(32 << 20),
	}
	// Up to the end (exactly-once: a stable end, committed data only;
	// control records are kept, and skipped below, so the read sees the
	// last offset).
	wait := time.Minute
	if a.cfg.ExactlyOnce {
		wait = 3*a.cfg.TransactionTimeout + 30*time.Second
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	ectx, ecancel := context.WithTimeout(ctx, wait)
	end, err := changelogEnd(ectx, adm, topic, p, a.cfg.ExactlyOnce)
	ecancel()
	if err != nil {
		return err
	}
	if end <= from {
		return nil
	}
	if progress != nil {
		progress(end - from)
	}
	cl, err := kafkaclient.New(a.client(), opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if err := fs.Err0(); err != nil {
			return fmt.Errorf("reading %s/%d: %w", topic, p, err)
		}
		var ferr error
		last := int64(-1)
		// A record at or past end ends the read: the record at end-1 may
		// be an aborted one, which read_committed never returns (the end
		// is the high watermark when changelogEnd was asked; its
		// transaction's marker lies past it).
		past := false
		fs.EachRecord(func(rec *kgo.Record) {
			if ferr != nil || past {
				return
			}
			if rec.Offset >= end {
				past = true
				return
			}
			last = rec.Offset
			if !rec.Attrs.IsControl() {
				ferr = fn(rec)
			}
		})
		if ferr != nil {
			return ferr
		}
		var hw int64 = -1
		fs.EachPartition(func(fp kgo.FetchTopicPartition) { hw = fp.HighWatermark })
		if past || last >= end-1 || (last < 0 && hw >= 0 && hw <= from) {
			return nil
		}
		if last >= 0 {
			from = last + 1
		}
	}
}
