package kafka

// Wiring of replication (weir/broker/replica) into the server: the
// replica manager follows the partition table's leadership changes. Every
// replica keeps the partition's producer state (broker/txn): a leader
// through its appends, a follower by applying the batches it fetches
// (onReplicaAppend; opened from its newest snapshot and the log at the
// first one), so a new leader has the ongoing transactions, sequences and
// aborted-transaction index without a replay; a follower whose tail was
// truncated rebuilds it from the log. When this broker becomes leader of
// __consumer_offsets or __transaction_state it loads that partition's
// groups (transactional ids), and unloads them when it stops leading.

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"weir/broker/group"
	"weir/broker/log"
	"weir/broker/metadata"
	"weir/broker/quota"
	"weir/broker/replica"
	"weir/broker/txn"
	"weir/broker/txncoord"
)

func (s *Server) newReplicaManager() *replica.Manager {
	alt, _ := s.meta.(metadata.PartitionAlterer)
	lag := s.cfg.ReplicaLagTime
	if lag <= 0 {
		if v, _, ok := s.cfg.BrokerConfig.Value("replica.lag.time.max.ms"); ok {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
				lag = time.Duration(ms) * time.Millisecond
			}
		}
	}
	return replica.NewManager(replica.Config{
		NodeID:           s.cfg.NodeID,
		Metadata:         s.meta.Image,
		Alterer:          alt,
		LagTime:          lag,
		FetchMaxWait:     s.cfg.ReplicaFetchMaxWait,
		Dial:             s.cfg.ReplicaDial,
		TLS:              s.cfg.ReplicaTLS,
		HandshakeTimeout: s.cfg.HandshakeTimeout,
		OnLeader:         s.onLeader,
		OnFollower:       s.onFollower,
		OnTruncate:       s.onTruncate,
		OnReplicaAppend:  s.onReplicaAppend,
		OnStorageError:   s.storageError,
		LeaderRate:       s.brokerLongLive("leader.replication.throttled.rate"),
		FollowerRate:     s.brokerLongLive("follower.replication.throttled.rate"),
		QuotaWindow:      s.replicationQuotaWindow(),
		Logger:           s.log.Named("replica"),
		Now:              s.now,
	})
}

// hosted returns the partition of a replica.Partition.
func (s *Server) hosted(rp *replica.Partition) *partition {
	if v, ok := s.hostedBy.Load(rp); ok {
		return v.(*partition)
	}
	return nil
}

func (s *Server) onLeader(rp *replica.Partition) {
	p := s.hosted(rp)
	if p == nil {
		return
	}
	s.openProducerState(rp.Topic, p)
	if rp.Topic == group.OffsetsTopic {
		go s.followGroupLeadership(rp)
	}
	if rp.Topic == txncoord.StateTopic {
		go s.followTxnLeadership(rp)
	}
}

func (s *Server) onFollower(rp *replica.Partition) {
	p := s.hosted(rp)
	if p == nil {
		return
	}
	// The producer state stays open: the follower keeps it up to date
	// from the fetched batches (onReplicaAppend), as Kafka's followers do.
	if rp.Topic == group.OffsetsTopic {
		go s.followGroupLeadership(rp)
	}
	if rp.Topic == txncoord.StateTopic {
		go s.followTxnLeadership(rp)
	}
}

func (s *Server) onTruncate(rp *replica.Partition) {
	p := s.hosted(rp)
	if p == nil {
		return
	}
	// The state covers records that are gone: rebuild it from the log
	// (which also removes the snapshots past the new log end).
	p.prodMu.Lock()
	prod := p.prod
	p.prod = nil
	p.prodMu.Unlock()
	if prod != nil {
		prod.Discard()
	}
	s.openProducerState(rp.Topic, p)
}

