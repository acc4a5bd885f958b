package group

// The rebalance protocol, after Kafka's GroupCoordinator:
//
//	Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
//	CompletingRebalance --leader's SyncGroup persisted--> Stable
//	Stable | CompletingRebalance --join with changes / leave / session expiry--> PreparingRebalance
//	PreparingRebalance --no member left--> Empty
//
// The first rebalance of an Empty group waits group.initial.rebalance.delay.ms
// (extended by the same delay while new members keep arriving, up to the
// rebalance timeout). Otherwise the rebalance completes when every member
// has rejoined (and no MEMBER_ID_REQUIRED id is outstanding) or when the
// rebalance timeout (the largest of the members') passes; dynamic members
// that did not rejoin are then removed, static ones kept.

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func joinError(memberID string, e *kerr.Error) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.ErrorCode = e.Code
	r.MemberID = memberID
	r.Generation = -1
	return r
}

func syncError(e *kerr.Error) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode = e.Code
	r.MemberAssignment = []byte{}
	return r
}

// joinResponse is the successful JoinGroup answer for mb; the leader gets
// every member's metadata for the chosen protocol.
func joinResponse(g *group, mb *member) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation = g.generation
	r.ProtocolType = kmsg.StringPtr(g.protocolType)
	r.Protocol = kmsg.StringPtr(g.protocol)
	r.LeaderID = g.leader
	r.MemberID = mb.id
	if mb.id == g.leader {
		for _, o := range g.sortedMembers() {
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = o.id, o.instanceID, o.metadataFor(g.protocol)
			r.Members = append(r.Members, jm)
		}
	}
	return r
}

