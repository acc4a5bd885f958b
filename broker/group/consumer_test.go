package group

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// staticTopics is a fixed set of topics (the Topics a broker's metadata
// image gives the coordinator).
type staticTopics struct {
	version int64
	byName  map[string]TopicInfo
}

func (s *staticTopics) Version() int64 { return s.version }
func (s *staticTopics) Topic(n string) (TopicInfo, bool) {
	t, ok := s.byName[n]
	return t, ok
}
func (s *staticTopics) TopicByID(id TopicID) (TopicInfo, bool) {
	for _, t := range s.byName {
		if t.ID == id {
			return t, true
		}
	}
	return TopicInfo{}, false
}
func (s *staticTopics) Names() []string {
	var out []string
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
func (s *staticTopics) add(name string, parts int32) {
	id := TopicID{byte(len(s.byName) + 1)}
	s.byName[name] = TopicInfo{Name: name, ID: id, Partitions: parts}
	s.version++
}

type cpHarness struct {
	t      *testing.T
	m      *Machine
	topics *staticTopics
	now    time.Time
	log    []Record
}

func newCPHarness(t *testing.T) *cpHarness {
	h := &cpHarness{t: t, topics: &staticTopics{byName: map[string]TopicInfo{}}, now: time.Unix(1_700_000_000, 0)}
	cfg := DefaultConfig()
	cfg.ConsumerHeartbeatInterval = time.Second
	cfg.ConsumerSessionTimeout = 10 * time.Second
	h.m = NewMachine(cfg, 1)
	h.m.topics = func() Topics { return h.topics }
	h.m.Load(0).Finish(h.now)
	return h
}

func (h *cpHarness) flush() {
	for _, w := range h.m.TakeWrites() {
		h.log = append(h.log, w.Records...)
		w.Done(h.now, nil)
	}
}

// hb sends a heartbeat; owned nil means "not reported".
func (h *cpHarness) hb(member string, epoch int32, owned map[string][]int32, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "g", member, epoch
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = topics
	}
	if owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for n, ps := range owned {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = h.topics.byName[n].ID, ps
			req.Topics = append(req.Topics, rt)
		}
	}
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	h.m.ConsumerHeartbeat(h.now, req, "client", "/127.0.0.1", func(r *kmsg.ConsumerGroupHeartbeatResponse) { resp = r })
	h.flush()
	if resp == nil {
		h.t.Fatal("no heartbeat response")
	}
	return resp
}

func assigned(r *kmsg.ConsumerGroupHeartbeatResponse) string {
	if r.Assignment == nil {
		return "-"
	}
	var out []string
	for _, t := range r.Assignment.Topics {
		out = append(out, fmt.Sprint(t.Partitions))
	}
	return fmt.Sprint(out)
}

// checkDisjoint fails when two members own one partition (assigned or
// pending revocation).
func (h *cpHarness) checkDisjoint() {
	h.t.Helper()
	g := h.m.groups["g"]
	seen := map[tp]string{}
	for id, mb := range g.cg.members {
		for _, a := range []assignment{mb.assigned, mb.revoking} {
			a.each(func(t TopicID, p int32) {
				if o, ok := seen[tp{t, p}]; ok {
					h.t.Fatalf("partition %d owned by %s and %s", p, o, id)
				}
				seen[tp{t, p}] = id
			})
		}
	}
}

