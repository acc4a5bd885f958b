package group

// KIP-848's consumer group protocol (ConsumerGroupHeartbeat), after
// Kafka's GroupMetadataManager.consumerGroupHeartbeat, ConsumerGroup and
// CurrentAssignmentBuilder:
//
//   - A member joins with member epoch 0 (its subscription: topic names
//     and/or a regular expression, and optionally a server assignor), and
//     heartbeats with its epoch and the partitions it owns. It leaves with
//     epoch -1 (a static member with -2: it keeps its partitions until the
//     same group.instance.id rejoins or its session expires).
//   - Every change of membership, subscriptions or of the subscribed
//     topics' metadata bumps the group epoch; the target assignment of the
//     group is then computed by the server-side assignor (uniform or range,
//     group.consumer.assignors) at that epoch.
//   - Each member is reconciled towards its target independently: a
//     member first revokes the partitions it must give up (it stays at its
//     epoch, UNREVOKED_PARTITIONS, until a heartbeat no longer reports
//     them), then moves to the target epoch and gets the partitions no one
//     else owns any longer (UNRELEASED_PARTITIONS while some are still
//     owned by another member). No member ever stops for another.
//   - A member missing its session (group.consumer.session.timeout.ms), or
//     not revoking within its rebalance timeout, is fenced: removed, its
//     partitions freed.
//
// State kept in __consumer_offsets, in Kafka's records: the group epoch
// (ConsumerGroupMetadata, key version 3), each member's metadata and
// current assignment (key versions 5 and 8, consumer_records.go), so that
// members keep their epochs and partitions when the coordinator moves. The
// target assignment (Kafka's versions 6 and 7) is not written: a loaded
// group computes it again. The committed offsets are the same records as
// for classic groups.

import (
	"crypto/rand"
	"encoding/base64"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicID is a topic's UUID.
type TopicID [16]byte

// TopicInfo is one topic as the consumer protocol sees it.
type TopicInfo struct {
	Name       string
	ID         TopicID
	Partitions int32
}

// Topics is a view of the cluster's topics, for the server-side
// assignors and regular-expression subscriptions.
type Topics interface {
	// Version changes whenever the topics may have changed.
	Version() int64
	Topic(name string) (TopicInfo, bool)
	TopicByID(id TopicID) (TopicInfo, bool)
	// Names is every topic's name.
	Names() []string
}

// Consumer member states, Kafka's MemberState.
type memberState int8

const (
	memberStable memberState = iota
	memberUnrevoked
	memberUnreleased
)

func (s memberState) String() string {
	switch s {
	case memberUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "STABLE"
}

type tp struct {
	id TopicID
	p  int32
}

// assignment is a set of partitions by topic id; partition lists sorted.
type assignment map[TopicID][]int32

func (a assignment) has(id TopicID, p int32) bool {
	ps := a[id]
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	return i < len(ps) && ps[i] == p
}

func (a assignment) add(id TopicID, p int32) {
	ps := a[id]
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	if i < len(ps) && ps[i] == p {
		return
	}
	ps = append(ps, 0)
	copy(ps[i+1:], ps[i:])
	ps[i] = p
	a[id] = ps
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a assignment) each(fn func(TopicID, int32)) {
	for id, ps := range a {
		for _, p := range ps {
			fn(id, p)
		}
	}
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		qs, ok := b[id]
		if !ok || len(qs) != len(ps) {
			return false
		}
		for i := range ps {
			if ps[i] != qs[i] {
				return false
			}
		}
	}
	return true
}

func fromOwned(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) assignment {
	a := assignment{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			a.add(t.TopicID, p)
		}
	}
	return a
}

type consumerMember struct {
	id                   string
	instanceID, rackID   *string
	clientID, clientHost string
	epoch, prevEpoch     int32
	state                memberState
	rebalanceTimeout     time.Duration
	assignor             string // the member's ServerAssignor, "" for none
	topics               []string
	regex                string
	re                   *regexpMatcher

	assigned, revoking assignment
	// since is the member epoch at which each owned partition was
	// assigned (KIP-1251: an OffsetCommit with an older epoch may commit
	// partitions assigned at or before it).
	since map[tp]int32

	deadline       time.Time // session expiry
	revokeDeadline time.Time // rebalance timeout while revoking; zero when not
}

