package pipelines

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/pipelines/codec"
	"weir/pipelines/observe"
	"weir/schemas"
	"weir/streams"
)

// RunOptions configure a Runner.
type RunOptions struct {
	// Client is how every Kafka client of the run connects to the
	// cluster: its bootstrap brokers (required), TLS, SASL, client id.
	Client kafkaclient.Options
	// SchemaRegistry is the registry URL ("": none; Avro topics then
	// cannot be used).
	SchemaRegistry string
	// Registry holds the registry client's TLS and basic auth settings
	// (its URL is SchemaRegistry).
	Registry kafkaclient.Registry
	// ClientProperties are the Kafka client properties behind Client
	// and Registry (Broker.ClientProperties), given to kinds that connect
	// to the cluster themselves (the kafka sink without brokers of its
	// own) and, their registry settings, to the Avro connectors
	// (schema_registry_config) with the registry URL.
	ClientProperties map[string]string
	Logger           *zap.Logger
	// Registerer receives the connector metrics (nil: a private registry).
	Registerer prometheus.Registerer
	// RestartBackoff is the first delay before restarting a failed
	// component (default 1s, doubling to a minute).
	RestartBackoff time.Duration
	// StateDir holds the local stores of aggregating streams (default:
	// "streams" in the broker block's data_dir). The stores are a cache
	// of their changelog topics: an empty directory restores from them.
	StateDir string
	// StreamsCommitInterval is how often aggregating streams flush their
	// stores, emit table updates and commit (default 1s).
	StreamsCommitInterval time.Duration
	// Worker, when set, makes the runner one worker of a worker group
	// (workers.go): singleton sources run where the group places them.
	Worker *WorkerOptions
}

// Runner runs a Config's sources, streams and sinks against a cluster
// and applies new Configs by restarting only what changed.
type Runner struct {
	opts    RunOptions
	log     *zap.Logger
	rt      *connectors.Runtime
	gather  prometheus.Gatherer
	adm     *kadm.Client
	admCl   *kgo.Client
	srcl    *sr.Client
	dec     *codec.Decoder
	baseCtx context.Context
	stopAll context.CancelFunc
	stopped sync.Once
	// streamsReg receives the metrics of aggregating streams.
	streamsReg prometheus.Registerer

	mu      sync.Mutex
	running map[string]*task
	encs    map[string]*codec.Encoder
	applied map[string]string // topic name → applied hash
	// defStateDir is the state directory of the applied configuration.
	defStateDir string
	// The applied configuration's components and how to run them.
	comps map[string]Component
	want  map[string]func(context.Context, *task) error
	// wg is the worker group's state (nil: no group).
	wg *workerState
	// closing: Stop has begun; nothing starts any more.
	closing bool
	// final is every component's status when Stop had stopped them all.
	final []Status
	// cfg is the applied configuration; hub the taps (observed.go).
	cfg *Config
	hub *observe.Hub
}

type task struct {
	comp    Component
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	state   string
	lastErr error
	errAt   time.Time // when lastErr happened
	starts  int
	tr      *transformer
	// waitSince is when the current run of expected waits (retriable
	// failures) began; quiet is set while their restarts are not logged.
	waitSince time.Time
	quiet     bool
	// app and out are set for aggregating streams: the streams instance
	// (for its task metrics) and the number of results written.
	app  *streams.App
	out  *atomic.Int64
	from []string
	// outBytes (with out) counts a stateless stream's results.
	outBytes *atomic.Int64
}

