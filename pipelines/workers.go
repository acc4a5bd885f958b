package pipelines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/internal/kafkaclient"
	"weir/pipelines/workgroup"
)

// WorkerOptions make a Runner one worker of a worker group
// (pipelines/workgroup): every `weir run` with the same pipeline files
// and group name shares the work.
//
//   - Singleton sources (their kind's Placement, e.g. mysql) run on the
//     one worker the group places them on, always transactional: the
//     transactional id weir-source-<name> is the same on every worker, so
//     a new owner's InitProducerId fences the old one's producer. A new
//     owner that finds no stored position of a singleton that ran before
//     (its positions topic deleted) fails with connectors.ErrPositionsLost
//     rather than starting from scratch (SourceOptions.RequirePositions).
//   - Per-worker sources (file, syslog, http) run on every worker, each
//     with its own positions (connector "<name>@<worker>").
//   - Sinks and streams run on every worker and share partitions through
//     their consumer groups, as static members with the instance id
//     "weir-<worker>-<component>" (or "<instance_id>-<worker>"; an
//     aggregating stream's streams app too: streams.Config.InstanceID), a short
//     session timeout, the cooperative-sticky balancer unless the block
//     names one, and a LeaveGroup on Stop.
type WorkerOptions struct {
	// Group is the worker group name (a Kafka group id).
	Group string
	// ID is this worker's id: unique in the group, stable across restarts.
	ID string
	// SessionTimeout of the worker group and of the sinks' and streams'
	// consumer groups (default workgroup.DefaultSessionTimeout, 6s).
	SessionTimeout time.Duration
}

// workerState is a Runner's worker-group side.
type workerState struct {
	opts     WorkerOptions
	g        *workgroup.Group
	assigned map[string]bool // singletons placed here (r.mu)
	single   map[string]bool // IDs of the applied singleton sources (r.mu)
	cancel   context.CancelFunc
	done     chan struct{}
	err      chan error
	started  sync.Once

	mu      sync.Mutex
	statics map[string]staticMember // by component ID: to leave on Stop or when removed

	// The status reporter (status.go).
	pipelines  string // hash of the applied pipeline files (r.mu)
	placement  map[string]string
	stat       *statusWriter
	statCancel context.CancelFunc
	statDone   chan struct{}
}

func (r *Runner) newWorker(o WorkerOptions) error {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = workgroup.DefaultSessionTimeout
	}
	w := &workerState{opts: o, assigned: map[string]bool{}, single: map[string]bool{},
		done: make(chan struct{}), err: make(chan error, 1), statics: map[string]staticMember{}}
	g, err := workgroup.New(workgroup.Config{Client: r.opts.Client, Group: o.Group, Worker: o.ID,
		SessionTimeout: o.SessionTimeout, Logger: r.log, Run: r.assign})
	if err != nil {
		return err
	}
	w.g = g
	r.wg = w
	return nil
}

// GroupErr delivers the worker group's fatal error (a name taken by a
// consumer group, a duplicate worker id); nil channel without a group.
func (r *Runner) GroupErr() <-chan error {
	if r.wg == nil {
		return nil
	}
	return r.wg.err
}

// Assignment is the worker group's last assignment (nil without a group
// or before the first).
func (r *Runner) Assignment() *workgroup.Assignment {
	if r.wg == nil {
		return nil
	}
	return r.wg.g.Assignment()
}

// placedHere reports whether component id runs on this worker (r.mu held).
func (r *Runner) placedHere(id string) bool {
	if r.wg == nil || !r.wg.single[id] {
		return true
	}
	return r.wg.assigned[id]
}

// assign is the worker group's Run callback: ids are the singletons this
// worker runs from now on.
func (r *Runner) assign(ids []string, _ *workgroup.Assignment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wg.assigned = map[string]bool{}
	for _, id := range ids {
		r.wg.assigned[id] = true
	}
	if changed := r.reconcileLocked(); len(changed) > 0 {
		r.log.Info("worker group: singletons placed", zap.Strings("run", ids), zap.Strings("started_or_stopped", changed))
	}
}

// workerApplied tells the group what this worker offers after an Apply,
// and joins the group the first time.
func (r *Runner) workerApplied(cfg *Config) {
	w := r.wg
	if w == nil {
		return
	}
	offered := map[string]string{}
	h := sha256.New()
	var lines []string
	for _, s := range cfg.Sources {
		if s.Connector.Placement == connectors.Singleton {
			var bt []string
			for _, b := range s.BlockTopics {
				bt = append(bt, b.Block+" "+b.Label+" "+b.Topic)
			}
			hs := settingsHash("source", s.Kind, rawJSON(s.Raw), s.Topic, strconv.FormatBool(s.ExactlyOnce), strings.Join(bt, ","))
			offered[s.ID()] = hs
			lines = append(lines, s.ID()+"="+hs)
		}
	}
	// Per-worker sources may differ from host to host (paths, ports);
	// everything else must be the same on every worker. The components'
	// own Hash covers every variable (a reload restarts on any change),
	// so these hashes are of the effective settings only.
	for _, s := range cfg.Streams {
		lines = append(lines, s.ID()+"="+settingsHash("stream", strings.Join(s.From, ","), s.To, s.Group, s.Balancer, strconv.FormatBool(s.ExactlyOnce)))
	}
	for _, s := range cfg.Sinks {
		lines = append(lines, s.ID()+"="+settingsHash("sink", s.Kind, rawJSON(s.Raw), strings.Join(s.From, ","), s.Group, s.Balancer, s.InstanceID))
	}
	for _, t := range cfg.Topics {
		lines = append(lines, "topic."+t.Name+"="+t.Hash)
	}
	sort.Strings(lines)
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	placement := map[string]string{}
	for _, s := range cfg.Sources {
		placement[s.ID()] = s.Connector.Placement.String()
	}
	for _, s := range cfg.Streams {
		placement[s.ID()] = "partitions"
	}
	for _, s := range cfg.Sinks {
		placement[s.ID()] = "partitions"
	}
	hash := hex.EncodeToString(h.Sum(nil))[:16]
	r.mu.Lock()
	w.pipelines, w.placement = hash, placement
	r.mu.Unlock()
	w.g.Update(hash, offered)
	w.started.Do(func() {
		r.startStatus()
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel = cancel
		go func() {
			defer close(w.done)
			if err := w.g.Run(ctx); err != nil {
				r.log.Error("worker group failed", zap.Error(err))
				w.err <- err
			}
		}()
	})
}

