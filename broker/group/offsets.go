package group

import (
	"errors"
	"iter"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerProtocol is the protocol type of Kafka consumers.
const ConsumerProtocol = "consumer"

// commitGroupError validates an OffsetCommit against the group, as
// Kafka's doCommitOffsets does; nil means the commit may proceed.
func (m *Machine) commitGroupError(now time.Time, g *group, req *kmsg.OffsetCommitRequest) *kerr.Error {
	if g == nil {
		if req.Generation < 0 {
			return nil // simple (non-group) commit: creates the group
		}
		return kerr.IllegalGeneration
	}
	if g.cg != nil {
		return m.consumerCommitError(g.cg, req)
	}
	if g.fenced(req.InstanceID, req.MemberID) {
		return kerr.FencedInstanceID
	}
	if req.Generation < 0 && g.is(Empty) {
		return nil
	}
	if g.is(CompletingRebalance) {
		return kerr.RebalanceInProgress
	}
	mb := g.members[req.MemberID]
	if mb == nil {
		return kerr.UnknownMemberID
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	mb.deadline = now.Add(mb.sessionTimeout)
	return nil
}

// Commit handles an OffsetCommit request. exists reports whether a topic
// partition exists (nil: all do); reply is called once the commit is
// written (or at once on errors).
func (m *Machine) Commit(now time.Time, req *kmsg.OffsetCommitRequest, exists func(topic string, partition int32) bool, reply func(*kmsg.OffsetCommitResponse)) {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(req.Topics))
	setAll := func(code int16) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	}
	for i, rt := range req.Topics {
		resp.Topics[i].Topic = rt.Topic
		resp.Topics[i].Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			resp.Topics[i].Partitions[j].Partition = rp.Partition
		}
	}
	if e := m.coordinatorError(req.Group); e != nil {
		setAll(e.Code)
		reply(resp)
		return
	}
	g := m.groups[req.Group]
	if e := m.commitGroupError(now, g, req); e != nil {
		setAll(e.Code)
		reply(resp)
		return
	}
	slots, recs := m.commitRecords(req.Group, now, req.Version >= 6, exists, func(yield func(commitPart) bool) {
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
	}
	m.write(g.partition, recs, func(now time.Time, err error) {
		for _, s := range slots {
			if g.inflight[s.tp]--; g.inflight[s.tp] <= 0 {
				delete(g.inflight, s.tp)
			}
		}
		if err != nil {
			code := writeError(err).Code
			for _, s := range slots {
				resp.Topics[s.i].Partitions[s.j].ErrorCode = code
			}
		} else if m.groups[g.id] == g {
			// (A group deleted since has tombstones after this commit.)
			for _, s := range slots {
				m.seq++
				s.o.order = m.seq
				g.offsets[s.tp] = s.o
			}
		}
		m.dropIfUnused(g)
		reply(resp)
	})
}

// commitPart is one partition of an OffsetCommit or TxnOffsetCommit
// request; i, j are its topic's and its own index in the request (and
// the response).
type commitPart struct {
	i, j        int
	topic       string
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    *string
}

// commitSlot is a partition a commit writes: its place in the response
// (i, j), its key and its offset.
type commitSlot struct {
	i, j int
	tp   topicPartition
	o    Offset
}

// commitRecords checks the partitions of a commit of group (the
// metadata's size, the partition's existence: refused gets the error of
// one it refuses) and returns the slots and records of the others, the
// offsets committed at now; withEpoch: the request's version carries
// leader epochs (else they are -1). The strings are copied (the request
// aliases the read buffer). Commit and TxnCommit share it, so both
// check their partitions the same way.
func (m *Machine) commitRecords(group string, now time.Time, withEpoch bool, exists func(topic string, partition int32) bool,
	parts iter.Seq[commitPart], refused func(i, j int, code int16)) ([]commitSlot, []Record) {
	var (
		slots []commitSlot
		recs  []Record
	)
	nowMs := now.UnixMilli()
	for cp := range parts {
		md := ""
		if cp.metadata != nil {
			md = *cp.metadata
		}
		switch {
		case len(md) > m.cfg.OffsetMetadataMaxBytes:
			refused(cp.i, cp.j, kerr.OffsetMetadataTooLarge.Code)
			continue
		case exists != nil && !exists(cp.topic, cp.partition):
			refused(cp.i, cp.j, kerr.UnknownTopicOrPartition.Code)
			continue
		}
		o := Offset{Offset: cp.offset, LeaderEpoch: cp.leaderEpoch, Metadata: strings.Clone(md), CommitTimestamp: nowMs}
		if !withEpoch {
			o.LeaderEpoch = -1
		}
		tp := topicPartition{strings.Clone(cp.topic), cp.partition}
		slots = append(slots, commitSlot{cp.i, cp.j, tp, o})
		recs = append(recs, Record{Key: offsetKey(group, tp.topic, tp.partition), Value: offsetValue(o)})
	}
	return slots, recs
}