// NewRunner returns a Runner; nothing runs until Apply.
func NewRunner(opts RunOptions) (*Runner, error) {
	if len(opts.Client.Brokers) == 0 {
		return nil, errors.New("pipelines: runner needs brokers")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.RestartBackoff <= 0 {
		opts.RestartBackoff = time.Second
	}
	reg := prometheus.NewRegistry()
	var g prometheus.Gatherer = reg
	var rr prometheus.Registerer = reg
	if opts.Registerer != nil {
		rr = prometheus.WrapRegistererWith(nil, opts.Registerer)
		if gg, ok := opts.Registerer.(prometheus.Gatherer); ok {
			g = gg
		} else {
			rr = reg
		}
	}
	cl, err := kafkaclient.New(opts.Client)
	if err != nil {
		return nil, err
	}
	r := &Runner{opts: opts, log: opts.Logger, gather: g, admCl: cl, adm: kadm.NewClient(cl), streamsReg: rr,
		running: map[string]*task{}, encs: map[string]*codec.Encoder{}, applied: map[string]string{}, dec: &codec.Decoder{},
		hub: observe.NewHub()}
	r.rt = &connectors.Runtime{Client: opts.Client, Logger: opts.Logger,
		Metrics: connectors.NewMetricSet(rr)}
	if opts.SchemaRegistry != "" {
		r.srcl, err = kafkaclient.NewRegistry(opts.Registry.WithURL(opts.SchemaRegistry))
		if err != nil {
			cl.Close()
			return nil, err
		}
		r.dec.Serde = schemas.NewSerde(srclient.Source(r.srcl))
	}
	r.baseCtx, r.stopAll = context.WithCancel(context.Background())
	if opts.Worker != nil {
		if err := r.newWorker(*opts.Worker); err != nil {
			cl.Close()
			return nil, err
		}
	}
	return r, nil
}

// Apply makes the running set match cfg: declared topics are created or
// updated and their schemas registered, then components that are new or
// whose settings changed are (re)started, and those no longer declared
// are stopped (each with a final flush and commit). Unchanged
// components keep running untouched. It returns the IDs restarted,
// started and stopped.
func (r *Runner) Apply(ctx context.Context, cfg *Config) (changed []string, err error) {
	if err := r.applyTopics(ctx, cfg); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.defStateDir = defaultStateDir(cfg)
	r.mu.Unlock()
	want := map[string]func(context.Context, *task) error{}
	comps := map[string]Component{}
	for _, s := range cfg.Sources {
		s := s
		comps[s.ID()] = s.Component
		want[s.ID()] = func(ctx context.Context, t *task) error { return r.runSource(ctx, t, s) }
	}
	for _, s := range cfg.Streams {
		s := s
		comps[s.ID()] = s.Component
		want[s.ID()] = func(ctx context.Context, t *task) error { return r.runStream(ctx, t, s) }
	}
	for _, s := range cfg.Sinks {
		s := s
		comps[s.ID()] = s.Component
		want[s.ID()] = func(ctx context.Context, t *task) error { return r.runSink(ctx, t, s) }
	}
	r.mu.Lock()
	r.comps, r.want, r.cfg = comps, want, cfg
	if r.wg != nil {
		// Singletons run only where the group places them: never
		// started here before the group says so.
		r.wg.single = map[string]bool{}
		for _, s := range cfg.Sources {
			if s.Connector.Placement == connectors.Singleton {
				r.wg.single[s.ID()] = true
			}
		}
	}
	changed = r.reconcileLocked()
	r.mu.Unlock()
	r.workerApplied(cfg)
	return changed, nil
}

// reconcileLocked makes the running set match r.comps (less the
// singletons the worker group has not given this worker): it stops the
// components removed or changed, then starts the missing ones. It
// returns the IDs stopped or started, sorted.
func (r *Runner) reconcileLocked() (changed []string) {
	if r.closing {
		return nil
	}
	comps := map[string]Component{}
	for id, c := range r.comps {
		if r.placedHere(id) {
			comps[id] = c
		}
	}
	// Stop first (removed and changed), so a restarted sink's group
	// member has left before its successor joins.
	var stop []*task
	var removed []string
	for id, t := range r.running {
		c, ok := comps[id]
		if !ok || c.Hash != t.comp.Hash {
			stop = append(stop, t)
			delete(r.running, id)
			changed = append(changed, id)
			if _, declared := r.comps[id]; !declared {
				removed = append(removed, id)
			}
		}
	}
	for _, t := range stop {
		t.cancel()
	}
	for _, t := range stop {
		<-t.done
		r.log.Info("pipeline component stopped", zap.String("component", t.comp.ID()))
	}
	r.leaveRemoved(removed) // worker groups: their static members leave
	ids := make([]string, 0, len(comps))
	for id := range comps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if _, ok := r.running[id]; ok {
			continue
		}
		if !containsStr(changed, id) {
			changed = append(changed, id)
		}
		t := &task{comp: comps[id], done: make(chan struct{}), state: "starting"}
		var tctx context.Context
		tctx, t.cancel = context.WithCancel(r.baseCtx)
		r.running[id] = t
		go r.supervise(tctx, t, r.want[id])
	}
	sort.Strings(changed)
	return changed
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// ExpectedWaitQuiet is how long a component may keep failing with an
// expected wait (a retriable Kafka error such as UNKNOWN_TOPIC_OR_PARTITION
// while a new topic's metadata propagates) before its restarts are logged
// as errors; until then they are logged at debug.
var ExpectedWaitQuiet = 10 * time.Second

// expectedWait reports whether err is a retriable Kafka error: a wait, not
// a fault.
func expectedWait(err error) bool {
	if err == nil {
		return false
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	// Some clients report the Kafka error by name in a formatted message.
	msg := err.Error()
	for _, e := range []*kerr.Error{kerr.UnknownTopicOrPartition, kerr.LeaderNotAvailable, kerr.NotLeaderForPartition,
		kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.CoordinatorLoadInProgress} {
		if strings.Contains(msg, e.Message) {
			return true
		}
	}
	return false
}

// supervise runs fn until ctx ends, restarting it with backoff when it
// fails.
func (r *Runner) supervise(ctx context.Context, t *task, fn func(context.Context, *task) error) {
	defer close(t.done)
	backoff := r.opts.RestartBackoff
	for {
		t.mu.Lock()
		t.state, t.starts = "running", t.starts+1
		t.mu.Unlock()
		startLvl := zap.InfoLevel
		if t.quiet {
			startLvl = zap.DebugLevel
		}
		r.log.Log(startLvl, "pipeline component starting", zap.String("component", t.comp.ID()))
		ranFrom := time.Now()
		err := fn(ctx, t)
		if time.Since(ranFrom) > ExpectedWaitQuiet {
			t.waitSince = time.Time{} // it ran a while: a later wait is a new one
		}
		if ctx.Err() != nil {
			t.mu.Lock()
			t.state = "stopped"
			if err != nil {
				t.lastErr, t.errAt = err, time.Now()
			}
			t.mu.Unlock()
			if err != nil {
				r.log.Warn("pipeline component stopped with an error", zap.String("component", t.comp.ID()), zap.Error(err))
			}
			return
		}
		if err == nil {
			err = errors.New("stopped unexpectedly")
		}
		t.mu.Lock()
		t.state, t.lastErr, t.errAt = "failed", err, time.Now()
		t.mu.Unlock()
		// An expected wait (topic metadata not yet propagated on a first
		// start: a retriable Kafka error) is retried silently unless it
		// lasts; anything else is an error at once.
		lvl := zap.ErrorLevel
		if expectedWait(err) {
			if t.waitSince.IsZero() {
				t.waitSince = time.Now()
			}
			if time.Since(t.waitSince) < ExpectedWaitQuiet {
				lvl = zap.DebugLevel
			}
		} else {
			t.waitSince = time.Time{}
		}
		t.quiet = lvl == zap.DebugLevel
		r.log.Log(lvl, "pipeline component failed; restarting", zap.String("component", t.comp.ID()),
			zap.Duration("after", backoff), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

func (r *Runner) runSettings() RunSettings {
	return RunSettings{SchemaRegistry: r.opts.SchemaRegistry, Brokers: r.opts.Client.Brokers, ClientConfig: r.opts.ClientProperties,
		RegistryConfig: kafkaclient.RegistryProperties(r.opts.ClientProperties)}
}

func (r *Runner) transformer(name string, chain *Chain, defTopic string) *transformer {
	r.mu.Lock()
	encs := make(map[string]*codec.Encoder, len(r.encs))
	for k, v := range r.encs {
		encs[k] = v
	}
	r.mu.Unlock()
	return &transformer{chain: chain, dec: r.dec, encs: encs, defTopic: defTopic,
		log: r.log.With(zap.String("component", name)), steps: r.newStepTap(name, chain)}
}

func (r *Runner) runSource(ctx context.Context, t *task, s *Source) error {
	raw := s.Raw
	if s.Steps.Len() > 0 {
		raw = withJSONEncoding(s.Connector, raw)
	}
	cfg, err := DecodeConnector(s.Connector, raw, r.runSettings())
	if err != nil {
		return fmt.Errorf("source %q: %w", s.Name, err)
	}
	src, err := s.Connector.NewSource(s.Name, cfg)
	if err != nil {
		return err
	}
	if s.Steps.Len() > 0 {
		tr := r.transformer(s.ID(), s.Steps, s.Topic)
		tr.in = r.hub.Point(s.ID(), 0, observe.In)
		t.mu.Lock()
		t.tr = tr
		t.mu.Unlock()
		if rs, ok := src.(connectors.RawSource); ok {
			rs.EmitRaw() // the transformer builds the event from its fields
		}
		src = &transformSource{inner: src, t: tr, dlq: deadletter.Topic(s.Name)}
	}
	// An exactly-once source's transactional id is weir-source-<name>:
	// stable across restarts and reloads, one per source block.
	opts := r.sourceOptions(s)
	opts.Observe = r.observeSource(s.ID())
	return r.rt.RunSource(ctx, s.Name, src, opts)
}

// withJSONEncoding asks a source whose transforms re-encode its records
// for plain JSON values (when its kind offers an "encoding" setting with
// a "json" choice and the block leaves it unset): decoding Avro only to
// encode it again would cost a schema lookup per record.
func withJSONEncoding(k *connectors.Kind, raw map[string]any) map[string]any {
	f, ok := k.Spec.Field("encoding")
	if !ok || f.Type != connectors.String || !containsStr(f.Enum, "json") {
		return raw
	}
	if _, set := raw["encoding"]; set {
		return raw
	}
	m := make(map[string]any, len(raw)+1)
	for k, v := range raw {
		m[k] = v
	}
	m["encoding"] = "json"
	return m
}

func (r *Runner) runStream(ctx context.Context, t *task, s *Stream) error {
	if s.Stateful() {
		return r.runStatefulStream(ctx, t, s)
	}
	tr := r.transformer(s.ID(), s.Steps, s.To)
	tr.keyFn = s.keyFn
	tr.out, tr.fill = r.hub.Point(s.ID(), 0, observe.Out), r.fillRecord
	t.mu.Lock()
	t.tr = tr
	t.mu.Unlock()
	sink := &streamSink{t: tr, client: r.opts.Client}
	t.mu.Lock()
	t.out, t.outBytes = &sink.out, &sink.outBytes
	t.mu.Unlock()
	opts := connectors.SinkOptions{Topics: s.From, Group: s.Group, Balancer: s.Balancer, ExactlyOnce: s.ExactlyOnce,
		Observe: r.observeRecords(s.ID())}
	r.groupMember(&opts, s.Component, "")
	return r.rt.RunSink(ctx, s.Name, sink, opts)
}

func (r *Runner) runSink(ctx context.Context, _ *task, s *Sink) error {
	cfg, err := DecodeConnector(s.Connector, s.Raw, r.runSettings())
	if err != nil {
		return fmt.Errorf("sink %q: %w", s.Name, err)
	}
	eo, err := sinkExactlyOnce(s, cfg, r.opts.Client.Brokers)
	if err != nil {
		return err
	}
	sink, err := s.Connector.NewSink(s.Name, cfg)
	if err != nil {
		return err
	}
	opts := sinkOptions(s)
	opts.ExactlyOnce = eo
	opts.Observe = r.observeRecords(s.ID())
	r.groupMember(&opts, s.Component, s.InstanceID)
	return r.rt.RunSink(ctx, s.Name, sink, opts)
}

// sinkOptions are the runtime options of a sink block.
func sinkOptions(s *Sink) connectors.SinkOptions {
	return connectors.SinkOptions{Topics: s.From, Group: s.Group, Balancer: s.Balancer, InstanceID: s.InstanceID}
}

// applyTopics creates declared topics, raises partition counts, sets
// declared configs and registers value schemas (as "<topic>-value").
func (r *Runner) applyTopics(ctx context.Context, cfg *Config) error {
	for _, t := range cfg.Topics {
		r.mu.Lock()
		done := r.applied[t.Name] == t.Hash
		r.mu.Unlock()
		if done {
			continue
		}
		cfgs := map[string]*string{}
		for k, v := range t.Configs {
			v := v
			cfgs[k] = &v
		}
		resp, err := r.adm.CreateTopic(ctx, t.Partitions, t.ReplicationFactor, cfgs, t.Name)
		if err == nil {
			err = resp.Err
		}
		switch {
		case err == nil:
			r.log.Info("topic created", zap.String("topic", t.Name), zap.Int32("partitions", t.Partitions))
		case errors.Is(err, kerr.TopicAlreadyExists):
			if err := r.updateTopic(ctx, t); err != nil {
				return err
			}
		default:
			return fmt.Errorf("creating topic %s (%s): %w", t.Name, t.Range, err)
		}
		enc := codec.JSON
		if t.Schema != nil {
			if r.srcl == nil {
				return fmt.Errorf("topic %s declares an Avro schema but there is no schema registry", t.Name)
			}
			id, err := r.registerSchema(ctx, t)
			if err != nil {
				return err
			}
			enc = codec.NewAvroEncoder(id, t.Schema)
		}
		r.mu.Lock()
		r.encs[t.Name] = enc
		r.applied[t.Name] = t.Hash
		r.mu.Unlock()
	}
	return nil
}

func (r *Runner) registerSchema(ctx context.Context, t *Topic) (int32, error) {
	subject := t.Name + "-value"
	var lastErr error
	// The registry may still be reading its topic right after start.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ss, err := r.srcl.CreateSchema(ctx, subject, sr.Schema{Schema: t.SchemaText, Type: sr.TypeAvro})
		if err == nil {
			r.log.Debug("schema registered", zap.String("subject", subject), zap.Int("id", ss.ID), zap.Int("version", ss.Version))
			return int32(ss.ID), nil
		}
		lastErr = err
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode != 503 && re.StatusCode < 500 {
			return 0, fmt.Errorf("registering the schema of topic %s (%s) as %s: %w", t.Name, t.Range, subject, err)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("registering the schema of topic %s as %s: %w", t.Name, subject, lastErr)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (r *Runner) updateTopic(ctx context.Context, t *Topic) error {
	td, err := r.adm.ListTopics(ctx, t.Name)
	if err != nil {
		return fmt.Errorf("describing topic %s: %w", t.Name, err)
	}
	if d, ok := td[t.Name]; ok && d.Err == nil {
		have := int32(len(d.Partitions))
		switch {
		case have < t.Partitions:
			if _, err := r.adm.UpdatePartitions(ctx, int(t.Partitions), t.Name); err != nil {
				return fmt.Errorf("raising topic %s to %d partitions: %w", t.Name, t.Partitions, err)
			}
			r.log.Info("topic partitions raised", zap.String("topic", t.Name), zap.Int32("from", have), zap.Int32("to", t.Partitions))
		case have > t.Partitions:
			r.log.Warn("topic has more partitions than declared; Kafka cannot remove partitions",
				zap.String("topic", t.Name), zap.Int32("have", have), zap.Int32("declared", t.Partitions))
		}
	}
	if len(t.Configs) == 0 {
		return nil
	}
	var alters []kadm.AlterConfig
	for k, v := range t.Configs {
		v := v
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	resps, err := r.adm.AlterTopicConfigs(ctx, alters, t.Name)
	if err == nil {
		for _, rr := range resps {
			if rr.Err != nil {
				err = fmt.Errorf("%w: %s", rr.Err, rr.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("setting configs of topic %s: %w", t.Name, err)
	}
	return nil
}

// Stop stops every component (final flush and commit each) and waits.
// A worker leaves its group, so another worker takes over its
// singletons and partitions at once.
func (r *Runner) Stop() {
	r.mu.Lock()
	r.closing = true
	tasks := make([]*task, 0, len(r.running))
	for _, t := range r.running {
		tasks = append(tasks, t)
	}
	r.running = map[string]*task{}
	r.mu.Unlock()
	r.stopAll()
	for _, t := range tasks {
		<-t.done
	}
	final := r.statusOf(tasks)
	r.mu.Lock()
	if r.final == nil {
		r.final = final
	}
	r.mu.Unlock()
	r.stopped.Do(func() {
		r.stopWorker()
		r.admCl.Close()
	})
}

// Status is one component's live state.
type Status struct {
	ID    string
	Kind  string
	State string // starting, running, failed, stopped
	// RecordsIn/Out are totals since the process started (rates are the
	// caller's differences); Lag is records behind (sinks, streams) or in
	// flight (sources); Errors counts errors of every stage plus
	// transform errors.
	RecordsIn, RecordsOut float64
	Lag                   float64
	Errors                float64
	// BytesIn/Out are the key and value bytes of those records;
	// DeadLetters the records sent to the dead-letter topic.
	BytesIn, BytesOut float64
	DeadLetters       float64
	// Late counts records an aggregating stream dropped from windows
	// that had closed (past their grace period).
	Late      float64
	LastErr   error
	LastErrAt time.Time
	Starts    int
	// Topics are the figures per topic the component reads or writes
	// (the edges of the graph; weir_connector_topic_* metrics); nil
	// when it does not count per topic.
	Topics map[string]TopicCounts
}

// TopicCounts are a component's figures of one topic: records read from
// it (In) or acknowledged on it (Out), errors and dead letters of its
// records.
type TopicCounts struct {
	RecordsIn, RecordsOut, Errors, DeadLetters float64
}

// Status returns every component's state, sorted by ID; after Stop, the
// states and totals at the end of the last flush (the exit summary).
func (r *Runner) Status() []Status {
	r.mu.Lock()
	tasks := make([]*task, 0, len(r.running))
	for _, t := range r.running {
		tasks = append(tasks, t)
	}
	final := r.final
	closing := r.closing
	r.mu.Unlock()
	if closing && final != nil {
		return final
	}
	return r.statusOf(tasks)
}

func (r *Runner) statusOf(tasks []*task) []Status {
	mfs, _ := r.gather.Gather()
	vals := map[string]map[string]float64{}        // connector → metric → value
	topics := map[string]map[string]*TopicCounts{} // connector → topic → counts
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := labelValue(m, "connector")
			if name == "" {
				continue
			}
			if topic := labelValue(m, "topic"); topic != "" {
				addTopicMetric(topics, name, topic, mf.GetName(), m.GetCounter().GetValue())
				continue
			}
			if vals[name] == nil {
				vals[name] = map[string]float64{}
			}
			v := 0.0
			if c := m.GetCounter(); c != nil {
				v = c.GetValue()
			} else if g := m.GetGauge(); g != nil {
				v = g.GetValue()
			}
			vals[name][mf.GetName()] += v
		}
	}
	out := make([]Status, 0, len(tasks))
	for _, t := range tasks {
		m := vals[t.comp.Name]
		t.mu.Lock()
		st := Status{ID: t.comp.ID(), Kind: t.comp.Kind, State: t.state, LastErr: t.lastErr, LastErrAt: t.errAt, Starts: t.starts,
			RecordsIn: m["weir_connector_records_in_total"], RecordsOut: m["weir_connector_records_out_total"],
			Lag: m["weir_connector_lag_records"], Errors: m["weir_connector_errors_total"],
			BytesIn: m["weir_connector_bytes_in_total"], BytesOut: m["weir_connector_bytes_out_total"],
			DeadLetters: m["weir_connector_dead_letters_total"]}
		if t.tr != nil {
			st.Errors += float64(t.tr.errors.Load())
		}
		if tc := topics[t.comp.Name]; tc != nil {
			st.Topics = make(map[string]TopicCounts, len(tc))
			for k, v := range tc {
				st.Topics[k] = *v
			}
		}
		if t.app != nil {
			st.Topics = map[string]TopicCounts{}
			for _, m := range t.app.Metrics() {
				if i := strings.LastIndexByte(m.Task, '-'); i > 0 && containsStr(t.from, m.Task[:i]) {
					st.RecordsIn += float64(m.Processed) // input tasks, not repartition ones
					tc := st.Topics[m.Task[:i]]
					tc.RecordsIn += float64(m.Processed)
					tc.Errors += float64(m.DeadLetters)
					tc.DeadLetters += float64(m.DeadLetters)
					st.Topics[m.Task[:i]] = tc
				}
				st.Lag += float64(m.Lag)
				st.Errors += float64(m.DeadLetters)
				st.DeadLetters += float64(m.DeadLetters)
				st.Late += float64(m.LateDropped)
			}
			st.RecordsOut = float64(t.out.Load())
		} else if t.out != nil { // a stateless stream: results, not inputs written
			st.RecordsOut, st.BytesOut = float64(t.out.Load()), float64(t.outBytes.Load())
		}
		t.mu.Unlock()
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// FormatRate renders a records/s figure compactly.
func FormatRate(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
