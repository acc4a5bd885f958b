package group

import (
	"errors"
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
	type slot struct {
		i, j int
		tp   topicPartition
		o    Offset
	}
	var (
		slots []slot
		recs  []Record
	)
	nowMs := now.UnixMilli()
	for i, rt := range req.Topics {
		for j, rp := range rt.Partitions {
			sp := &resp.Topics[i].Partitions[j]
			md := ""
			if rp.Metadata != nil {
				md = *rp.Metadata
			}
			switch {
			case len(md) > m.cfg.OffsetMetadataMaxBytes:
				sp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			case exists != nil && !exists(rt.Topic, rp.Partition):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			o := Offset{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, Metadata: md, CommitTimestamp: nowMs}
			if req.Version < 6 {
				o.LeaderEpoch = -1
			}
			tp := topicPartition{strings.Clone(rt.Topic), rp.Partition}
			o.Metadata = strings.Clone(o.Metadata)
			slots = append(slots, slot{i, j, tp, o})
			recs = append(recs, Record{Key: offsetKey(req.Group, tp.topic, tp.partition), Value: offsetValue(o)})
		}
	}
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