// FetchOffsets returns the committed offsets of group for topics (nil:
// every committed offset, sorted). Unknown groups and partitions without
// a commit get offset -1. With requireStable (KIP-447), a partition with a
// pending transactional offset gets UNSTABLE_OFFSET_COMMIT (offset -1)
// instead, as in Kafka's OffsetMetadataManager.fetchOffsets.
func (m *Machine) FetchOffsets(group string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) ([]kmsg.OffsetFetchResponseTopic, *kerr.Error) {
	if e := m.coordinatorError(group); e != nil {
		return nil, e
	}
	g := m.groups[group]
	part := func(tp topicPartition) kmsg.OffsetFetchResponseTopicPartition {
		p := kmsg.NewOffsetFetchResponseTopicPartition()
		p.Partition = tp.partition
		p.Offset, p.LeaderEpoch, p.Metadata = -1, -1, kmsg.StringPtr("")
		if requireStable && g != nil && g.unstable(tp) {
			p.ErrorCode = kerr.UnstableOffsetCommit.Code
			return p
		}
		if g != nil {
			if o, ok := g.offsets[tp]; ok {
				p.Offset, p.LeaderEpoch, p.Metadata = o.Offset, o.LeaderEpoch, kmsg.StringPtr(o.Metadata)
			}
		}
		return p
	}
	var out []kmsg.OffsetFetchResponseTopic
	if topics == nil {
		if g == nil {
			return []kmsg.OffsetFetchResponseTopic{}, nil
		}
		tps := make([]topicPartition, 0, len(g.offsets))
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
		sort.Slice(tps, func(i, j int) bool {
			if tps[i].topic != tps[j].topic {
				return tps[i].topic < tps[j].topic
			}
			return tps[i].partition < tps[j].partition
		})
		for _, tp := range tps {
			if len(out) == 0 || out[len(out)-1].Topic != tp.topic {
				out = append(out, kmsg.OffsetFetchResponseTopic{Topic: tp.topic})
			}
			t := &out[len(out)-1]
			t.Partitions = append(t.Partitions, part(tp))
		}
		return out, nil
	}
	out = make([]kmsg.OffsetFetchResponseTopic, len(topics))
	for i, rt := range topics {
		out[i].Topic = rt.Topic
		out[i].Partitions = make([]kmsg.OffsetFetchResponseTopicPartition, len(rt.Partitions))
		for j, p := range rt.Partitions {
			out[i].Partitions[j] = part(topicPartition{rt.Topic, p})
		}
	}
	return out, nil
}

// subscribed returns the topics the group's consumer members subscribe
// to, from their protocol metadata; ok is false when that is unknown
// (not a consumer group, or undecodable metadata).
func (g *group) subscribed() (topics map[string]bool, ok bool) {
	if g.cg != nil {
		topics = map[string]bool{}
		for _, mb := range g.cg.members {
			for _, t := range mb.topics {
				topics[t] = true
			}
			if mb.re != nil {
				for _, t := range mb.re.matched {
					topics[t] = true
				}
			}
		}
		return topics, true
	}
	if g.protocolType != ConsumerProtocol {
		return nil, false
	}
	topics = map[string]bool{}
	for _, mb := range g.members {
		md := mb.metadataFor(g.protocol)
		if md == nil && len(mb.protocols) > 0 {
			md = mb.protocols[0].metadata
		}
		var cm kmsg.ConsumerMemberMetadata
		if err := cm.ReadFrom(md); err != nil {
			return nil, false
		}
		for _, t := range cm.Topics {
			topics[t] = true
		}
	}
	return topics, true
}