// consumerGroup is the KIP-848 part of a group of type "consumer".
type consumerGroup struct {
	epoch, assignmentEpoch int32
	members                map[string]*consumerMember
	static                 map[string]string // instance id -> member id
	target                 map[string]assignment
	owners                 map[tp]string // partition -> member owning it (assigned or revoking)
	assignor               string        // the assignor of the last target assignment
	// subscription is the signature of the subscribed topics' metadata
	// at topicsVersion; a change bumps the group epoch.
	subscription  string
	topicsVersion int64
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: map[string]*consumerMember{}, static: map[string]string{},
		target: map[string]assignment{}, owners: map[tp]string{}, topicsVersion: -1,
	}
}

// stateName is the group's state as Kafka's ConsumerGroupState names it.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, mb := range cg.members {
		if mb.epoch != cg.assignmentEpoch || mb.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// syncState keeps the classic view of the group (Empty or Stable) that
// offsets, deletion and expiry use.
func (g *group) syncConsumerState(now time.Time) {
	s := Stable
	if len(g.cg.members) == 0 {
		s = Empty
	}
	if g.state != s {
		g.transition(s, now)
	}
}

// newKafkaUUID is a random member id as Kafka's Uuid.randomUuid().toString().
func newKafkaUUID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func heartbeatError(e *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.ErrorCode = e.Code
	if msg != "" {
		r.ErrorMessage = kmsg.StringPtr(msg)
	}
	return r
}

