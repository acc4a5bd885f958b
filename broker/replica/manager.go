package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"weir/broker/internal/repeatlog"
	"weir/broker/log"
	"weir/broker/metadata"
	"weir/broker/quota"
	"weir/broker/tlsconf"
)

// Config configures a Manager.
type Config struct {
	// NodeID is this broker's node id.
	NodeID int32
	// Metadata is the broker's metadata view: partition states and the
	// brokers' addresses (for the fetchers).
	Metadata func() *metadata.Image
	// Alterer sends ISR changes to the controller (nil: the ISR never
	// changes, fine for a single replica).
	Alterer metadata.PartitionAlterer
	// LagTime is replica.lag.time.max.ms (default 30s).
	LagTime time.Duration
	// FetchMaxWait is replica.fetch.wait.max.ms (default 500ms).
	FetchMaxWait time.Duration
	// FetchMaxBytes is replica.fetch.response.max.bytes (default 10 MiB);
	// PartitionMaxBytes is replica.fetch.max.bytes (default 1 MiB).
	FetchMaxBytes, PartitionMaxBytes int32
	// Dial opens connections to other brokers (nil: plain TCP).
	Dial DialFunc
	// TLS, when set, is the inter-broker listener's TLS (its ssl.*
	// settings, broker/tlsconf): fetchers handshake with the leader's
	// inter-broker listener, presenting this broker's key store as the
	// client certificate and verifying the leader against the trust
	// store. Each new connection takes the stores in use (reloads apply).
	TLS *tlsconf.Server
	// HandshakeTimeout bounds the TLS handshake (default 10s).
	HandshakeTimeout time.Duration
	// OnLeader runs after this broker became a partition's leader (the
	// epoch is assigned, the partition takes produces right after);
	// OnFollower after it stopped leading. Both run on the goroutine
	// applying metadata, under no lock of the Manager; they must be
	// quick (open or close producer state, schedule group loading).
	OnLeader, OnFollower func(p *Partition)
	// OnTruncate runs after a follower cut its log's tail or restarted it
	// (the producer state of the removed records must go too).
	OnTruncate func(p *Partition)
	// OnReplicaAppend runs after a follower appended fetched batches
	// (records: the fetched bytes, info: what AppendReplica appended;
	// batches below info.FirstOffset were already there), on the
	// fetcher's goroutine, before the next append to p: the broker keeps
	// the follower's producer state up to date with it.
	OnReplicaAppend func(p *Partition, records []byte, info log.AppendInfo)
	// OnStorageError gets every error of a follower's writes to its log
	// (appends, truncation), so the broker can tell a full or failing
	// disk (see broker/kafka's storage state), with the partition whose
	// log it is; nil: ignored.
	OnStorageError func(topic string, partition int32, err error)
	// LeaderRate and FollowerRate are leader.replication.throttled.rate
	// and follower.replication.throttled.rate in bytes/s, read at every
	// check, so cheap (the broker keeps the parsed values, updated at each
	// dynamic change) (nil, < 0 or MaxInt64: unlimited); QuotaWindow is
	// replication.quota.window.num × .size.seconds (zero: 11 × 1 s).
	// See throttle.go.
	LeaderRate, FollowerRate func() int64
	QuotaWindow              quota.Window
	// Logger and Now (nil: none, time.Now).
	Logger *zap.Logger
	Now    func() time.Time
}

// Manager runs replication for the partitions this broker hosts: it
// applies leadership changes from the metadata, runs one fetcher per
// leader broker for the partitions it follows, and the leaders' ISR lag
// checks.
type Manager struct {
	cfg Config
	log *zap.Logger
	now func() time.Time
	// warn says repeated warnings (a refused ISR change, a failing
	// follower append) once per partition and state, with counts.
	warn *repeatlog.Limiter
	// leaderQuota and followerQuota are the replication throttles.
	leaderQuota, followerQuota *Throttle
	// throttledLists are the topics' throttled-replica lists, parsed.
	throttledLists throttledLists

	mu       sync.Mutex
	fetchers map[int32]*fetcher // by leader node id
	closed   bool

	stop chan struct{}
	wg   sync.WaitGroup
	all  sync.Map // *Partition -> struct{}

	// In-flight ISR proposals: ctx is canceled by Close, which then
	// waits for them (they log, and must not outlive the Manager).
	ctx       context.Context
	cancel    context.CancelFunc
	proposeMu sync.Mutex // guards proposing and its Add against Close
	proposing sync.WaitGroup
	noPropose bool
}