// onReplicaAppend applies a follower's fetched batches to its producer
// state (opened from the log the first time: that replay covers them).
func (s *Server) onReplicaAppend(rp *replica.Partition, records []byte, info log.AppendInfo) {
	p := s.hosted(rp)
	if p == nil {
		return
	}
	prod := p.producers()
	if prod == nil {
		s.openProducerState(rp.Topic, p)
		return
	}
	if err := prod.ApplyReplica(records, info.FirstOffset); err != nil && !errors.Is(err, txn.ErrClosed) {
		s.storageError(rp.Topic, p.index, err)
		s.log.Warn("applying replicated batches to the producer state failed; rebuilding it from the log",
			zap.String("topic", rp.Topic), zap.Int32("partition", p.index), zap.Error(err))
		p.prodMu.Lock()
		if p.prod == prod {
			p.prod = nil
		}
		p.prodMu.Unlock()
		prod.Discard()
	}
}

// followGroupLeadership loads or unloads an offsets partition's groups to
// match this broker's current role for it (decided when it runs, under
// groupMu, so the order of the goroutines does not matter).
func (s *Server) followGroupLeadership(rp *replica.Partition) {
	// The hooks run inside the partition table's sync: wait until it has
	// published the table holding this partition (Replay looks it up).
	s.waitPartsPublished()
	l := &s.groupCoord
	coord, ok := l.running()
	if !ok {
		return // loaded (only what it leads) when the coordinator starts
	}
	l.follow(s, rp, "loading groups of a led offsets partition failed",
		// Loaded in this leader epoch already (by this or the
		// coordinator's start): a reload would drop the live groups'
		// members.
		func(p, epoch int32) bool { at, ok := l.epochs[p]; return coord.Serving(p) && (!ok || at == epoch) },
		func(p, _ int32) error { return coord.Load(p) }, coord.Unload)
}

// waitPartsPublished waits until the partition table being synced is
// published: the leadership hooks run inside the sync, and the
// coordinators' Replay looks the partition up in the table.
func (s *Server) waitPartsPublished() {
	s.parts.mu.Lock()
	//lint:ignore SA2001 a barrier: taking the lock waits for the table's publication
	s.parts.mu.Unlock()
}

// Leads reports whether this broker leads the partition now (it has
// taken over in its replica state, not only been elected in the
// metadata). For tests and tools.
func (s *Server) Leads(topic string, p int32) bool {
	_, part := s.parts.lookup(topic, p)
	if part == nil || part.rep == nil {
		return false
	}
	role, _, _ := part.rep.State()
	return role == replica.RoleLeader
}

// LeaderISR returns the partition's ISR as this broker, its leader, knows
// it; nil when it does not lead the partition.
func (s *Server) LeaderISR(topic string, p int32) []int32 {
	_, part := s.parts.lookup(topic, p)
	if part == nil || part.rep == nil {
		return nil
	}
	return part.rep.ISR()
}

// brokerLong returns a reader of a LONG broker config (dynamic configs
// apply at the next read); -1 when unset or invalid.
func (s *Server) brokerLong(name string) func() int64 {
	return func() int64 {
		v, _, ok := s.cfg.BrokerConfig.Value(name)
		if !ok {
			return -1
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
}

// brokerLongLive is brokerLong for a value read on every fetch: parsed
// once and again at each dynamic change of name (topicconfig.Broker
// OnChange), the reader only loads it. The watch lives as long as the
// broker config (as the quota watches do).
func (s *Server) brokerLongLive(name string) func() int64 {
	var (
		mu sync.Mutex // orders the first read and the watch's reads
		v  atomic.Int64
	)
	parse := s.brokerLong(name)
	load := func() {
		mu.Lock()
		v.Store(parse())
		mu.Unlock()
	}
	s.cfg.BrokerConfig.OnChange(func(names []string) {
		if slices.Contains(names, name) {
			load()
		}
	})
	load()
	return v.Load
}

// replicationQuotaWindow is replication.quota.window.num ×
// replication.quota.window.size.seconds (Kafka's defaults 11 × 1 s).
func (s *Server) replicationQuotaWindow() quota.Window {
	w := quota.DefaultWindow
	if n := s.brokerLong("replication.quota.window.num")(); n > 0 {
		w.Samples = int(n)
	}
	if n := s.brokerLong("replication.quota.window.size.seconds")(); n > 0 {
		w.SizeMs = n * 1000
	}
	return w
}