func TestConsumerRevokeBeforeAssign(t *testing.T) {
	h := newCPHarness(t)
	h.topics.add("t", 6)
	r := h.hb("A", 0, map[string][]int32{}, "t")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || assigned(r) != "[[0 1 2 3 4 5]]" {
		t.Fatalf("A joins: %v epoch %d %s", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, assigned(r))
	}
	// B joins: the group moves to epoch 2, B waits for A's partitions.
	r = h.hb("B", 0, map[string][]int32{}, "t")
	if r.MemberEpoch != 2 || assigned(r) != "[]" {
		t.Fatalf("B joins: epoch %d %s", r.MemberEpoch, assigned(r))
	}
	h.checkDisjoint()
	if s := h.m.ConsumerDescribe("g").State; s != "Reconciling" {
		t.Errorf("state %s", s)
	}
	// A is told to revoke 3 and stays at epoch 1 while it owns them.
	r = h.hb("A", 1, map[string][]int32{"t": {0, 1, 2, 3, 4, 5}})
	if r.MemberEpoch != 1 || assigned(r) != "[[0 1 2]]" {
		t.Fatalf("A revokes: epoch %d %s", r.MemberEpoch, assigned(r))
	}
	r = h.hb("B", 2, map[string][]int32{})
	if r.MemberEpoch != 2 || assigned(r) != "-" { // (unchanged: not sent)
		t.Fatalf("B before the revocation: epoch %d %s", r.MemberEpoch, assigned(r))
	}
	h.checkDisjoint()
	// A reports it revoked them: epoch 2; then B gets them.
	r = h.hb("A", 1, map[string][]int32{"t": {0, 1, 2}})
	if r.MemberEpoch != 2 {
		t.Fatalf("A after revoking: epoch %d", r.MemberEpoch)
	}
	r = h.hb("B", 2, map[string][]int32{})
	if r.MemberEpoch != 2 || assigned(r) != "[[3 4 5]]" {
		t.Fatalf("B after the revocation: epoch %d %s", r.MemberEpoch, assigned(r))
	}
	h.checkDisjoint()
	if d := h.m.ConsumerDescribe("g"); d.State != "Stable" || d.Epoch != 2 {
		t.Errorf("describe: %s epoch %d", d.State, d.Epoch)
	}

	// A stale epoch is fenced; a greater one too.
	if r = h.hb("A", 7, map[string][]int32{"t": {0, 1, 2}}); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Errorf("epoch 7: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Commits: v8 is refused for a consumer-protocol member, a stale
	// epoch for a partition assigned later is STALE_MEMBER_EPOCH, the
	// member's epoch commits.
	commit := func(v int16, member string, epoch int32, p int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = v, "g", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 10
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		var code int16 = -100
		h.m.Commit(h.now, req, nil, func(r *kmsg.OffsetCommitResponse) { code = r.Topics[0].Partitions[0].ErrorCode })
		h.flush()
		return code
	}
	if c := commit(8, "B", 2, 3); c != kerr.UnsupportedVersion.Code {
		t.Errorf("commit v8: %v", kerr.ErrorForCode(c))
	}
	if c := commit(9, "B", 1, 3); c != kerr.StaleMemberEpoch.Code {
		t.Errorf("commit epoch 1 of a partition assigned at 2: %v", kerr.ErrorForCode(c))
	}
	if c := commit(9, "A", 1, 0); c != 0 {
		t.Errorf("commit epoch 1 of a partition A has owned since 1 (KIP-1251): %v", kerr.ErrorForCode(c))
	}
	if c := commit(9, "B", 2, 3); c != 0 {
		t.Errorf("commit: %v", kerr.ErrorForCode(c))
	}
	if c := commit(9, "X", 2, 3); c != kerr.UnknownMemberID.Code {
		t.Errorf("commit of an unknown member: %v", kerr.ErrorForCode(c))
	}

	// A's session expires: B gets everything at epoch 3.
	h.now = h.now.Add(11 * time.Second)
	h.hb("B", 2, map[string][]int32{"t": {3, 4, 5}})
	h.m.Tick(h.now)
	h.flush()
	r = h.hb("B", 2, map[string][]int32{"t": {3, 4, 5}})
	if r.MemberEpoch != 3 || assigned(r) != "[[0 1 2 3 4 5]]" {
		t.Fatalf("B after A expired: epoch %d %s", r.MemberEpoch, assigned(r))
	}

	// Reload (the coordinator moved): the group comes back at its epoch
	// with B, its epoch and partitions (A's records were tombstoned), and
	// its offsets; B goes on heartbeating there.
	m2 := NewMachine(h.m.cfg, 1)
	m2.topics = h.m.topics
	l := m2.Load(0)
	for _, rec := range h.log {
		if err := l.Apply(rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	l.Finish(h.now)
	d := m2.ConsumerDescribe("g")
	if d.ErrorCode != 0 || d.State != "Stable" || d.Epoch != 3 || len(d.Members) != 1 || d.Members[0].MemberID != "B" ||
		d.Members[0].MemberEpoch != 3 || len(d.Members[0].Assignment.TopicPartitions) != 1 || len(d.Members[0].Assignment.TopicPartitions[0].Partitions) != 6 ||
		fmt.Sprint(d.Members[0].SubscribedTopics) != "[t]" || d.Members[0].ClientID != "client" {
		t.Errorf("reloaded: %+v", d)
	}
	if lg := m2.List(nil); len(lg) != 1 || lg[0].GroupType != "consumer" || lg[0].ProtocolType != "consumer" {
		t.Errorf("reloaded list: %+v", lg)
	}
	offs, _ := m2.FetchOffsets("g", nil, false)
	if len(offs) != 1 || len(offs[0].Partitions) != 2 {
		t.Errorf("reloaded offsets: %+v", offs)
	}
	h.m = m2
	r = h.hb("B", 3, map[string][]int32{"t": {0, 1, 2, 3, 4, 5}})
	if r.ErrorCode != 0 || r.MemberEpoch < 3 {
		t.Fatalf("B after the reload: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	r = h.hb("B", r.MemberEpoch, map[string][]int32{"t": {0, 1, 2, 3, 4, 5}})
	if d := m2.ConsumerDescribe("g"); r.ErrorCode != 0 || d.State != "Stable" || d.Members[0].Assignment.TopicPartitions[0].Partitions[5] != 5 {
		t.Errorf("after the reload: %v %+v", kerr.ErrorForCode(r.ErrorCode), d)
	}
	// B leaves: its records are tombstoned; a reload has no member.
	r = h.hb("B", -1, nil)
	m3 := NewMachine(h.m.cfg, 1)
	m3.topics = h.m.topics
	l = m3.Load(0)
	for _, rec := range h.log {
		if err := l.Apply(rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	l.Finish(h.now)
	if d := m3.ConsumerDescribe("g"); r.ErrorCode != 0 || d.State != "Empty" || len(d.Members) != 0 {
		t.Errorf("after B left and a reload: %+v", d)
	}
}

func TestConsumerUpgradeEmptyClassicGroup(t *testing.T) {
	h := newCPHarness(t)
	h.topics.add("t", 2)
	// A classic group holding only offsets (a simple commit).
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, "g", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 5
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	h.m.Commit(h.now, req, nil, func(*kmsg.OffsetCommitResponse) {})
	h.flush()
	if lg := h.m.List(nil); len(lg) != 1 || lg[0].GroupType != "classic" {
		t.Fatalf("before: %+v", lg)
	}
	r := h.hb("A", 0, map[string][]int32{}, "t")
	if r.ErrorCode != 0 || assigned(r) != "[[0 1]]" {
		t.Fatalf("join: %v %s", kerr.ErrorForCode(r.ErrorCode), assigned(r))
	}
	if lg := h.m.List(nil); len(lg) != 1 || lg[0].GroupType != "consumer" || lg[0].GroupState != "Stable" {
		t.Errorf("after: %+v", lg)
	}
	if offs, _ := h.m.FetchOffsets("g", nil, false); len(offs) != 1 || offs[0].Partitions[0].Offset != 5 {
		t.Errorf("offsets kept: %+v", offs)
	}
	// A classic JoinGroup cannot join while it has members.
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Group, jr.ProtocolType, jr.SessionTimeoutMillis = "g", "consumer", 10000
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	var code int16 = -100
	h.m.Join(h.now, jr, "c", "/h", func(r *kmsg.JoinGroupResponse) { code = r.ErrorCode })
	if code != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("classic join of a consumer group: %v", kerr.ErrorForCode(code))
	}
}

func TestConsumerHeartbeatValidation(t *testing.T) {
	h := newCPHarness(t)
	h.topics.add("t", 2)
	for _, c := range []struct {
		name string
		mod  func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"owned partitions on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("(") }, kerr.InvalidRegularExpression},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, kerr.UnsupportedAssignor},
		{"epoch -3", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"unknown group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 4 }, kerr.GroupIDNotFound},
	} {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "v", "m", 30000
		req.SubscribedTopicNames, req.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		c.mod(req)
		var got *kmsg.ConsumerGroupHeartbeatResponse
		h.m.ConsumerHeartbeat(h.now, req, "c", "/h", func(r *kmsg.ConsumerGroupHeartbeatResponse) { got = r })
		if got.ErrorCode != c.want.Code {
			t.Errorf("%s: %v, want %v", c.name, kerr.ErrorForCode(got.ErrorCode), c.want)
		}
	}
}

func TestAssignors(t *testing.T) {
	a, b := TopicInfo{Name: "a", ID: TopicID{1}, Partitions: 5}, TopicInfo{Name: "b", ID: TopicID{2}, Partitions: 2}
	both := map[string]TopicInfo{"a": a, "b": b}
	cg := newConsumerGroup()
	for _, id := range []string{"m1", "m2", "m3"} {
		cg.members[id] = &consumerMember{id: id}
	}
	ids := []string{"m1", "m2", "m3"}
	subs := map[string]map[string]TopicInfo{"m1": both, "m2": both, "m3": both}
	show := func(out map[string]assignment) string {
		s := ""
		for _, id := range ids {
			s += id + ":"
			for _, t := range []TopicInfo{a, b} {
				if ps := out[id][t.ID]; len(ps) > 0 {
					s += fmt.Sprintf("%s%v", t.Name, ps)
				}
			}
			s += " "
		}
		return s
	}
	// Range: per topic, contiguous, the first members one more.
	if got, want := show(assignRange(cg, ids, subs)), "m1:a[0 1]b[0] m2:a[2 3]b[1] m3:a[4] "; got != want {
		t.Errorf("range: %s, want %s", got, want)
	}
	// Uniform: balanced (7 partitions: 3, 2, 2) ...
	out := assignUniform(cg, ids, subs)
	counts := []int{out["m1"].count(), out["m2"].count(), out["m3"].count()}
	sort.Ints(counts)
	if fmt.Sprint(counts) != "[2 2 3]" {
		t.Errorf("uniform counts %v: %s", counts, show(out))
	}
	// ... and sticky: a fourth member takes partitions without moving
	// any other.
	cg.target = out
	cg.members["m4"] = &consumerMember{id: "m4"}
	ids4 := []string{"m1", "m2", "m3", "m4"}
	subs["m4"] = both
	out4 := assignUniform(cg, ids4, subs)
	for _, id := range ids {
		out4[id].each(func(tid TopicID, p int32) {
			if !out[id].has(tid, p) {
				t.Errorf("uniform moved partition %d of topic %d to %s", p, tid[0], id)
			}
		})
	}
	if n := out4["m4"].count(); n != 1 {
		t.Errorf("new member got %d partitions: %v", n, out4)
	}
}

func TestConsumerStaticAndRegex(t *testing.T) {
	h := newCPHarness(t)
	h.topics.add("t1", 2)
	h.topics.add("xt", 2)
	join := func(member, inst, regex string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", member, 30000
		req.InstanceID = kmsg.StringPtr(inst)
		req.SubscribedTopicRegex = kmsg.StringPtr(regex)
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		h.m.ConsumerHeartbeat(h.now, req, "c", "/h", func(r *kmsg.ConsumerGroupHeartbeatResponse) { resp = r })
		h.flush()
		return resp
	}
	// "t.*" matches whole names: t1, not xt.
	r := join("A", "i1", "t.*")
	if r.ErrorCode != 0 || assigned(r) != "[[0 1]]" || r.MemberEpoch != 1 {
		t.Fatalf("join: %v %s epoch %d", kerr.ErrorForCode(r.ErrorCode), assigned(r), r.MemberEpoch)
	}
	// A new matching topic: the next heartbeat moves to a new epoch with it.
	h.topics.add("t2", 1)
	r = h.hb("A", 1, map[string][]int32{"t1": {0, 1}})
	if r.MemberEpoch != 2 || r.Assignment == nil || len(r.Assignment.Topics) != 2 {
		t.Fatalf("after t2 appeared: epoch %d %s", r.MemberEpoch, assigned(r))
	}
	// The instance id is still in use: another member cannot take it.
	if r := join("B", "i1", "t.*"); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Errorf("second member with i1: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A static leave (-2) keeps the partitions for the instance; its
	// replacement gets them back without a new group epoch.
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = "g", "A", -2, kmsg.StringPtr("i1")
	var lr *kmsg.ConsumerGroupHeartbeatResponse
	h.m.ConsumerHeartbeat(h.now, req, "c", "/h", func(r *kmsg.ConsumerGroupHeartbeatResponse) { lr = r })
	h.flush()
	if lr.ErrorCode != 0 || lr.MemberEpoch != -2 {
		t.Fatalf("static leave: %v epoch %d", kerr.ErrorForCode(lr.ErrorCode), lr.MemberEpoch)
	}
	r = join("B", "i1", "t.*")
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || r.Assignment == nil || len(r.Assignment.Topics) != 2 {
		t.Fatalf("replacement: %v epoch %d %s", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, assigned(r))
	}
	if d := h.m.ConsumerDescribe("g"); d.Epoch != 2 || len(d.Members) != 1 || d.Members[0].MemberID != "B" || *d.Members[0].SubscribedTopicRegex != "t.*" {
		t.Errorf("describe after the replacement: %+v", d)
	}
}