// NewManager returns a running Manager.
func NewManager(cfg Config) *Manager {
	if cfg.LagTime <= 0 {
		cfg.LagTime = 30 * time.Second
	}
	if cfg.FetchMaxWait <= 0 {
		cfg.FetchMaxWait = 500 * time.Millisecond
	}
	if cfg.FetchMaxBytes <= 0 {
		cfg.FetchMaxBytes = 10 << 20
	}
	if cfg.PartitionMaxBytes <= 0 {
		cfg.PartitionMaxBytes = 1 << 20
	}
	if cfg.Dial == nil {
		cfg.Dial = defaultDial
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, now: cfg.Now, fetchers: map[int32]*fetcher{}, stop: make(chan struct{})}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if m.log == nil {
		m.log = zap.NewNop()
	}
	if m.now == nil {
		m.now = time.Now
	}
	m.warn = repeatlog.New(m.log, zap.WarnLevel, 0, m.now)
	m.leaderQuota = NewThrottle(cfg.QuotaWindow, cfg.LeaderRate, m.now)
	m.followerQuota = NewThrottle(cfg.QuotaWindow, cfg.FollowerRate, m.now)
	if cfg.TLS != nil {
		m.cfg.Dial = m.tlsDial(cfg.Dial)
	}
	m.wg.Add(1)
	go m.tickLoop()
	return m
}

// Add starts tracking a hosted partition with its log; Update gives it a
// role.
func (m *Manager) Add(topic string, index int32, l *log.Log) *Partition {
	p := &Partition{Topic: topic, Index: index, m: m, log: l, leaderID: -1, epoch: -1, roleCh: make(chan struct{})}
	m.all.Store(p, struct{}{})
	return p
}

// Update applies the partition's metadata: leader or follower
// transitions when the leader or leader epoch changed, ISR changes for a
// leader otherwise.
func (m *Manager) Update(p *Partition, mp metadata.Partition) {
	self := m.cfg.NodeID
	p.leadMu.Lock()
	defer p.leadMu.Unlock()
	p.mu.Lock()
	if p.removed {
		p.mu.Unlock()
		return
	}
	prevRole := p.role
	switch {
	case mp.Leader == self:
		if p.role == RoleLeader && p.epoch == mp.LeaderEpoch {
			p.meta = mp
			p.applyLocked(p.ls.Committed(mp))
			p.mu.Unlock()
			return
		}
		fs := p.following
		p.following = nil
		p.mu.Unlock()
		m.unfollow(p, fs)
		m.becomeLeader(p, mp)
	case slices.Contains(mp.Replicas, self):
		if p.role != RoleLeader && p.leaderID == mp.Leader && p.epoch == mp.LeaderEpoch {
			p.meta = mp
			p.mu.Unlock()
			return
		}
		fs := p.following
		p.following = nil
		role := RoleFollower
		if mp.Leader < 0 {
			role = RoleNone
		}
		p.changeRoleLocked(role, mp.Leader, mp.LeaderEpoch)
		p.ls = nil
		p.meta = mp
		if role == RoleFollower {
			p.following = &fetchState{epoch: mp.LeaderEpoch}
		}
		next := p.following
		p.mu.Unlock()
		m.unfollow(p, fs)
		if prevRole == RoleLeader && m.cfg.OnFollower != nil {
			m.cfg.OnFollower(p)
		}
		if next != nil {
			m.follow(p, mp.Leader, next)
		}
		m.log.Debug("partition follows", zap.String("partition", p.Name()), zap.Int32("leader", mp.Leader), zap.Int32("leader_epoch", mp.LeaderEpoch))
	default:
		// Not a replica any more (not expected without reassignment).
		p.mu.Unlock()
		m.removeLocked(p)
	}
}

