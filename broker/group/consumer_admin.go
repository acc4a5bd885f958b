package group

// Consumer-protocol groups beside the offset APIs and the admin APIs:
// OffsetCommit / TxnOffsetCommit / OffsetFetch member-epoch checks (as
// Kafka's ConsumerGroup.validateOffsetCommit / validateOffsetFetch, with
// KIP-1251's per-partition assignment epochs for commits) and
// ConsumerGroupDescribe.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerCommitError validates an OffsetCommit to a consumer group: a
// commit with a negative epoch is a simple commit, allowed while the group
// is empty; otherwise the member must exist and use OffsetCommit v9+, and
// its epoch must be the member's — or older than it when every partition
// committed was assigned to the member at or before that epoch
// (KIP-1251). Else STALE_MEMBER_EPOCH, which the client retries after its
// next heartbeat.
func (m *Machine) consumerCommitError(cg *consumerGroup, req *kmsg.OffsetCommitRequest) *kerr.Error {
	if req.Generation < 0 && len(cg.members) == 0 {
		return nil
	}
	mb := cg.members[req.MemberID]
	if mb == nil {
		return kerr.UnknownMemberID
	}
	if req.Version < 9 {
		return kerr.UnsupportedVersion
	}
	return m.memberEpochError(mb, req.Generation, func(fn func(topic string, p int32)) {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				fn(t.Topic, p.Partition)
			}
		}
	})
}

// memberEpochError checks a commit's member epoch against mb for the
// partitions each lists.
func (m *Machine) memberEpochError(mb *consumerMember, epoch int32, each func(func(topic string, p int32))) *kerr.Error {
	if epoch == mb.epoch {
		return nil
	}
	if epoch < 0 || epoch > mb.epoch || m.topics == nil {
		return kerr.StaleMemberEpoch
	}
	ts := m.topics()
	ok := true
	each(func(topic string, p int32) {
		t, found := ts.Topic(topic)
		if !found {
			ok = false
			return
		}
		since, owned := mb.since[tp{t.ID, p}]
		if !owned || since > epoch {
			ok = false
		}
	})
	if !ok {
		return kerr.StaleMemberEpoch
	}
	return nil
}

// consumerTxnCommitError validates a TxnOffsetCommit to a consumer group
// (transactional commits may use any version).
func (m *Machine) consumerTxnCommitError(cg *consumerGroup, req *kmsg.TxnOffsetCommitRequest) *kerr.Error {
	if req.Generation < 0 && len(cg.members) == 0 {
		return nil
	}
	if req.Generation < 0 && req.MemberID == "" {
		return nil // a producer outside the group's management
	}
	mb := cg.members[req.MemberID]
	if mb == nil {
		return kerr.UnknownMemberID
	}
	return m.memberEpochError(mb, req.Generation, func(fn func(topic string, p int32)) {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				fn(t.Topic, p.Partition)
			}
		}
	})
}

// fetchMemberError validates an OffsetFetch v9+ that names a member
// (memberID non-nil or a non-negative epoch) of a consumer group.
func (g *group) fetchMemberError(memberID *string, epoch int32) *kerr.Error {
	if g == nil || g.cg == nil || (memberID == nil && epoch < 0) {
		return nil
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	mb := g.cg.members[id]
	if mb == nil {
		return kerr.UnknownMemberID
	}
	if epoch != mb.epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}

// ConsumerDescribe answers ConsumerGroupDescribe for one group: a group
// that is not a consumer-protocol group is GROUP_ID_NOT_FOUND, as in
// Kafka (clients then describe it with DescribeGroups).
func (m *Machine) ConsumerDescribe(id string) kmsg.ConsumerGroupDescribeResponseGroup {
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = id
	if e := m.coordinatorError(id); e != nil {
		d.ErrorCode = e.Code
		return d
	}
	g := m.groups[id]
	if g == nil {
		d.ErrorCode = kerr.GroupIDNotFound.Code
		d.ErrorMessage = kmsg.StringPtr("Group " + id + " not found.")
		return d
	}
	if g.cg == nil {
		d.ErrorCode = kerr.GroupIDNotFound.Code
		d.ErrorMessage = kmsg.StringPtr("Group " + id + " is not a consumer group.")
		return d
	}
	cg := g.cg
	d.State = cg.stateName()
	d.Epoch = cg.epoch
	d.AssignmentEpoch = cg.assignmentEpoch
	d.AssignorName = cg.assignor
	if d.AssignorName == "" {
		d.AssignorName = m.preferredAssignor(cg)
	}
	ids := make([]string, 0, len(cg.members))
	for mid := range cg.members {
		ids = append(ids, mid)
	}
	sort.Strings(ids)
	var ts Topics
	if m.topics != nil {
		ts = m.topics()
	}
	for _, mid := range ids {
		mb := cg.members[mid]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID = mb.id, mb.instanceID, mb.rackID
		dm.MemberEpoch = mb.epoch
		dm.ClientID, dm.ClientHost = mb.clientID, mb.clientHost
		dm.SubscribedTopics = append([]string{}, mb.topics...)
		if mb.regex != "" {
			dm.SubscribedTopicRegex = kmsg.StringPtr(mb.regex)
		}
		dm.Assignment = describeAssignment(mb.assigned, ts)
		dm.TargetAssignment = describeAssignment(cg.target[mid], ts)
		dm.MemberType = 1 // consumer protocol (0: classic)
		d.Members = append(d.Members, dm)
	}
	return d
}

func describeAssignment(a assignment, ts Topics) kmsg.Assignment {
	out := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
	for id, ps := range a {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID = id
		if ts != nil {
			if info, ok := ts.TopicByID(id); ok {
				t.Topic = info.Name
			}
		}
		t.Partitions = append([]int32{}, ps...)
		out.TopicPartitions = append(out.TopicPartitions, t)
	}
	sort.Slice(out.TopicPartitions, func(i, j int) bool {
		return out.TopicPartitions[i].Topic < out.TopicPartitions[j].Topic
	})
	return out
}