// DeleteOffsets handles an OffsetDelete request: offsets of topics the
// (non-empty consumer) group still subscribes to are kept with
// GROUP_SUBSCRIBED_TO_TOPIC; a non-empty group of another protocol type
// gets NON_EMPTY_GROUP. reply is called after the tombstones are written.
func (m *Machine) DeleteOffsets(now time.Time, req *kmsg.OffsetDeleteRequest, reply func(*kmsg.OffsetDeleteResponse)) {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	if e := m.coordinatorError(req.Group); e != nil {
		resp.ErrorCode = e.Code
		reply(resp)
		return
	}
	g := m.groups[req.Group]
	if g == nil {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		reply(resp)
		return
	}
	if !g.is(Empty) && g.protocolType != ConsumerProtocol {
		resp.ErrorCode = kerr.NonEmptyGroup.Code
		reply(resp)
		return
	}
	subs, known := g.subscribed()
	var (
		recs []Record
		gone []topicPartition
	)
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetDeleteResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetDeleteResponseTopicPartition()
			p.Partition = rp.Partition
			tp := topicPartition{rt.Topic, rp.Partition}
			if !g.is(Empty) && (!known || subs[rt.Topic]) {
				p.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := g.offsets[tp]; ok || g.inflight[tp] > 0 || g.hasPending(tp) {
				// (A pending transactional offset is tombstoned too:
				// the tombstone follows it, so its commit marker
				// restores nothing.)
				recs = append(recs, Record{Key: offsetKey(g.id, tp.topic, tp.partition)})
				gone = append(gone, tp)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if len(recs) == 0 {
		reply(resp)
		return
	}
	for _, tp := range gone {
		delete(g.offsets, tp)
		g.dropPending(tp)
	}
	m.write(g.partition, recs, func(now time.Time, err error) {
		if err != nil {
			resp.ErrorCode = writeError(err).Code
		}
		reply(resp)
	})
}

// expireOffsets removes offsets older than offsets.retention.minutes:
// for an Empty group counted from when it became empty (from the commit
// for groups that only commit), for a Stable consumer group only the
// offsets of topics it no longer subscribes to, from their commit. An
// Empty group left with nothing is deleted.
func (m *Machine) expireOffsets(now time.Time) {
	ids := make([]string, 0, len(m.groups))
	for id := range m.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	nowMs := now.UnixMilli()
	ret := m.cfg.OffsetsRetention.Milliseconds()
	for _, id := range ids {
		g := m.groups[id]
		var subs map[string]bool
		switch {
		case g.is(Empty):
		case g.is(Stable):
			var ok bool
			if subs, ok = g.subscribed(); !ok {
				continue
			}
		default:
			continue
		}
		var recs []Record
		tps := make([]topicPartition, 0)
		for tp := range g.offsets {
			tps = append(tps, tp)
		}
		sort.Slice(tps, func(i, j int) bool {
			return tps[i].topic < tps[j].topic || tps[i].topic == tps[j].topic && tps[i].partition < tps[j].partition
		})
		for _, tp := range tps {
			o := g.offsets[tp]
			if g.inflight[tp] > 0 || subs[tp.topic] || g.hasPending(tp) {
				continue // (Kafka keeps an offset with a pending transactional one)
			}
			base := o.CommitTimestamp
			if g.is(Empty) && g.protocolType != "" {
				base = g.stateSince.UnixMilli()
			}
			if nowMs-base >= ret {
				delete(g.offsets, tp)
				recs = append(recs, Record{Key: offsetKey(g.id, tp.topic, tp.partition)})
			}
		}
		if g.is(Empty) && len(g.offsets) == 0 && len(g.inflight) == 0 && len(g.pending) == 0 && len(g.txnOffsets) == 0 {
			recs = append(recs, Record{Key: g.metaKey()})
			m.removeGroup(g, now)
		}
		if len(recs) > 0 {
			m.write(g.partition, recs, func(time.Time, error) {})
		}
	}
}

// writeError is the error a group request gets when its write to
// __consumer_offsets failed, as Kafka's GroupMetadataManager maps it:
// the partition moved or its disk failed (NOT_LEADER_OR_FOLLOWER,
// KAFKA_STORAGE_ERROR) is NOT_COORDINATOR, so the client looks the
// coordinator up again; anything else (too few replicas, a timeout) is
// COORDINATOR_NOT_AVAILABLE, retried where it is.
func writeError(err error) *kerr.Error {
	if errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.KafkaStorageError) {
		return kerr.NotCoordinator
	}
	return kerr.CoordinatorNotAvailable
}