func (m *Manager) becomeLeader(p *Partition, mp metadata.Partition) {
	if err := p.log.AssignEpoch(mp.LeaderEpoch); err != nil {
		m.log.Error("recording the leader epoch failed", zap.String("partition", p.Name()), zap.Int32("leader_epoch", mp.LeaderEpoch), zap.Error(err))
	}
	p.mu.Lock()
	p.changeRoleLocked(RoleLeader, m.cfg.NodeID, mp.LeaderEpoch)
	p.meta = mp
	p.ls = NewLeaderState(m.cfg.NodeID, mp, p.log.EndOffset(), p.log.HighWatermark(), m.cfg.LagTime, m.now())
	p.applyLocked(p.ls.Appended(p.log.EndOffset()))
	p.mu.Unlock()
	if m.cfg.OnLeader != nil {
		m.cfg.OnLeader(p)
	}
	m.log.Debug("partition leads", zap.String("partition", p.Name()), zap.Int32("leader_epoch", mp.LeaderEpoch),
		zap.Int64("log_end_offset", p.log.EndOffset()), zap.Int64("high_watermark", p.log.HighWatermark()))
}

// Remove stops replicating p (topic deleted, or shutdown).
func (m *Manager) Remove(p *Partition) {
	p.leadMu.Lock()
	defer p.leadMu.Unlock()
	m.removeLocked(p)
}

func (m *Manager) removeLocked(p *Partition) {
	p.mu.Lock()
	if p.removed {
		p.mu.Unlock()
		return
	}
	p.removed = true
	fs := p.following
	p.following = nil
	wasLeader := p.role == RoleLeader
	p.changeRoleLocked(RoleNone, -1, p.epoch)
	p.ls = nil
	p.mu.Unlock()
	m.unfollow(p, fs)
	if wasLeader && m.cfg.OnFollower != nil {
		m.cfg.OnFollower(p)
	}
	m.all.Delete(p)
}

// follow hands p to the fetcher of leader.
func (m *Manager) follow(p *Partition, leader int32, fs *fetchState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	f := m.fetchers[leader]
	if f == nil {
		f = newFetcher(m, leader)
		m.fetchers[leader] = f
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			f.run()
		}()
	}
	f.add(p, fs)
}

// unfollow takes p off its fetcher and waits until no append of that
// fetcher to p is in flight.
func (m *Manager) unfollow(p *Partition, fs *fetchState) {
	if fs == nil {
		return
	}
	m.mu.Lock()
	for _, f := range m.fetchers {
		f.remove(p, fs)
	}
	m.mu.Unlock()
	fs.appendMu.Lock() // appends run under it: none in flight after this
	fs.stopped = true
	fs.appendMu.Unlock()
}

// startPropose runs propose in the background, unless the Manager is
// closed.
func (m *Manager) startPropose(p *Partition, ls *LeaderState, req metadata.AlterPartition) {
	m.proposeMu.Lock()
	defer m.proposeMu.Unlock()
	if m.noPropose {
		return
	}
	m.proposing.Add(1)
	go func() {
		defer m.proposing.Done()
		m.propose(p, ls, req)
	}()
}

