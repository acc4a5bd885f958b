package kafka

// Wiring of replication (weir/broker/replica) into the server: the
// replica manager follows the partition table's leadership changes; when
// this broker becomes a partition's leader it loads the partition's
// producer state (rebuilt from the log, so idempotence survives a leader
// change) and, for __consumer_offsets, the groups of that partition (for
// __transaction_state, its transactional ids); when it stops leading it
// snapshots and drops the producer state and unloads the groups (the
// transactional ids). A follower whose tail was truncated prunes the producer
// snapshots past its new log end.

import (
	"strconv"
	"time"

	"go.uber.org/zap"

	"weir/broker/group"
	"weir/broker/metadata"
	"weir/broker/replica"
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
		OnStorageError:   s.storageError,
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
	s.closeProducerState(rp.Topic, p)
	if rp.Topic == group.OffsetsTopic {
		go s.followGroupLeadership(rp)
	}
	if rp.Topic == txncoord.StateTopic {
		go s.followTxnLeadership(rp)
	}
}

func (s *Server) onTruncate(rp *replica.Partition) {
	if p := s.hosted(rp); p != nil && p.producers() == nil {
		s.pruneProducerSnapshots(rp.Topic, p)
	}
}

// followGroupLeadership loads or unloads an offsets partition's groups to
// match this broker's current role for it (decided when it runs, under
// groupMu, so the order of the goroutines does not matter).
func (s *Server) followGroupLeadership(rp *replica.Partition) {
	// The hooks run inside the partition table's sync: wait until it has
	// published the table holding this partition (Replay looks it up).
	s.parts.mu.Lock()
	//lint:ignore SA2001 a barrier: taking the lock waits for the table's publication
	s.parts.mu.Unlock()
	gs := s.groupSupport()
	gs.mu.Lock()
	coord := gs.coord
	gs.mu.Unlock()
	if coord == nil {
		return // loaded (only what it leads) when the coordinator starts
	}
	s.groupMu.Lock()
	defer s.groupMu.Unlock()
	if s.groupEpochs == nil {
		s.groupEpochs = map[int32]int32{}
	}
	p := rp.Index
	role, _, epoch := rp.State()
	if role != replica.RoleLeader {
		coord.Unload(p)
		delete(s.groupEpochs, p)
		return
	}
	// Loaded in this leader epoch already (by this or the coordinator's
	// start): a reload would drop the live groups' members.
	if loadedAt, ok := s.groupEpochs[p]; coord.Serving(p) && (!ok || loadedAt == epoch) {
		s.groupEpochs[p] = epoch
		return
	}
	if err := coord.Load(p); err != nil {
		s.log.Warn("loading groups of a led offsets partition failed", zap.Int32("partition", p), zap.Error(err))
		return
	}
	s.groupEpochs[p] = epoch
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
