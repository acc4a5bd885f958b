package group

// Offsets in transactions (KIP-98, KIP-447), as Kafka's
// OffsetMetadataManager keeps them: TxnOffsetCommit writes the offsets to
// the group's __consumer_offsets partition in a transactional batch of the
// producer; they are pending (not visible to OffsetFetch) until the
// transaction's marker is written to that partition: a commit makes them
// the group's committed offsets (each unless a later commit of the
// partition was written after it), an abort drops them. OffsetFetch with
// require_stable answers UNSTABLE_OFFSET_COMMIT for a partition with a
// pending offset, or one still being written (Kafka replays a write
// before it is committed, so a rebalancing consumer cannot read the old
// offset in that window); OffsetDelete and DeleteGroups tombstone pending offsets
// too; expiry keeps a partition with a pending offset, and a group with
// an open transaction.

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type txnMarker struct {
	producerID int64
	commit     bool
}

// txnCommitGroupError validates a TxnOffsetCommit against the group, as
// Kafka's ClassicGroup.validateOffsetCommit does for transactional
// commits: no REBALANCE_IN_PROGRESS, and a request without member id,
// instance id and generation (versions 0-2, or a producer outside a
// group) is accepted whatever the group's state.
func (m *Machine) txnCommitGroupError(g *group, req *kmsg.TxnOffsetCommitRequest) *kerr.Error {
	if g != nil && g.cg != nil {
		return m.consumerTxnCommitError(g.cg, req)
	}
	if g == nil {
		if req.Generation < 0 {
			return nil // a simple group, created by the commit
		}
		return kerr.IllegalGeneration
	}
	if req.Generation < 0 && g.is(Empty) {
		return nil
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if req.InstanceID != nil {
			if id, ok := g.static[*req.InstanceID]; !ok {
				return kerr.UnknownMemberID
			} else if id != req.MemberID {
				return kerr.FencedInstanceID
			}
		}
		if g.members[req.MemberID] == nil {
			return kerr.UnknownMemberID
		}
		if req.Generation != g.generation {
			return kerr.IllegalGeneration
		}
	}
	return nil
}

// TxnCommit handles a TxnOffsetCommit request whose producer the caller
// has verified to be in a transaction holding the group's partition.
// exists reports whether a topic partition exists (nil: all do); reply is
// called once the transactional batch is written (or at once on errors).
// Versions before 3 carry no member id, instance id or generation: the
// caller leaves them at their defaults ("", nil, -1).
func (m *Machine) TxnCommit(now time.Time, req *kmsg.TxnOffsetCommitRequest, exists func(topic string, partition int32) bool, reply func(*kmsg.TxnOffsetCommitResponse)) {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.Version = req.Version
	resp.Topics = make([]kmsg.TxnOffsetCommitResponseTopic, len(req.Topics))
	setAll := func(code int16) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	for i, rt := range req.Topics {
		resp.Topics[i].Topic = rt.Topic
		resp.Topics[i].Partitions = make([]kmsg.TxnOffsetCommitResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			resp.Topics[i].Partitions[j].Partition = rp.Partition
		}
	}
	if e := m.coordinatorError(req.Group); e != nil {
		setAll(e.Code)
		reply(resp)
		return
	}
	if req.ProducerID < 0 {
		// (Verification refuses it first; a batch without a producer
		// would not be transactional.)
		setAll(kerr.InvalidProducerIDMapping.Code)
		reply(resp)
		return
	}
	g := m.groups[req.Group]
	if e := m.txnCommitGroupError(g, req); e != nil {
		setAll(e.Code)
		reply(resp)
		return
	}
	slots, recs := m.commitRecords(req.Group, now, req.Version >= 2, exists, func(yield func(commitPart) bool) {
		for i, rt := range req.Topics {
			for j, rp := range rt.Partitions {
				if !yield(commitPart{i, j, rt.Topic, rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata}) {
					return
				}
			}
		}
	}, func(i, j int, code int16) { resp.Topics[i].Partitions[j].ErrorCode = code })
	if len(recs) == 0 {
		reply(resp)
		return
	}
	if g == nil {
		g = m.getOrCreate(req.Group, now, true)
	}
	for _, s := range slots {
		g.inflight[s.tp]++
		g.txnInflight[s.tp]++
	}
	pid := req.ProducerID
	m.writes = append(m.writes, &Write{Partition: g.partition, Records: recs, ProducerID: pid, ProducerEpoch: req.ProducerEpoch, done: func(now time.Time, err error) {
		for _, s := range slots {
			if g.inflight[s.tp]--; g.inflight[s.tp] <= 0 {
				delete(g.inflight, s.tp)
			}
			if g.txnInflight[s.tp]--; g.txnInflight[s.tp] <= 0 {
				delete(g.txnInflight, s.tp)
			}
		}
		if err != nil {
			code := txnWriteError(err, req.Version).Code
			for _, s := range slots {
				resp.Topics[s.i].Partitions[s.j].ErrorCode = code
			}
		} else if m.groups[g.id] == g {
			// (A group deleted since has tombstones after this batch.)
			offs := make(map[topicPartition]Offset, len(slots))
			for _, s := range slots {
				m.seq++
				s.o.order = m.seq
				offs[s.tp] = s.o
			}
			m.addPending(g, pid, offs)
		}
		m.dropIfUnused(g)
		reply(resp)
	}})
}