// propose sends an ISR change to the controller.
func (m *Manager) propose(p *Partition, ls *LeaderState, req metadata.AlterPartition) {
	if m.cfg.Alterer == nil {
		p.mu.Lock()
		if p.ls == ls {
			ls.ProposalFailed()
		}
		p.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	m.log.Info("proposing ISR change", zap.String("partition", p.Name()), zap.Int32s("isr", req.ISR),
		zap.Int32("leader_epoch", req.LeaderEpoch), zap.Int32("partition_epoch", req.PartitionEpoch))
	np, err := m.cfg.Alterer.AlterPartition(ctx, req)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ls != ls {
		return
	}
	if err != nil {
		if m.ctx.Err() == nil {
			m.warn.Log("isr/"+p.Name(), fmt.Sprint(req.ISR, req.LeaderEpoch, req.PartitionEpoch, err),
				"ISR change refused or failed", zap.String("partition", p.Name()), zap.Int32s("isr", req.ISR), zap.Error(err))
		}
		ls.ProposalFailed()
		return
	}
	m.warn.End("isr/" + p.Name())
	// Normally the metadata watcher delivered this already.
	if np.LeaderEpoch == p.epoch {
		p.applyLocked(ls.Committed(np))
	}
}

// tickLoop runs the leaders' ISR lag checks every LagTime/4.
func (m *Manager) tickLoop() {
	defer m.wg.Done()
	t := time.NewTicker(max(m.cfg.LagTime/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		now := m.now()
		m.all.Range(func(k, _ any) bool {
			k.(*Partition).tick(now)
			return true
		})
	}
}

// Close stops the fetchers and the lag checks. The partitions keep their
// roles (the Kafka server stops serving them).
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	fs := make([]*fetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fs = append(fs, f)
	}
	m.mu.Unlock()
	close(m.stop)
	for _, f := range fs {
		f.shutdown()
	}
	m.wg.Wait()
	m.proposeMu.Lock()
	m.noPropose = true
	m.proposeMu.Unlock()
	m.cancel()
	m.proposing.Wait()
	m.warn.Flush()
}

// storageError passes a follower's log write error of p on.
func (m *Manager) storageError(p *Partition, err error) {
	if m.cfg.OnStorageError != nil {
		m.cfg.OnStorageError(p.Topic, p.Index, err)
	}
}

// isrEligible reports whether broker id may join the ISR of a partition
// now: it is registered, not fenced (Kafka's
// Partition.isReplicaIsrEligible, KIP-841) and the log directory of its
// replica takes writes (metadata.Image.ReplicaWritable). A leader does not
// propose anyone else: the controller would refuse, and the leader would
// ask again at the follower's next fetch.
func (m *Manager) isrEligible(id int32, topic string, partition int32) bool {
	if m.cfg.Metadata == nil {
		return true
	}
	return m.cfg.Metadata().ReplicaWritable(id, topic, partition)
}

// brokerAddr returns a broker's Kafka address from the metadata.
func (m *Manager) brokerAddr(id int32) (string, bool) {
	if m.cfg.Metadata == nil {
		return "", false
	}
	b, ok := m.cfg.Metadata().Broker(id)
	if !ok {
		return "", false
	}
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
}

var errStopped = errors.New("fetcher stopped")

// throttled reports whether this broker's replica of p is listed in the
// topic config name (LeaderThrottledReplicas, FollowerThrottledReplicas).
func (m *Manager) throttled(p *Partition, name string) bool {
	if m.cfg.Metadata == nil {
		return false
	}
	t, ok := m.cfg.Metadata().Topic(p.Topic)
	if !ok {
		return false
	}
	v := t.Configs[name]
	return v != "" && m.throttledLists.throttled(p.Topic, name, v, p.Index, m.cfg.NodeID)
}

// LeaderThrottle decides a follower's fetch of p on this leader: throttled
// when p's replica here is in leader.replication.throttled.replicas (the
// bytes sent count against leader.replication.throttled.rate: RecordLeader),
// hold when the rate is exceeded and replica is not in the ISR (answer
// no records).
func (m *Manager) LeaderThrottle(p *Partition, replica int32) (throttled, hold bool) {
	if !m.leaderQuota.Limited() || !m.throttled(p, LeaderThrottledReplicas) {
		return false, false
	}
	p.mu.Lock()
	inSync := p.ls != nil && slices.Contains(p.ls.ISR(), replica)
	p.mu.Unlock()
	return true, !inSync && m.leaderQuota.Exceeded()
}

// RecordLeader counts n bytes sent to a follower for throttled partitions.
func (m *Manager) RecordLeader(n int64) { m.leaderQuota.Record(n) }

// ReplicationRates returns the measured leader and follower throttled
// replication rates in bytes/s.
func (m *Manager) ReplicationRates() (leader, follower float64) {
	return m.leaderQuota.Rate(), m.followerQuota.Rate()
}
