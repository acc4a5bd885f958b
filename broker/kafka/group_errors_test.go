package kafka

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testkit"
)

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	w := int16(0)
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Errorf("%s: error %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(w))
	}
}

// consumerMeta is a consumer-protocol subscription to topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func joinReq(version int16, group, member string, instance *string, protocolType string, protos ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group, req.MemberID, req.InstanceID, req.ProtocolType = group, member, instance, protocolType
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	for _, p := range protos {
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: consumerMeta("t")})
	}
	return req
}

func commitReq(group, member string, gen int32, topic string, parts ...int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 8
	req.Group, req.MemberID, req.Generation = group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, int64(100+p)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchOffsets(t *testing.T, rc *rawConn, group string) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	req.Topics = nil // all
	resp := rc.roundTrip(req).(*kmsg.OffsetFetchResponse)
	wantCode(t, "OffsetFetch", resp.ErrorCode, nil)
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}

func TestGroupErrorCodes(t *testing.T) {
	t.Parallel()
	b := startGroupBroker(t, testGroupConfig())
	createTopic(t, b, "t", 3, nil)
	rc := dialRaw(t, b.addr)

	// FindCoordinator at every version; key type 1 is the transaction
	// coordinator (this broker: the only one).
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorKeys = v, "g", []string{"g", "h"}
		resp := rc.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			wantCode(t, "FindCoordinator", resp.ErrorCode, nil)
			if resp.NodeID != 0 || resp.Port != int32(b.srv.Addr().(*net.TCPAddr).Port) {
				t.Errorf("FindCoordinator v%d: node %d port %d", v, resp.NodeID, resp.Port)
			}
		} else if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "h" || resp.Coordinators[0].ErrorCode != 0 || resp.Coordinators[0].Port <= 0 {
			t.Errorf("FindCoordinator v4: %+v", resp.Coordinators)
		}
	}
	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.Version, txn.CoordinatorKey, txn.CoordinatorType = 3, "tx", 1
	wantCode(t, "FindCoordinator txn", rc.roundTrip(txn).(*kmsg.FindCoordinatorResponse).ErrorCode, nil)
	txn.CoordinatorType = 7
	wantCode(t, "FindCoordinator type 7", rc.roundTrip(txn).(*kmsg.FindCoordinatorResponse).ErrorCode, kerr.InvalidRequest)

	// Unknown groups.
	{
		r := rc.roundTrip(commitReq("nogroup", "m", 5, "t", 0)).(*kmsg.OffsetCommitResponse)
		wantCode(t, "commit gen 5 to unknown group", r.Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "nogroup", "m", 1
		wantCode(t, "heartbeat unknown group", rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
		sg := kmsg.NewPtrSyncGroupRequest()
		sg.Version, sg.Group, sg.MemberID, sg.Generation = 5, "nogroup", "m", 1
		wantCode(t, "sync unknown group", rc.roundTrip(sg).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
		wantCode(t, "join unknown group with member id", rc.roundTrip(joinReq(5, "nogroup", "m", nil, "consumer", "range")).(*kmsg.JoinGroupResponse).ErrorCode, kerr.UnknownMemberID)
		dg := kmsg.NewPtrDeleteGroupsRequest()
		dg.Version, dg.Groups = 2, []string{"nogroup"}
		wantCode(t, "delete unknown group", rc.roundTrip(dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound)
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = "nogroup"
		wantCode(t, "offset delete unknown group", rc.roundTrip(od).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
		d := kmsg.NewPtrDescribeGroupsRequest()
		d.Version, d.Groups = 5, []string{"nogroup"}
		dr := rc.roundTrip(d).(*kmsg.DescribeGroupsResponse).Groups[0]
		wantCode(t, "describe unknown group", dr.ErrorCode, nil)
		if dr.State != "Dead" {
			t.Errorf("unknown group state %q, want Dead", dr.State)
		}
		if got := fetchOffsets(t, rc, "nogroup"); len(got) != 0 {
			t.Errorf("unknown group has offsets %v", got)
		}
		jr := joinReq(5, "", "", nil, "consumer", "range")
		wantCode(t, "join with empty group id", rc.roundTrip(jr).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidGroupID)
	}

	// A member, through MEMBER_ID_REQUIRED (v4+).
	jr := rc.roundTrip(joinReq(5, "g", "", nil, "consumer", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "first join v5", jr.ErrorCode, kerr.MemberIDRequired)
	member := jr.MemberID
	if !strings.HasPrefix(member, "raw-") {
		t.Fatalf("member id %q does not start with the client id", member)
	}
	short := joinReq(5, "g", member, nil, "consumer", "range")
	short.SessionTimeoutMillis = 10
	wantCode(t, "join with a too short session", rc.roundTrip(short).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
	jr = rc.roundTrip(joinReq(5, "g", member, nil, "consumer", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "second join", jr.ErrorCode, nil)
	if jr.Generation != 1 || jr.LeaderID != member || len(jr.Members) != 1 || *jr.Protocol != "range" {
		t.Fatalf("join: gen %d leader %q members %d protocol %v", jr.Generation, jr.LeaderID, len(jr.Members), jr.Protocol)
	}
	wantCode(t, "join with another protocol type", rc.roundTrip(joinReq(5, "g", "", nil, "connect", "range")).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
	wantCode(t, "join with no common protocol", rc.roundTrip(joinReq(3, "g", "", nil, "consumer", "sticky")).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)

	sync := func(gen int32, member string, protocol *string, asg []byte) *kmsg.SyncGroupResponse {
		sg := kmsg.NewPtrSyncGroupRequest()
		sg.Version, sg.Group, sg.MemberID, sg.Generation = 5, "g", member, gen
		sg.ProtocolType, sg.Protocol = kmsg.StringPtr("consumer"), protocol
		if asg != nil {
			sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: asg}}
		}
		return rc.roundTrip(sg).(*kmsg.SyncGroupResponse)
	}
	wantCode(t, "sync wrong generation", sync(9, member, kmsg.StringPtr("range"), nil).ErrorCode, kerr.IllegalGeneration)
	wantCode(t, "sync wrong protocol", sync(1, member, kmsg.StringPtr("roundrobin"), nil).ErrorCode, kerr.InconsistentGroupProtocol)
	wantCode(t, "sync unknown member", sync(1, "who", kmsg.StringPtr("range"), nil).ErrorCode, kerr.UnknownMemberID)

	// An assignment too large to store (message.max.bytes): UNKNOWN_SERVER_ERROR
	// and the group goes back to rebalancing.
	wantCode(t, "sync with an oversize assignment", sync(1, member, kmsg.StringPtr("range"), bytes.Repeat([]byte{1}, 2<<20)).ErrorCode, kerr.UnknownServerError)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g", member, 1
	wantCode(t, "heartbeat after a failed sync", rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.RebalanceInProgress)
	jr = rc.roundTrip(joinReq(5, "g", member, nil, "consumer", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "rejoin", jr.ErrorCode, nil)
	if jr.Generation != 2 {
		t.Fatalf("rejoin generation %d, want 2", jr.Generation)
	}
	asg := kmsg.NewConsumerMemberAssignment()
	asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0, 1, 2}}}
	sr := sync(2, member, kmsg.StringPtr("range"), asg.AppendTo(nil))
	wantCode(t, "sync", sr.ErrorCode, nil)
	if !bytes.Equal(sr.MemberAssignment, asg.AppendTo(nil)) || *sr.Protocol != "range" {
		t.Errorf("sync assignment %x protocol %v", sr.MemberAssignment, sr.Protocol)
	}

	// Commits.
	wantCode(t, "commit from an unknown member", rc.roundTrip(commitReq("g", "who", 2, "t", 0)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "commit with an old generation", rc.roundTrip(commitReq("g", member, 1, "t", 0)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
	wantCode(t, "simple commit to a group with members", rc.roundTrip(commitReq("g", "", -1, "t", 0)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	big := commitReq("g", member, 2, "t", 0, 1)
	big.Topics[0].Partitions[1].Metadata = kmsg.StringPtr(strings.Repeat("m", 4097))
	cr := rc.roundTrip(big).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit of partition 0 next to oversize metadata", cr.Topics[0].Partitions[0].ErrorCode, nil)
	wantCode(t, "commit with oversize metadata", cr.Topics[0].Partitions[1].ErrorCode, kerr.OffsetMetadataTooLarge)
	wantCode(t, "commit to an unknown partition", rc.roundTrip(commitReq("g", member, 2, "t", 7)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "commit to an unknown topic", rc.roundTrip(commitReq("g", member, 2, "nope", 0)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if got := fetchOffsets(t, rc, "g"); len(got) != 1 || got[0] != 100 {
		t.Errorf("offsets after the commits %v, want only partition 0 at 100", got)
	}

	// Heartbeats.
	hb.Generation = 1
	wantCode(t, "heartbeat old generation", rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
	hb.Generation, hb.MemberID = 2, "who"
	wantCode(t, "heartbeat unknown member", rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	hb.MemberID = member
	wantCode(t, "heartbeat", rc.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, nil)

	// Deleting what is in use.
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"g"}
	wantCode(t, "delete a group with members", rc.roundTrip(dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NonEmptyGroup)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	odr := rc.roundTrip(od).(*kmsg.OffsetDeleteResponse)
	wantCode(t, "offset delete group", odr.ErrorCode, nil)
	wantCode(t, "offset delete of a subscribed topic", odr.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)

	// Leave (v3 batch): one unknown, one real member.
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Version, lg.Group = 4, "g"
	lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "who"}, {MemberID: member}}
	lr := rc.roundTrip(lg).(*kmsg.LeaveGroupResponse)
	wantCode(t, "leave top-level", lr.ErrorCode, nil)
	wantCode(t, "leave unknown member", lr.Members[0].ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "leave member", lr.Members[1].ErrorCode, nil)

	// The group is consistent: Empty, offsets intact, generation moved on;
	// now simple commits work, offsets can be deleted, then the group.
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Version, d.Groups = 5, []string{"g"}
	dr := rc.roundTrip(d).(*kmsg.DescribeGroupsResponse).Groups[0]
	if dr.State != "Empty" || len(dr.Members) != 0 || dr.ProtocolType != "consumer" {
		t.Fatalf("after leave: %s members %d type %q", dr.State, len(dr.Members), dr.ProtocolType)
	}
	wantCode(t, "simple commit to the empty group", rc.roundTrip(commitReq("g", "", -1, "t", 1)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
	if got := fetchOffsets(t, rc, "g"); len(got) != 2 || got[0] != 100 || got[1] != 101 {
		t.Errorf("offsets %v, want 0:100 1:101", got)
	}
	odr = rc.roundTrip(od).(*kmsg.OffsetDeleteResponse)
	wantCode(t, "offset delete in the empty group", odr.Topics[0].Partitions[0].ErrorCode, nil)
	if got := fetchOffsets(t, rc, "g"); len(got) != 1 || got[1] != 101 {
		t.Errorf("offsets after OffsetDelete %v, want 1:101", got)
	}
	lgs := kmsg.NewPtrListGroupsRequest()
	lgs.Version, lgs.StatesFilter = 4, []string{"empty"}
	if l := rc.roundTrip(lgs).(*kmsg.ListGroupsResponse).Groups; len(l) != 1 || l[0].Group != "g" || l[0].GroupState != "Empty" {
		t.Errorf("ListGroups Empty: %+v", l)
	}
	lgs.StatesFilter = []string{"Stable"}
	if l := rc.roundTrip(lgs).(*kmsg.ListGroupsResponse).Groups; len(l) != 0 {
		t.Errorf("ListGroups Stable: %+v", l)
	}
	wantCode(t, "delete the empty group", rc.roundTrip(dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
	if got := fetchOffsets(t, rc, "g"); len(got) != 0 {
		t.Errorf("offsets of a deleted group %v", got)
	}
	lgs.StatesFilter = nil
	if l := rc.roundTrip(lgs).(*kmsg.ListGroupsResponse).Groups; len(l) != 0 {
		t.Errorf("groups after delete: %+v", l)
	}
}

func TestGroupStaticMembership(t *testing.T) {
	t.Parallel()
	b := startGroupBroker(t, testGroupConfig())
	createTopic(t, b, "t", 2, nil)
	rc := dialRaw(t, b.addr)
	inst := kmsg.StringPtr("instance-1")

	// Static members get their id at once (no MEMBER_ID_REQUIRED).
	jr := rc.roundTrip(joinReq(5, "s", "", inst, "consumer", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "static join", jr.ErrorCode, nil)
	old := jr.MemberID
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Version, sg.Group, sg.MemberID, sg.Generation, sg.InstanceID = 5, "s", old, jr.Generation, inst
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: old, MemberAssignment: []byte("a")}}
	wantCode(t, "static sync", rc.roundTrip(sg).(*kmsg.SyncGroupResponse).ErrorCode, nil)

	// A second leader-less member joins as a follower and gets a stable
	// group; then the static follower restarts (new member id, same
	// instance): no rebalance, same generation, old id fenced.
	inst2 := kmsg.StringPtr("instance-2")
	rc2 := dialRaw(t, b.addr)
	rc2.write(rc2.frame(joinReq(5, "s", "", inst2, "consumer", "range")))
	coord, err := b.srv.groups()
	if err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 10*time.Second, func() error {
		if d := coord.Describe([]string{"s"})[0]; d.State != "PreparingRebalance" || len(d.Members) != 2 {
			return fmt.Errorf("group %s with %d members", d.State, len(d.Members))
		}
		return nil
	})
	// The leader must rejoin for the rebalance to complete.
	jr = rc.roundTrip(joinReq(5, "s", old, inst, "consumer", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "leader rejoin", jr.ErrorCode, nil)
	jr2 := rc2.readResponse(joinReq(5, "s", "", inst2, "consumer", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "follower join", jr2.ErrorCode, nil)
	if jr.Generation != 2 || jr2.Generation != 2 || jr.LeaderID != old {
		t.Fatalf("generations %d %d leader %q", jr.Generation, jr2.Generation, jr.LeaderID)
	}
	sg.Generation = 2
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: old, MemberAssignment: []byte("a")}, {MemberID: jr2.MemberID, MemberAssignment: []byte("b")}}
	wantCode(t, "leader sync", rc.roundTrip(sg).(*kmsg.SyncGroupResponse).ErrorCode, nil)

	jr3 := rc2.roundTrip(joinReq(5, "s", "", inst2, "consumer", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "static rejoin", jr3.ErrorCode, nil)
	if jr3.Generation != 2 || jr3.MemberID == jr2.MemberID {
		t.Errorf("static rejoin: generation %d member %q (old %q): want generation 2 and a new id", jr3.Generation, jr3.MemberID, jr2.MemberID)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = 4, "s", jr2.MemberID, 2, inst2
	wantCode(t, "heartbeat with the fenced id", rc2.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.FencedInstanceID)
	hb.MemberID = jr3.MemberID
	wantCode(t, "heartbeat with the new id", rc2.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	sg2 := kmsg.NewPtrSyncGroupRequest()
	sg2.Version, sg2.Group, sg2.MemberID, sg2.Generation, sg2.InstanceID = 5, "s", jr3.MemberID, 2, inst2
	if r := rc2.roundTrip(sg2).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "b" {
		t.Errorf("restarted static member's sync: %v %q, want its old assignment b", kerr.ErrorForCode(r.ErrorCode), r.MemberAssignment)
	}

	// Leave by instance id with a mismatching member id is fenced; by
	// instance id alone it works.
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Version, lg.Group = 4, "s"
	lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: jr2.MemberID, InstanceID: inst2}, {InstanceID: inst}}
	lr := rc.roundTrip(lg).(*kmsg.LeaveGroupResponse)
	wantCode(t, "leave with a fenced id", lr.Members[0].ErrorCode, kerr.FencedInstanceID)
	wantCode(t, "leave by instance", lr.Members[1].ErrorCode, nil)
}

// JoinGroup v0 (librdkafka's minimum): no rebalance timeout, no
// MEMBER_ID_REQUIRED.
func TestGroupJoinV0(t *testing.T) {
	t.Parallel()
	b := startGroupBroker(t, testGroupConfig())
	rc := dialRaw(t, b.addr)
	jr := rc.roundTrip(joinReq(0, "v0", "", nil, "consumer", "range")).(*kmsg.JoinGroupResponse)
	wantCode(t, "join v0", jr.ErrorCode, nil)
	if jr.MemberID == "" || jr.Generation != 1 || jr.LeaderID != jr.MemberID {
		t.Errorf("join v0: %+v", jr)
	}
}
