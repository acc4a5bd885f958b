package group

// The consumer-protocol member records of __consumer_offsets, in Kafka's
// layout (KIP-848):
//
//	member      key   ConsumerGroupMemberMetadataKey v5 {group, member}
//	            value ConsumerGroupMemberMetadataValue v0 {instanceId, rackId,
//	                  clientId, clientHost, subscribedTopicNames,
//	                  subscribedTopicRegex, rebalanceTimeoutMs, serverAssignor}
//	assignment  key   ConsumerGroupCurrentMemberAssignmentKey v8 {group, member}
//	            value ConsumerGroupCurrentMemberAssignmentValue v0 {memberEpoch,
//	                  previousMemberEpoch, state, assignedPartitions,
//	                  partitionsPendingRevocation}
//
// A member that leaves or is fenced gets tombstones for both. Loading a
// partition restores its members with their epochs and partitions (a
// fresh session each); the target assignment (Kafka's key versions 6 and
// 7) is not written: it is computed again on the next heartbeat.

import (
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
)

func memberKey(version uint16, group, member string) []byte {
	b := binary.BigEndian.AppendUint16(nil, version)
	b = kbin.AppendString(b, group)
	return kbin.AppendString(b, member)
}

func consumerMemberKey(group, member string) []byte { return memberKey(5, group, member) }

func consumerAssignmentKey(group, member string) []byte { return memberKey(8, group, member) }

func consumerMemberValue(mb *consumerMember) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = kbin.AppendCompactNullableString(b, mb.instanceID)
	b = kbin.AppendCompactNullableString(b, mb.rackID)
	b = kbin.AppendCompactString(b, mb.clientID)
	b = kbin.AppendCompactString(b, mb.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(mb.topics))
	for _, t := range mb.topics {
		b = kbin.AppendCompactString(b, t)
	}
	var re *string
	if mb.regex != "" {
		re = &mb.regex
	}
	b = kbin.AppendCompactNullableString(b, re)
	b = kbin.AppendInt32(b, int32(mb.rebalanceTimeout/time.Millisecond))
	var as *string
	if mb.assignor != "" {
		as = &mb.assignor
	}
	b = kbin.AppendCompactNullableString(b, as)
	return kbin.AppendUvarint(b, 0) // no tagged fields
}

func appendPartitions(b []byte, a assignment) []byte {
	b = kbin.AppendCompactArrayLen(b, len(a))
	ids := make([]TopicID, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	for _, id := range ids {
		ps := a[id]
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

func consumerAssignmentValue(mb *consumerMember) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = kbin.AppendInt32(b, mb.epoch)
	b = kbin.AppendInt32(b, mb.prevEpoch)
	b = kbin.AppendInt8(b, int8(mb.state))
	b = appendPartitions(b, mb.assigned)
	b = appendPartitions(b, mb.revoking)
	return kbin.AppendUvarint(b, 0)
}

// memberRecords are the records of mb as it is now.
func memberRecords(group string, mb *consumerMember, meta bool) []Record {
	var recs []Record
	if meta {
		recs = append(recs, Record{Key: consumerMemberKey(group, mb.id), Value: consumerMemberValue(mb)})
	}
	return append(recs, Record{Key: consumerAssignmentKey(group, mb.id), Value: consumerAssignmentValue(mb)})
}

// memberTombstones remove member id's records.
func memberTombstones(group, id string) []Record {
	return []Record{{Key: consumerMemberKey(group, id)}, {Key: consumerAssignmentKey(group, id)}}
}

// decodeMemberKey reads the group and member of a key of version 5 or 8.
func decodeMemberKey(key []byte) (group, member string, err error) {
	r := kbin.Reader{Src: key[2:]}
	group, member = r.String(), r.String()
	if err := r.Complete(); err != nil {
		return "", "", fmt.Errorf("%w: consumer member key: %v", ErrBadRecord, err)
	}
	return group, member, nil
}

// skipTags skips a flexible struct's tagged fields.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// decodeMemberValue reads a ConsumerGroupMemberMetadataValue v0 into mb.
func decodeMemberValue(v []byte, mb *consumerMember) error {
	if len(v) < 2 || binary.BigEndian.Uint16(v) != 0 {
		return fmt.Errorf("%w: consumer member value version", ErrBadRecord)
	}
	r := kbin.Reader{Src: v[2:]}
	mb.instanceID = r.CompactNullableString()
	mb.rackID = r.CompactNullableString()
	mb.clientID = r.CompactString()
	mb.clientHost = r.CompactString()
	n := r.CompactArrayLen()
	mb.topics = nil
	for i := int32(0); i < n && r.Ok(); i++ {
		mb.topics = append(mb.topics, r.CompactString())
	}
	if re := r.CompactNullableString(); re != nil {
		mb.regex = *re
	}
	mb.rebalanceTimeout = time.Duration(r.Int32()) * time.Millisecond
	if as := r.CompactNullableString(); as != nil {
		mb.assignor = *as
	}
	skipTags(&r)
	if !r.Ok() {
		return fmt.Errorf("%w: consumer member value truncated", ErrBadRecord)
	}
	return nil
}

func readPartitions(r *kbin.Reader) assignment {
	a := assignment{}
	n := r.CompactArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		id := TopicID(r.Uuid())
		np := r.CompactArrayLen()
		for j := int32(0); j < np && r.Ok(); j++ {
			a.add(id, r.Int32())
		}
		skipTags(r)
	}
	return a
}

// decodeAssignmentValue reads a ConsumerGroupCurrentMemberAssignmentValue
// v0 into mb.
func decodeAssignmentValue(v []byte, mb *consumerMember) error {
	if len(v) < 2 || binary.BigEndian.Uint16(v) != 0 {
		return fmt.Errorf("%w: consumer assignment value version", ErrBadRecord)
	}
	r := kbin.Reader{Src: v[2:]}
	mb.epoch, mb.prevEpoch = r.Int32(), r.Int32()
	mb.state = memberState(r.Int8())
	mb.assigned = readPartitions(&r)
	mb.revoking = readPartitions(&r)
	skipTags(&r)
	if !r.Ok() {
		return fmt.Errorf("%w: consumer assignment value truncated", ErrBadRecord)
	}
	if mb.state < memberStable || mb.state > memberUnreleased {
		mb.state = memberStable
	}
	return nil
}

// restoreMembers gives a loaded consumer group its members: each starts a
// fresh session; the partitions they own are theirs; the target is what
// they own until the next heartbeat computes a new one.
func (m *Machine) restoreMembers(g *group, members map[string]*consumerMember, now time.Time) {
	cg := g.cg
	for id, mb := range members {
		mb.id = id
		if mb.assigned == nil {
			mb.assigned = assignment{}
		}
		if mb.revoking == nil {
			mb.revoking = assignment{}
		}
		if mb.regex != "" {
			mb.re, _ = m.compileRegex(mb.regex)
		}
		mb.deadline = now.Add(m.cfg.ConsumerSessionTimeout)
		mb.since = map[tp]int32{}
		own := func(tid TopicID, p int32) {
			cg.owners[tp{tid, p}] = id
			mb.since[tp{tid, p}] = mb.epoch
		}
		mb.assigned.each(own)
		mb.revoking.each(own)
		t := assignment{}
		mb.assigned.each(t.add)
		cg.target[id] = t
		cg.members[id] = mb
		if mb.instanceID != nil {
			cg.static[*mb.instanceID] = id
		}
	}
	g.syncConsumerState(now)
}
