package group

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe answers DescribeGroups for one group. An unknown group is
// "Dead" with no error, as in Kafka. Members carry their metadata and
// assignment only while the group is Stable.
func (m *Machine) Describe(id string) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = id
	if e := m.coordinatorError(id); e != nil {
		d.ErrorCode = e.Code
		d.State = Dead.String()
		return d
	}
	g := m.groups[id]
	if g == nil || g.cg != nil {
		// (A consumer-protocol group is not a classic group: Kafka
		// describes it as Dead here; ConsumerGroupDescribe describes it.)
		d.State = Dead.String()
		return d
	}
	d.State = g.state.String()
	d.ProtocolType = g.protocolType
	if g.is(Stable) {
		d.Protocol = g.protocol
	}
	for _, mb := range g.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = mb.id, mb.instanceID, mb.clientID, mb.clientHost
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if g.is(Stable) {
			if md := mb.metadataFor(g.protocol); md != nil {
				dm.ProtocolMetadata = md
			}
			if mb.assignment != nil {
				dm.MemberAssignment = mb.assignment
			}
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// List answers ListGroups: every group served here, sorted, optionally
// only those in the given states (Kafka state names, case-insensitive).
func (m *Machine) List(states []string) []kmsg.ListGroupsResponseGroup {
	want := map[string]bool{}
	for _, s := range states {
		want[lower(s)] = true
	}
	ids := make([]string, 0, len(m.groups))
	for id, g := range m.groups {
		if len(want) == 0 || want[lower(g.stateName())] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make([]kmsg.ListGroupsResponseGroup, 0, len(ids))
	for _, id := range ids {
		g := m.groups[id]
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState = id, g.protocolType, g.stateName()
		lg.GroupType = g.typeName()
		out = append(out, lg)
	}
	return out
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Delete answers DeleteGroups: only Empty groups can be deleted
// (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for unknown ones). The
// group and its offsets, committed and pending transactional ones, are
// tombstoned; reply is called once everything is written.
func (m *Machine) Delete(now time.Time, ids []string, reply func([]kmsg.DeleteGroupsResponseGroup)) {
	out := make([]kmsg.DeleteGroupsResponseGroup, len(ids))
	waiting := 1
	done := func() {
		if waiting--; waiting == 0 {
			reply(out)
		}
	}
	for i, id := range ids {
		out[i] = kmsg.NewDeleteGroupsResponseGroup()
		out[i].Group = id
		if e := m.coordinatorError(id); e != nil {
			out[i].ErrorCode = e.Code
			continue
		}
		g := m.groups[id]
		switch {
		case g == nil:
			out[i].ErrorCode = kerr.GroupIDNotFound.Code
			continue
		case !g.is(Empty):
			out[i].ErrorCode = kerr.NonEmptyGroup.Code
			continue
		}
		recs := []Record{}
		seen := map[topicPartition]bool{}
		for tp := range g.offsets {
			seen[tp] = true
		}
		for tp := range g.inflight {
			seen[tp] = true
		}
		// Pending transactional offsets are tombstoned too, as Kafka's
		// deleteAllOffsets does: a later commit marker restores nothing.
		for _, offs := range g.txnOffsets {
			for tp := range offs {
				seen[tp] = true
			}
		}
		tps := make([]topicPartition, 0, len(seen))
		for tp := range seen {
			tps = append(tps, tp)
		}
		sort.Slice(tps, func(a, b int) bool {
			return tps[a].topic < tps[b].topic || tps[a].topic == tps[b].topic && tps[a].partition < tps[b].partition
		})
		for _, tp := range tps {
			recs = append(recs, Record{Key: offsetKey(id, tp.topic, tp.partition)})
		}
		recs = append(recs, Record{Key: g.metaKey()})
		m.removeGroup(g, now)
		waiting++
		i := i
		m.write(g.partition, recs, func(_ time.Time, err error) {
			if err != nil {
				out[i].ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
			done()
		})
	}
	done()
}