// addPending records offsets of producer pid as pending in g.
func (m *Machine) addPending(g *group, pid int64, offs map[topicPartition]Offset) {
	cur := g.txnOffsets[pid]
	if cur == nil {
		cur = map[topicPartition]Offset{}
		g.txnOffsets[pid] = cur
	}
	for tp, o := range offs {
		cur[tp] = o
	}
	byPID := m.openTxns[g.partition]
	if byPID == nil {
		byPID = map[int64]map[string]bool{}
		m.openTxns[g.partition] = byPID
	}
	if byPID[pid] == nil {
		byPID[pid] = map[string]bool{}
	}
	byPID[pid][g.id] = true
}

// untrackTxn removes g from the open-transaction index of pid.
func (m *Machine) untrackTxn(g *group, pid int64) {
	byPID := m.openTxns[g.partition]
	if byPID == nil {
		return
	}
	delete(byPID[pid], g.id)
	if len(byPID[pid]) == 0 {
		delete(byPID, pid)
	}
	if len(byPID) == 0 {
		delete(m.openTxns, g.partition)
	}
}

// TxnMarker applies a transaction marker of producerID written to
// __consumer_offsets partition p: on commit that producer's pending
// offsets of the groups of p become committed (each unless the partition
// has a committed offset written after it), on abort they are dropped.
// A marker for a partition still loading is applied when loading
// finishes (the replay may have passed it).
func (m *Machine) TxnMarker(now time.Time, p int32, producerID int64, commit bool) {
	if m.loading[p] {
		m.loadMarkers[p] = append(m.loadMarkers[p], txnMarker{producerID, commit})
		return
	}
	ids := m.openTxns[p][producerID]
	for id := range ids {
		g := m.groups[id]
		if g == nil || g.partition != p {
			continue
		}
		offs := g.txnOffsets[producerID]
		delete(g.txnOffsets, producerID)
		m.untrackTxn(g, producerID)
		if commit {
			for tp, o := range offs {
				if cur, ok := g.offsets[tp]; !ok || o.order > cur.order {
					g.offsets[tp] = o
				}
			}
		}
		m.dropIfUnused(g)
	}
	if byPID := m.openTxns[p]; byPID != nil {
		delete(byPID, producerID)
		if len(byPID) == 0 {
			delete(m.openTxns, p)
		}
	}
}

// hasPending reports whether any open transaction of g holds an offset of
// tp.
func (g *group) hasPending(tp topicPartition) bool {
	for _, offs := range g.txnOffsets {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}

// unstable reports whether a require_stable fetch of tp must wait: an
// open transaction holds an offset of it, or one is being written.
func (g *group) unstable(tp topicPartition) bool {
	return g.txnInflight[tp] > 0 || g.hasPending(tp)
}

// dropPending removes tp from every open transaction of g (an offset
// tombstone was written after them).
func (g *group) dropPending(tp topicPartition) {
	for _, offs := range g.txnOffsets {
		delete(offs, tp)
	}
}

// txnWriteError is the error a TxnOffsetCommit gets when its transactional
// batch could not be appended, as Kafka's
// CoordinatorOperationExceptionHelper maps it: the producer-state errors
// (INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, INVALID_TXN_STATE, ...) are
// answered as they are, the partition moving is NOT_COORDINATOR, too few
// replicas or a timeout COORDINATOR_NOT_AVAILABLE. TRANSACTION_ABORTABLE
// is INVALID_TXN_STATE before version 4, which does not know it.
func txnWriteError(err error, version int16) *kerr.Error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorNotAvailable
	}
	switch ke {
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NetworkException:
		return kerr.CoordinatorLoadInProgress
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.UnknownServerError
	case kerr.TransactionAbortable:
		if version < 4 {
			return kerr.InvalidTxnState
		}
	}
	return ke
}