// supports reports whether a joining member's protocols fit the group:
// same protocol type and at least one protocol every member supports.
func (g *group) supports(protocolType string, protos []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protos) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protos {
		all := true
		for _, mb := range g.members {
			if !hasProtocol(mb, p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func hasProtocol(mb *member, name string) bool {
	for _, p := range mb.protocols {
		if p.name == name {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol every member supports that most
// members prefer (ties: the earlier member's preference).
func (g *group) selectProtocol() string {
	ms := g.sortedMembers()
	if len(ms) == 0 {
		return ""
	}
	candidate := func(name string) bool {
		for _, mb := range ms {
			if !hasProtocol(mb, name) {
				return false
			}
		}
		return true
	}
	votes := map[string]int{}
	var order []string
	for _, mb := range ms {
		for _, p := range mb.protocols {
			if candidate(p.name) {
				if _, seen := votes[p.name]; !seen {
					order = append(order, p.name)
				}
				votes[p.name]++
				break
			}
		}
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

func copyProtocols(ps []kmsg.JoinGroupRequestProtocol) []protocol {
	out := make([]protocol, len(ps))
	for i, p := range ps {
		out[i] = protocol{name: strings.Clone(p.Name), metadata: append([]byte{}, p.Metadata...)}
	}
	return out
}

// Join handles a JoinGroup request; reply is called once, now or when the
// rebalance completes. clientHost is the peer's address.
func (m *Machine) Join(now time.Time, req *kmsg.JoinGroupRequest, clientID, clientHost string, reply func(*kmsg.JoinGroupResponse)) {
	if e := m.coordinatorError(req.Group); e != nil {
		reply(joinError(req.MemberID, e))
		return
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < m.cfg.MinSessionTimeout || session > m.cfg.MaxSessionTimeout {
		reply(joinError(req.MemberID, kerr.InvalidSessionTimeout))
		return
	}
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 || rebalance <= 0 {
		rebalance = session
	}
	g := m.groups[req.Group]
	if g == nil {
		if req.MemberID != "" {
			reply(joinError(req.MemberID, kerr.UnknownMemberID))
			return
		}
		g = m.getOrCreate(req.Group, now, true)
	}
	if g.cg != nil {
		// A consumer-protocol group: an empty one becomes classic again
		// (Kafka converts it); members of the classic protocol cannot
		// join one with consumer-protocol members (weir does not run
		// mixed groups).
		if len(g.cg.members) > 0 {
			reply(joinError(req.MemberID, kerr.InconsistentGroupProtocol))
			return
		}
		m.write(g.partition, []Record{{Key: consumerGroupKey(g.id)}}, func(time.Time, error) {})
		g.cg = nil
		g.protocolType = ""
	}
	defer m.dropIfUnused(g)
	if !g.supports(req.ProtocolType, req.Protocols) {
		reply(joinError(req.MemberID, kerr.InconsistentGroupProtocol))
		return
	}
	j := joining{req: req, clientID: clientID, clientHost: clientHost, session: session, rebalance: rebalance, reply: reply}
	if req.MemberID == "" {
		m.joinUnknown(now, g, &j)
	} else {
		m.joinKnown(now, g, &j)
	}
}

type joining struct {
	req                  *kmsg.JoinGroupRequest
	clientID, clientHost string
	session, rebalance   time.Duration
	reply                func(*kmsg.JoinGroupResponse)
}

func (m *Machine) joinUnknown(now time.Time, g *group, j *joining) {
	if len(g.members)+len(g.pending) >= m.cfg.MaxSize {
		j.reply(joinError("", kerr.GroupMaxSizeReached))
		return
	}
	id := m.cfg.NewMemberID(j.clientID)
	if inst := j.req.InstanceID; inst != nil {
		if old := g.members[g.static[*inst]]; old != nil {
			m.replaceStatic(now, g, old, id, j)
			return
		}
		m.addMember(now, g, id, j)
		return
	}
	if j.req.Version >= 4 {
		// KIP-394: the client must come back with this id.
		g.pending[id] = now.Add(j.session)
		j.reply(joinError(id, kerr.MemberIDRequired))
		return
	}
	m.addMember(now, g, id, j)
}

func (m *Machine) joinKnown(now time.Time, g *group, j *joining) {
	id := j.req.MemberID
	if _, ok := g.pending[id]; ok {
		delete(g.pending, id)
		m.addMember(now, g, id, j)
		return
	}
	mb := g.members[id]
	if g.fenced(j.req.InstanceID, id) {
		j.reply(joinError(id, kerr.FencedInstanceID))
		return
	}
	if mb == nil {
		j.reply(joinError(id, kerr.UnknownMemberID))
		return
	}
	newProtos := copyProtocols(j.req.Protocols)
	switch g.state {
	case PreparingRebalance:
		m.updateMember(g, mb, j, newProtos)
		m.maybeCompleteJoin(g, now)
	case CompletingRebalance:
		if sameProtocols(mb.protocols, newProtos) {
			// A resent join: answer as the rebalance did.
			mb.deadline = now.Add(mb.sessionTimeout)
			j.reply(joinResponse(g, mb))
			return
		}
		m.updateMember(g, mb, j, newProtos)
		m.prepareRebalance(g, now)
	case Stable:
		if id == g.leader || !sameProtocols(mb.protocols, newProtos) {
			m.updateMember(g, mb, j, newProtos)
			m.prepareRebalance(g, now)
			return
		}
		mb.deadline = now.Add(mb.sessionTimeout)
		j.reply(joinResponse(g, mb))
	default:
		j.reply(joinError(id, kerr.UnknownMemberID))
	}
}

// updateMember records a rejoin: new protocols and timeouts, and the
// reply to send when the rebalance completes.
func (m *Machine) updateMember(g *group, mb *member, j *joining, protos []protocol) {
	if mb.joinReply != nil {
		// A second join while the first waits: the first is stale.
		mb.joinReply(joinError(mb.id, kerr.RebalanceInProgress))
	}
	mb.protocols = protos
	mb.sessionTimeout, mb.rebalanceTimeout = j.session, j.rebalance
	mb.clientID, mb.clientHost = j.clientID, j.clientHost
	mb.joinReply = j.reply
}

func (m *Machine) addMember(now time.Time, g *group, id string, j *joining) {
	m.nextOrder++
	mb := &member{
		id: id, instanceID: j.req.InstanceID, clientID: j.clientID, clientHost: j.clientHost,
		rebalanceTimeout: j.rebalance, sessionTimeout: j.session,
		protocolType: strings.Clone(j.req.ProtocolType), protocols: copyProtocols(j.req.Protocols),
		order: m.nextOrder, joinReply: j.reply, deadline: now.Add(j.session),
	}
	if mb.instanceID != nil {
		inst := strings.Clone(*mb.instanceID)
		mb.instanceID = &inst
		g.static[inst] = id
	}
	if len(g.members) == 0 {
		g.protocolType = strings.Clone(j.req.ProtocolType)
	}
	g.members[id] = mb
	if g.leader == "" {
		g.leader = id
	}
	if g.is(PreparingRebalance) && g.initialDelay {
		g.newMemberAdded = true
	}
	m.maybePrepareRebalance(g, now)
}

// replaceStatic gives a static member (same group.instance.id) its new
// member id; the old id is fenced. A follower rejoining a Stable group
// gets the current generation and its assignment without a rebalance
// (KIP-345) unless its protocols change the protocol the group would
// select, as in Kafka: the protocol metadata itself may differ (a
// restarted client's always does: it carries the client's generation and
// owned partitions), the assignment stays until the next rebalance. A
// restarted leader rebalances, so that it knows it leads (JoinGroup v9's
// SkipAssignment, KIP-814, is not served).
func (m *Machine) replaceStatic(now time.Time, g *group, old *member, id string, j *joining) {
	if old.joinReply != nil {
		old.joinReply(joinError(old.id, kerr.FencedInstanceID))
		old.joinReply = nil
	}
	if old.syncReply != nil {
		old.syncReply(syncError(kerr.FencedInstanceID))
		old.syncReply = nil
	}
	delete(g.members, old.id)
	if g.leader == old.id {
		g.leader = id
	}
	old.id = id
	g.members[id] = old
	g.static[*old.instanceID] = id
	protos := copyProtocols(j.req.Protocols)
	if g.is(Stable) && g.leader != id && g.keepsProtocol(old, protos) {
		old.protocols = protos
		old.sessionTimeout, old.rebalanceTimeout = j.session, j.rebalance
		old.clientID, old.clientHost = j.clientID, j.clientHost
		old.deadline = now.Add(old.sessionTimeout)
		gen := g.generation
		m.write(g.partition, []Record{groupRecord(g)}, func(now time.Time, err error) {
			if err != nil {
				j.reply(joinError(id, writeError(err)))
				return
			}
			if m.groups[g.id] != g || g.generation != gen || g.members[id] != old {
				j.reply(joinError(id, kerr.RebalanceInProgress))
				return
			}
			j.reply(joinResponse(g, old))
		})
		return
	}
	m.updateMember(g, old, j, protos)
	if g.is(PreparingRebalance) {
		m.maybeCompleteJoin(g, now)
	} else {
		m.prepareRebalance(g, now)
	}
}

func (m *Machine) maybePrepareRebalance(g *group, now time.Time) {
	switch g.state {
	case Empty, Stable, CompletingRebalance:
		m.prepareRebalance(g, now)
	case PreparingRebalance:
		m.maybeCompleteJoin(g, now)
	}
}

func (m *Machine) prepareRebalance(g *group, now time.Time) {
	if g.is(CompletingRebalance) {
		for _, mb := range g.members {
			if mb.syncReply != nil {
				mb.syncReply(syncError(kerr.RebalanceInProgress))
				mb.syncReply = nil
			}
			mb.assignment = nil
		}
	}
	rt := g.rebalanceTimeout()
	if g.is(Empty) {
		delay := min(m.cfg.InitialRebalanceDelay, rt)
		g.initialDelay, g.initialRemaining, g.newMemberAdded = true, rt-delay, false
		g.joinDeadline = now.Add(delay)
	} else {
		g.initialDelay = false
		g.joinDeadline = now.Add(rt)
	}
	g.transition(PreparingRebalance, now)
	m.maybeCompleteJoin(g, now)
}

func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, mb := range g.members {
		if mb.joinReply == nil {
			return false
		}
	}
	return true
}

func (m *Machine) maybeCompleteJoin(g *group, now time.Time) {
	if !g.is(PreparingRebalance) {
		return
	}
	if g.initialDelay {
		if now.Before(g.joinDeadline) {
			return
		}
		if g.newMemberAdded && g.initialRemaining > 0 {
			d := min(m.cfg.InitialRebalanceDelay, g.initialRemaining)
			g.initialRemaining -= d
			g.newMemberAdded = false
			g.joinDeadline = now.Add(d)
			if d > 0 {
				return
			}
		}
	} else if !g.allJoined() && now.Before(g.joinDeadline) {
		return
	}
	m.completeJoin(g, now)
}

func (m *Machine) completeJoin(g *group, now time.Time) {
	for _, mb := range g.sortedMembers() {
		if mb.joinReply == nil && mb.instanceID == nil {
			m.dropMember(g, mb)
		}
	}
	g.initialDelay = false
	g.generation++
	if len(g.members) == 0 {
		g.transition(Empty, now)
		g.protocol, g.leader = "", ""
		m.write(g.partition, []Record{groupRecord(g)}, func(time.Time, error) {})
		return
	}
	if l := g.members[g.leader]; l == nil || l.joinReply == nil {
		for _, mb := range g.sortedMembers() {
			if mb.joinReply != nil {
				g.leader = mb.id
				break
			}
		}
	}
	g.protocol = g.selectProtocol()
	g.transition(CompletingRebalance, now)
	for _, mb := range g.sortedMembers() {
		if mb.joinReply != nil {
			mb.joinReply(joinResponse(g, mb))
			mb.joinReply = nil
			mb.deadline = now.Add(mb.sessionTimeout)
		}
	}
}

// dropMember removes mb without triggering anything; waiting requests
// get UNKNOWN_MEMBER_ID.
func (m *Machine) dropMember(g *group, mb *member) {
	if mb.joinReply != nil {
		mb.joinReply(joinError(mb.id, kerr.UnknownMemberID))
		mb.joinReply = nil
	}
	if mb.syncReply != nil {
		mb.syncReply(syncError(kerr.UnknownMemberID))
		mb.syncReply = nil
	}
	delete(g.members, mb.id)
	if mb.instanceID != nil && g.static[*mb.instanceID] == mb.id {
		delete(g.static, *mb.instanceID)
	}
	if g.leader == mb.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// removeMember removes mb (left, or session expired) and rebalances.
func (m *Machine) removeMember(g *group, mb *member, now time.Time, _ string) {
	m.dropMember(g, mb)
	switch g.state {
	case Stable, CompletingRebalance:
		m.prepareRebalance(g, now)
	case PreparingRebalance:
		m.maybeCompleteJoin(g, now)
	}
}

// dropIfUnused forgets a group that holds nothing (created by a join that
// failed).
func (m *Machine) dropIfUnused(g *group) {
	if g.cg == nil && g.is(Empty) && g.generation == 0 && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && len(g.inflight) == 0 && len(g.txnOffsets) == 0 && m.groups[g.id] == g {
		delete(m.groups, g.id)
	}
}

// Sync handles a SyncGroup request; reply is called once, now or when the
// leader's assignment is persisted.
func (m *Machine) Sync(now time.Time, req *kmsg.SyncGroupRequest, reply func(*kmsg.SyncGroupResponse)) {
	if e := m.coordinatorError(req.Group); e != nil {
		reply(syncError(e))
		return
	}
	g := m.groups[req.Group]
	if g == nil {
		reply(syncError(kerr.UnknownMemberID))
		return
	}
	mb := g.members[req.MemberID]
	switch {
	case g.fenced(req.InstanceID, req.MemberID):
		reply(syncError(kerr.FencedInstanceID))
		return
	case mb == nil:
		reply(syncError(kerr.UnknownMemberID))
		return
	case req.Generation != g.generation:
		reply(syncError(kerr.IllegalGeneration))
		return
	case (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol):
		reply(syncError(kerr.InconsistentGroupProtocol))
		return
	}
	switch g.state {
	case PreparingRebalance:
		reply(syncError(kerr.RebalanceInProgress))
	case Stable:
		mb.deadline = now.Add(mb.sessionTimeout)
		reply(syncResponse(g, mb))
	case CompletingRebalance:
		if mb.syncReply != nil {
			mb.syncReply(syncError(kerr.RebalanceInProgress))
		}
		mb.syncReply = reply
		if mb.id == g.leader {
			m.leaderSync(now, g, req)
		}
	default:
		reply(syncError(kerr.UnknownMemberID))
	}
}

func syncResponse(g *group, mb *member) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ProtocolType = kmsg.StringPtr(g.protocolType)
	r.Protocol = kmsg.StringPtr(g.protocol)
	r.MemberAssignment = mb.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

// leaderSync stores the leader's assignment and, once persisted, hands
// every waiting member its part and makes the group Stable.
func (m *Machine) leaderSync(now time.Time, g *group, req *kmsg.SyncGroupRequest) {
	asg := make(map[string][]byte, len(req.GroupAssignment))
	for _, a := range req.GroupAssignment {
		asg[a.MemberID] = append([]byte{}, a.MemberAssignment...)
	}
	for _, mb := range g.members {
		mb.assignment = asg[mb.id]
		if mb.assignment == nil {
			mb.assignment = []byte{}
		}
	}
	fail := func(now time.Time, e *kerr.Error) {
		for _, mb := range g.members {
			if mb.syncReply != nil {
				mb.syncReply(syncError(e))
				mb.syncReply = nil
			}
			mb.assignment = nil
		}
		m.prepareRebalance(g, now)
	}
	rec := groupRecord(g)
	if len(rec.Key)+len(rec.Value) > m.cfg.MaxRecordBytes {
		// Kafka: the group record is too large to store.
		fail(now, kerr.UnknownServerError)
		return
	}
	gen := g.generation
	m.write(g.partition, []Record{rec}, func(now time.Time, err error) {
		if m.groups[g.id] != g || !g.is(CompletingRebalance) || g.generation != gen {
			return // a new rebalance already answered the waiters
		}
		if err != nil {
			fail(now, writeError(err))
			return
		}
		g.transition(Stable, now)
		for _, mb := range g.sortedMembers() {
			if mb.syncReply != nil {
				mb.syncReply(syncResponse(g, mb))
				mb.syncReply = nil
				mb.deadline = now.Add(mb.sessionTimeout)
			}
		}
	})
}

// fenced reports a static member id replaced by a newer one: the instance
// is known with another member id (KIP-345).
func (g *group) fenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	sid, ok := g.static[*instanceID]
	return ok && sid != memberID
}

// Heartbeat handles a Heartbeat request.
func (m *Machine) Heartbeat(now time.Time, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	r := kmsg.NewPtrHeartbeatResponse()
	r.ErrorCode = m.heartbeat(now, req).Code
	return r
}

var errNone = &kerr.Error{Message: "NONE", Code: 0}

func (m *Machine) heartbeat(now time.Time, req *kmsg.HeartbeatRequest) *kerr.Error {
	if e := m.coordinatorError(req.Group); e != nil {
		return e
	}
	g := m.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID
	}
	mb := g.members[req.MemberID]
	switch {
	case g.fenced(req.InstanceID, req.MemberID):
		return kerr.FencedInstanceID
	case mb == nil:
		return kerr.UnknownMemberID
	case req.Generation != g.generation:
		return kerr.IllegalGeneration
	}
	switch g.state {
	case PreparingRebalance:
		mb.deadline = now.Add(mb.sessionTimeout)
		return kerr.RebalanceInProgress
	case CompletingRebalance, Stable:
		mb.deadline = now.Add(mb.sessionTimeout)
		return errNone
	}
	return kerr.UnknownMemberID
}

// Leave handles a LeaveGroup request (v3+: a batch of members, by member
// id and/or group instance id).
func (m *Machine) Leave(now time.Time, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	r := kmsg.NewPtrLeaveGroupResponse()
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	if e := m.coordinatorError(req.Group); e != nil {
		r.ErrorCode = e.Code
		return r
	}
	g := m.groups[req.Group]
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		rm.ErrorCode = m.leaveOne(now, g, lm).Code
		r.Members = append(r.Members, rm)
	}
	if req.Version < 3 {
		r.ErrorCode = r.Members[0].ErrorCode
		r.Members = nil
	}
	return r
}

func (m *Machine) leaveOne(now time.Time, g *group, lm kmsg.LeaveGroupRequestMember) *kerr.Error {
	if g == nil {
		return kerr.UnknownMemberID
	}
	id := lm.MemberID
	if lm.InstanceID != nil {
		sid, ok := g.static[*lm.InstanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if id != "" && id != sid {
			return kerr.FencedInstanceID
		}
		id = sid
	} else if _, ok := g.pending[id]; ok {
		delete(g.pending, id)
		m.maybeCompleteJoin(g, now)
		return errNone
	}
	mb := g.members[id]
	if mb == nil {
		return kerr.UnknownMemberID
	}
	m.removeMember(g, mb, now, "left")
	return errNone
}

// keepsProtocol reports whether the group would still select its current
// protocol if mb offered protos.
func (g *group) keepsProtocol(mb *member, protos []protocol) bool {
	prev := mb.protocols
	mb.protocols = protos
	sel := g.selectProtocol()
	mb.protocols = prev
	return sel == g.protocol
}