// validateHeartbeat checks a request as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid does.
func validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) string {
	switch {
	case req.Group == "":
		return "GroupId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return "RackId can't be empty."
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
		}
	case req.MemberEpoch > 0 || req.MemberEpoch == -1 || req.MemberEpoch == -2:
		if req.MemberID == "" {
			return "MemberId can't be empty."
		}
		if req.MemberEpoch == -2 && req.InstanceID == nil {
			return "InstanceId can't be null."
		}
	default:
		return "MemberEpoch is invalid."
	}
	return ""
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat; reply is called once,
// now or after the records it changed are written.
func (m *Machine) ConsumerHeartbeat(now time.Time, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	if msg := validateHeartbeat(req); msg != "" {
		reply(heartbeatError(kerr.InvalidRequest, msg))
		return
	}
	if e := m.coordinatorError(req.Group); e != nil {
		reply(heartbeatError(e, ""))
		return
	}
	if req.SubscribedTopicRegex != nil {
		if _, err := m.compileRegex(*req.SubscribedTopicRegex); err != nil {
			reply(heartbeatError(kerr.InvalidRegularExpression, "SubscribedTopicRegex is not a valid regular expression: "+err.Error()))
			return
		}
	}
	if req.ServerAssignor != nil && !m.knownAssignor(*req.ServerAssignor) {
		reply(heartbeatError(kerr.UnsupportedAssignor, "ServerAssignor "+*req.ServerAssignor+" is not supported. Supported assignors: "+strings.Join(m.cfg.ConsumerAssignors, ", ")+"."))
		return
	}
	g := m.groups[req.Group]
	var recs []Record
	switch {
	case g == nil && req.MemberEpoch != 0:
		reply(heartbeatError(kerr.GroupIDNotFound, "Consumer group "+req.Group+" not found."))
		return
	case g == nil:
		g = m.getOrCreate(req.Group, now, true)
		g.cg = newConsumerGroup()
		g.protocolType = ConsumerProtocol
	case g.cg == nil:
		// Kafka upgrades an empty classic group to a consumer group (its
		// offsets stay); a classic group with members is not a
		// consumer group.
		if len(g.members) > 0 || len(g.pending) > 0 || req.MemberEpoch != 0 {
			reply(heartbeatError(kerr.GroupIDNotFound, "Group "+req.Group+" is not a consumer group."))
			return
		}
		if g.generation > 0 || g.protocolType != "" {
			recs = append(recs, Record{Key: groupKey(g.id)})
		}
		g.cg = newConsumerGroup()
		g.protocolType, g.protocol, g.leader, g.generation = ConsumerProtocol, "", "", 0
	}
	cg := g.cg
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.HeartbeatIntervalMillis = int32(m.cfg.ConsumerHeartbeatInterval / time.Millisecond)

	switch req.MemberEpoch {
	case -1, -2:
		mb := cg.members[req.MemberID]
		if mb == nil {
			reply(heartbeatError(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.Group+"."))
			return
		}
		if req.InstanceID != nil && cg.static[*req.InstanceID] != mb.id {
			reply(heartbeatError(kerr.FencedInstanceID, ""))
			return
		}
		resp.MemberID = kmsg.StringPtr(mb.id)
		resp.MemberEpoch = req.MemberEpoch
		if req.MemberEpoch == -2 && mb.instanceID != nil {
			// Static leave: the member keeps its partitions (and its
			// target) until it rejoins or its session expires.
			mb.epoch = -2
			mb.revokeDeadline = time.Time{}
			m.setOwned(cg, mb, mb.assigned, assignment{})
			recs = append(recs, memberRecords(g.id, mb, false)...)
		} else {
			recs = append(recs, memberTombstones(g.id, mb.id)...)
			m.removeConsumerMember(g, mb)
			recs = append(recs, m.bumpEpoch(g, now))
		}
		g.syncConsumerState(now)
		m.replyAfter(g, recs, resp, reply)
		return
	}

	var mb *consumerMember
	replaced := false
	joining := req.MemberEpoch == 0
	if joining {
		id := req.MemberID
		if id == "" {
			id = newKafkaUUID()
		}
		mb = cg.members[id]
		if req.InstanceID != nil {
			if oldID, ok := cg.static[*req.InstanceID]; ok && oldID != id {
				old := cg.members[oldID]
				if old != nil && old.epoch != -2 {
					reply(heartbeatError(kerr.UnreleasedInstanceID, "Static member "+id+" with instance id "+*req.InstanceID+" cannot join the group because the instance id is owned by "+oldID+" member."))
					return
				}
				if old != nil {
					recs = append(recs, memberTombstones(g.id, old.id)...)
					mb = m.replaceConsumerStatic(cg, old, id)
					replaced = true
				}
			}
		}
		if mb == nil {
			if len(cg.members) >= m.cfg.ConsumerMaxSize {
				reply(heartbeatError(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of "+itoa(m.cfg.ConsumerMaxSize)+" members."))
				return
			}
			mb = &consumerMember{id: strings.Clone(id), assigned: assignment{}, revoking: assignment{}, since: map[tp]int32{}}
			cg.members[mb.id] = mb
		}
		if mb.epoch == -2 {
			mb.epoch, mb.prevEpoch = 0, 0
		}
		if req.InstanceID != nil {
			inst := strings.Clone(*req.InstanceID)
			mb.instanceID = &inst
			cg.static[inst] = mb.id
		}
	} else {
		mb = cg.members[req.MemberID]
		if mb == nil {
			if req.InstanceID != nil {
				if owner, ok := cg.static[*req.InstanceID]; ok && owner != req.MemberID {
					reply(heartbeatError(kerr.FencedInstanceID, ""))
					return
				}
			}
			reply(heartbeatError(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+req.Group+"."))
			return
		}
		if e, msg := checkMemberEpoch(mb, req); e != nil {
			reply(heartbeatError(e, msg))
			return
		}
	}
	prevAssigned := mb.assigned
	var prevMeta, prevAsg []byte
	if !replaced && !mb.deadline.IsZero() {
		prevMeta, prevAsg = consumerMemberValue(mb), consumerAssignmentValue(mb)
	}

	// 1. Update the member; a changed subscription (or subscribed
	// topics' metadata) bumps the group epoch.
	changed := mb.deadline.IsZero() // a new member
	mb.clientID, mb.clientHost = strings.Clone(clientID), clientHost
	if req.RackID != nil {
		r := strings.Clone(*req.RackID)
		mb.rackID = &r
	}
	if req.RebalanceTimeoutMillis > 0 {
		mb.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != mb.assignor {
		mb.assignor = strings.Clone(*req.ServerAssignor)
		changed = true
	}
	if req.SubscribedTopicNames != nil {
		ts := make([]string, len(req.SubscribedTopicNames))
		for i, t := range req.SubscribedTopicNames {
			ts[i] = strings.Clone(t)
		}
		sort.Strings(ts)
		ts = dedupSorted(ts)
		if !equalStrings(ts, mb.topics) {
			mb.topics = ts
			changed = true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != mb.regex {
		mb.regex = strings.Clone(*req.SubscribedTopicRegex)
		mb.re, _ = m.compileRegex(mb.regex)
		changed = true
	}
	if m.refreshSubscription(g) {
		changed = true
	}
	if changed {
		recs = append(recs, m.bumpEpoch(g, now))
	}

	// 2. Reconcile the member towards its target.
	owned := assignment(nil)
	if req.Topics != nil {
		owned = fromOwned(req.Topics)
	}
	m.reconcile(cg, mb, owned, now)
	mb.deadline = now.Add(m.cfg.ConsumerSessionTimeout)
	g.syncConsumerState(now)
	if v := consumerMemberValue(mb); string(v) != string(prevMeta) {
		recs = append(recs, Record{Key: consumerMemberKey(g.id, mb.id), Value: v})
	}
	if v := consumerAssignmentValue(mb); string(v) != string(prevAsg) {
		recs = append(recs, Record{Key: consumerAssignmentKey(g.id, mb.id), Value: v})
	}

	resp.MemberID = kmsg.StringPtr(mb.id)
	resp.MemberEpoch = mb.epoch
	full := joining || (req.RebalanceTimeoutMillis != -1 && req.SubscribedTopicNames != nil && req.Topics != nil)
	if full || !prevAssigned.equal(mb.assigned) {
		resp.Assignment = responseAssignment(mb.assigned)
	}
	m.replyAfter(g, recs, resp, reply)
}

// replyAfter replies at once, or after recs are written (an error then
// replaces the answer).
func (m *Machine) replyAfter(g *group, recs []Record, resp *kmsg.ConsumerGroupHeartbeatResponse, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	if len(recs) == 0 {
		reply(resp)
		return
	}
	m.write(g.partition, recs, func(_ time.Time, err error) {
		if err != nil {
			reply(heartbeatError(writeError(err), ""))
			return
		}
		reply(resp)
	})
}

func responseAssignment(a assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	r := &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}}
	ids := make([]TopicID, 0, len(a))
	for id := range a {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	for _, id := range ids {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID = id
		t.Partitions = append([]int32(nil), a[id]...)
		r.Topics = append(r.Topics, t)
	}
	return r
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid:
// a member may come back with its previous epoch (the answer that moved it
// was lost) only owning a subset of its assignment.
func checkMemberEpoch(mb *consumerMember, req *kmsg.ConsumerGroupHeartbeatRequest) (*kerr.Error, string) {
	got := req.MemberEpoch
	switch {
	case got > mb.epoch:
		return kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (" + itoa(int(got)) + ") than the one known by the group coordinator (" + itoa(int(mb.epoch)) + "). The member must abandon all its partitions and rejoin."
	case got < mb.epoch:
		if got != mb.prevEpoch || req.Topics == nil || !subsetOf(req.Topics, mb.assigned) {
			return kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (" + itoa(int(got)) + ") than the one known by the group coordinator (" + itoa(int(mb.epoch)) + "). The member must abandon all its partitions and rejoin."
		}
	}
	return nil, ""
}

func subsetOf(ts []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	for _, t := range ts {
		for _, p := range t.Partitions {
			if !a.has(t.TopicID, p) {
				return false
			}
		}
	}
	return true
}

// replaceConsumerStatic gives a static member's place (assignment, target) to a
// new member id, as Kafka's replaceMember; the new member starts at epoch
// 0 and reconciles from the old member's partitions.
func (m *Machine) replaceConsumerStatic(cg *consumerGroup, old *consumerMember, id string) *consumerMember {
	nm := *old
	nm.id = strings.Clone(id)
	nm.epoch, nm.prevEpoch = 0, 0
	nm.since = map[tp]int32{}
	delete(cg.members, old.id)
	cg.members[nm.id] = &nm
	if t, ok := cg.target[old.id]; ok {
		cg.target[nm.id] = t
		delete(cg.target, old.id)
	}
	old.assigned.each(func(id TopicID, p int32) { cg.owners[tp{id, p}] = nm.id })
	old.revoking.each(func(id TopicID, p int32) { delete(cg.owners, tp{id, p}) })
	nm.revoking = assignment{}
	return &nm
}

// removeConsumerMember fences mb: it leaves the group and its partitions
// are free.
func (m *Machine) removeConsumerMember(g *group, mb *consumerMember) {
	cg := g.cg
	m.setOwned(cg, mb, assignment{}, assignment{})
	delete(cg.members, mb.id)
	delete(cg.target, mb.id)
	if mb.instanceID != nil && cg.static[*mb.instanceID] == mb.id {
		delete(cg.static, *mb.instanceID)
	}
}

// bumpEpoch moves the group to a new epoch and computes its target
// assignment there; it returns the group-epoch record to write.
func (m *Machine) bumpEpoch(g *group, _ time.Time) Record {
	cg := g.cg
	cg.epoch++
	cg.topicsVersion = -1 // recompute the signature: subscriptions changed
	m.refreshSubscription(g)
	m.computeTarget(g)
	cg.assignmentEpoch = cg.epoch
	return Record{Key: consumerGroupKey(g.id), Value: consumerGroupValue(cg.epoch)}
}

// setOwned replaces mb's assigned and revoking partitions, keeping the
// owners index and the partitions' assignment epochs.
func (m *Machine) setOwned(cg *consumerGroup, mb *consumerMember, assigned, revoking assignment) {
	drop := func(id TopicID, p int32) {
		k := tp{id, p}
		if cg.owners[k] == mb.id {
			delete(cg.owners, k)
		}
	}
	mb.assigned.each(drop)
	mb.revoking.each(drop)
	mb.assigned, mb.revoking = assigned, revoking
	keep := make(map[tp]int32, assigned.count()+revoking.count())
	own := func(id TopicID, p int32) {
		k := tp{id, p}
		cg.owners[k] = mb.id
		if e, ok := mb.since[k]; ok {
			keep[k] = e
		} else {
			keep[k] = mb.epoch
		}
	}
	assigned.each(own)
	revoking.each(own)
	mb.since = keep
}

// reconcile is Kafka's CurrentAssignmentBuilder.build: it moves mb
// towards its target assignment at the group's assignment epoch. owned
// is what the member reported (nil: not reported).
func (m *Machine) reconcile(cg *consumerGroup, mb *consumerMember, owned assignment, now time.Time) {
	ownsRevoked := func(revoking assignment) bool {
		if owned == nil {
			return true
		}
		found := false
		revoking.each(func(id TopicID, p int32) {
			if owned.has(id, p) {
				found = true
			}
		})
		return found
	}
	switch mb.state {
	case memberStable:
		if mb.epoch == cg.assignmentEpoch {
			return
		}
		m.nextAssignment(cg, mb, mb.epoch, ownsRevoked, now)
	case memberUnrevoked:
		if ownsRevoked(mb.revoking) {
			return
		}
		m.nextAssignment(cg, mb, mb.epoch+1, ownsRevoked, now)
	case memberUnreleased:
		m.nextAssignment(cg, mb, mb.epoch, ownsRevoked, now)
	}
}

func (m *Machine) nextAssignment(cg *consumerGroup, mb *consumerMember, epoch int32, ownsRevoked func(assignment) bool, now time.Time) {
	target := cg.target[mb.id]
	newAssigned, revoke, pending := assignment{}, assignment{}, assignment{}
	unreleased := false
	mb.assigned.each(func(id TopicID, p int32) {
		if target.has(id, p) {
			newAssigned.add(id, p)
		} else {
			revoke.add(id, p)
		}
	})
	target.each(func(id TopicID, p int32) {
		if newAssigned.has(id, p) {
			return
		}
		if owner, ok := cg.owners[tp{id, p}]; ok && owner != mb.id || mb.revoking.has(id, p) {
			unreleased = true
			return
		}
		pending.add(id, p)
	})
	setEpoch := func(e int32) {
		if e != mb.epoch {
			mb.prevEpoch = mb.epoch
			mb.epoch = e
		}
	}
	switch {
	case len(revoke) > 0 && ownsRevoked(revoke):
		mb.state = memberUnrevoked
		setEpoch(epoch)
		m.setOwned(cg, mb, newAssigned, revoke)
		if mb.revokeDeadline.IsZero() {
			mb.revokeDeadline = now.Add(mb.rebalanceTimeout)
		}
		return
	case len(pending) > 0:
		pending.each(newAssigned.add)
	}
	mb.state = memberStable
	if unreleased {
		mb.state = memberUnreleased
	}
	setEpoch(cg.assignmentEpoch)
	mb.revokeDeadline = time.Time{}
	m.setOwned(cg, mb, newAssigned, assignment{})
}

// consumerTick fences members whose session expired or who did not
// revoke within their rebalance timeout.
func (m *Machine) consumerTick(g *group, now time.Time) {
	cg := g.cg
	var expired []*consumerMember
	for _, mb := range cg.members {
		if !now.Before(mb.deadline) || (!mb.revokeDeadline.IsZero() && !now.Before(mb.revokeDeadline)) {
			expired = append(expired, mb)
		}
	}
	if len(expired) == 0 {
		return
	}
	sort.Slice(expired, func(i, j int) bool { return expired[i].id < expired[j].id })
	var recs []Record
	for _, mb := range expired {
		recs = append(recs, memberTombstones(g.id, mb.id)...)
		m.removeConsumerMember(g, mb)
	}
	recs = append(recs, m.bumpEpoch(g, now))
	g.syncConsumerState(now)
	m.write(g.partition, recs, func(time.Time, error) {})
}

func (cg *consumerGroup) nextDeadline(consider func(time.Time)) {
	for _, mb := range cg.members {
		consider(mb.deadline)
		consider(mb.revokeDeadline)
	}
}

func dedupSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