// settingsHash identifies settings across workers.
func settingsHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// sourceOptions are the runtime options of a source block.
func (r *Runner) sourceOptions(s *Source) connectors.SourceOptions {
	o := connectors.SourceOptions{Topic: s.Topic, ExactlyOnce: s.ExactlyOnce}
	if r.wg != nil {
		o.GroupWorker = r.wg.opts.ID
		if s.Connector.Placement == connectors.Singleton {
			o.ExactlyOnce = true // the transactional id fences a zombie owner
			// A new owner that finds no position of a singleton that ran
			// before fails instead of starting from scratch.
			o.RequirePositions = true
		} else {
			o.Worker = r.wg.opts.ID
		}
	}
	return o
}

// groupMember makes a sink's or stream's consumer a static member of its
// group with an instance id derived from the worker and the component.
func (r *Runner) groupMember(o *connectors.SinkOptions, c Component, instanceID string) {
	w := r.wg
	if w == nil {
		return
	}
	group := o.Group
	if group == "" {
		group = "weir-connect-" + c.Name
	}
	o.InstanceID = r.staticMember(group, c, instanceID)
	if o.Balancer == "" {
		// Cooperative: a rebalance moves only the partitions it must,
		// the others keep being consumed.
		o.Balancer = "cooperative-sticky"
	}
	o.SessionTimeout = w.opts.SessionTimeout
	o.HeartbeatInterval = w.heartbeat()
	// Partitions taken over are fetched only when the fetch in flight
	// returns: Kafka's consumer default instead of kgo's 5 s.
	o.FetchMaxWait = 500 * time.Millisecond
}

// staticMember returns the group.instance.id of component c's member of
// consumer group group in a worker group ("" without one): "<instanceID>-
// <worker>" when the block sets instance_id, else "weir-<worker>-<id>".
// It is remembered so that Stop leaves the group (a static member's
// client does not).
func (r *Runner) staticMember(group string, c Component, instanceID string) string {
	w := r.wg
	if w == nil {
		return ""
	}
	inst := "weir-" + w.opts.ID + "-" + c.ID()
	if instanceID != "" {
		inst = instanceID + "-" + w.opts.ID
	}
	m := staticMember{group: group, inst: inst}
	w.mu.Lock()
	old, had := w.statics[c.ID()]
	w.statics[c.ID()] = m
	w.mu.Unlock()
	if had && old != m {
		// Another group or instance id since the last start: the old
		// membership would hold its partitions until its session ends.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		old.leave(ctx, r)
		cancel()
	}
	return inst
}

// heartbeat is the heartbeat interval of the sinks' and streams'
// consumers: a sixth of the session timeout, at most 1 s, since a member
// hears of a rebalance (a restarted worker rejoining) only at its next
// heartbeat.
func (w *workerState) heartbeat() time.Duration {
	return min(w.opts.SessionTimeout/6, time.Second)
}

// streamsClient is the client options of an aggregating stream: in a
// worker group its consumers get the group's short session timeout (and
// the app a static instance id: staticMember).
func (r *Runner) streamsClient() kafkaclient.Options {
	o := r.opts.Client
	if r.wg != nil {
		o.Extra = append(slices.Clip(o.Extra), kgo.SessionTimeout(r.wg.opts.SessionTimeout),
			kgo.HeartbeatInterval(r.wg.heartbeat()), kgo.FetchMaxWait(500*time.Millisecond))
	}
	return o
}

// stopWorker leaves the worker group (after the components stopped) and
// every sink's consumer group, so their work moves at once.
func (r *Runner) stopWorker() {
	w := r.wg
	if w == nil {
		return
	}
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
	r.stopStatus()
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for _, m := range w.statics {
		m.leave(ctx, r)
	}
}

// staticMember is a sink's or stream's static membership of its
// consumer group.
type staticMember struct{ group, inst string }

// leave sends LeaveGroup for the member: its partitions move at once
// instead of after the session timeout (a static member's client does
// not leave when it closes).
func (m staticMember) leave(ctx context.Context, r *Runner) {
	if err := workgroup.LeaveStatic(ctx, r.admCl, m.group, m.inst, ""); err != nil {
		r.log.Warn("leaving a consumer group", zap.String("group", m.group), zap.String("instance_id", m.inst), zap.Error(err))
	}
}

// leaveRemoved makes the stopped components ids that are no longer
// declared leave their consumer groups (a changed one comes back under
// the same instance id and takes its place instead).
func (r *Runner) leaveRemoved(ids []string) {
	w := r.wg
	if w == nil || len(ids) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		m, ok := w.statics[id]
		if !ok {
			continue
		}
		delete(w.statics, id)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		m.leave(ctx, r)
		cancel()
	}
}
