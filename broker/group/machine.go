package group

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a group's state, named as Kafka names them (DescribeGroups,
// ListGroups).
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	}
	return "Dead"
}

// Offset is one committed offset.
type Offset struct {
	Offset          int64
	LeaderEpoch     int32
	Metadata        string
	CommitTimestamp int64 // ms
	// order is when the offset's record was appended, relative to the
	// other records of the Machine (Kafka compares record offsets): a
	// committed transaction's offset replaces a committed one only when
	// written after it.
	order uint64
}

type topicPartition struct {
	topic     string
	partition int32
}

type protocol struct {
	name     string
	metadata []byte
}

type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []protocol
	assignment       []byte
	order            uint64 // join order, for leader choice

	// joinReply is set while the member waits for the rebalance to
	// complete; syncReply while it waits for the leader's assignment.
	joinReply func(*kmsg.JoinGroupResponse)
	syncReply func(*kmsg.SyncGroupResponse)
	// deadline is when the session expires without a heartbeat (not
	// while a join or sync is pending).
	deadline time.Time
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

func sameProtocols(a, b []protocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || string(a[i].metadata) != string(b[i].metadata) {
			return false
		}
	}
	return true
}

type group struct {
	id           string
	partition    int32
	state        State
	stateSince   time.Time
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	// pending are member ids handed out with MEMBER_ID_REQUIRED, with
	// when they expire (session timeout).
	pending map[string]time.Time
	static  map[string]string // instance id -> member id

	joinDeadline time.Time
	// initialDelay: the first rebalance of an empty group, which waits
	// InitialRebalanceDelay (extended while members keep arriving, up
	// to the rebalance timeout).
	initialDelay     bool
	initialRemaining time.Duration
	newMemberAdded   bool

	offsets map[topicPartition]Offset
	// inflight counts commits of each partition queued but not yet
	// written, so that a delete tombstones them too.
	inflight map[topicPartition]int
	// txnOffsets are the offsets written by TxnOffsetCommit per producer
	// id, pending until the transaction's marker: a commit makes them
	// committed offsets, an abort drops them. A producer's map stays
	// (maybe empty, after OffsetDelete) until its marker: the group has
	// an open transaction.
	txnOffsets map[int64]map[topicPartition]Offset
	// txnInflight counts TxnOffsetCommit writes of each partition queued
	// but not yet written: require_stable fetches see them as pending
	// already (Kafka replays a write before it is committed).
	txnInflight map[topicPartition]int

	// cg is set for a group of type "consumer" (KIP-848, consumer.go);
	// members, protocol and generation above are then unused.
	cg *consumerGroup
}

// typeName is the group's type as ListGroups reports it.
func (g *group) typeName() string {
	if g.cg != nil {
		return "consumer"
	}
	return "classic"
}

// stateName is the group's state as Kafka names it for its type.
func (g *group) stateName() string {
	if g.cg != nil {
		return g.cg.stateName()
	}
	return g.state.String()
}

// metaKey is the key of the group's metadata record (for tombstones).
func (g *group) metaKey() []byte {
	if g.cg != nil {
		return consumerGroupKey(g.id)
	}
	return groupKey(g.id)
}

func (g *group) is(s State) bool { return g.state == s }

func (g *group) transition(s State, now time.Time) {
	g.state = s
	g.stateSince = now
}

func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// sortedMembers returns the members in join order.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].order < ms[j].order })
	return ms
}

// Write is a batch of records the Machine needs appended to one
// __consumer_offsets partition. The driver appends the records (in the
// order Writes were taken; Writes of one partition may share a batch) and
// then calls Done, under the same serialization as every other Machine
// call, with the append's result.
//
// A Write with ProducerID >= 0 is transactional (TxnOffsetCommit): its
// records go into their own batch with that producer id and epoch, the
// transactional attribute and no sequence (-1), never shared with other
// Writes.
type Write struct {
	Partition     int32
	Records       []Record
	ProducerID    int64
	ProducerEpoch int16
	done          func(now time.Time, err error)
}

// Done reports the append's outcome to the Machine.
func (w *Write) Done(now time.Time, err error) { w.done(now, err) }

// Machine holds every group this coordinator serves. It is not safe for
// concurrent use: the driver serializes calls. Every method takes the
// current time; none does I/O. Replies go to the callbacks given with the
// requests, possibly later (JoinGroup, SyncGroup, and everything that
// waits for a Write); callbacks must not block or call the Machine.
type Machine struct {
	cfg       Config
	groups    map[string]*group
	loaded    map[int32]bool
	loading   map[int32]bool
	nparts    int32
	writes    []*Write
	nextOrder uint64
	lastCheck time.Time
	// seq orders applied offset records (Offset.order).
	seq uint64
	// openTxns indexes the groups with pending transactional offsets:
	// partition -> producer id -> group ids.
	openTxns map[int32]map[int64]map[string]bool
	// loadMarkers are markers that arrived while their partition was
	// loading; Finish applies them after the replay.
	loadMarkers map[int32][]txnMarker
	// topics is the cluster's topics, for consumer-protocol groups (nil:
	// none known).
	topics func() Topics
}

// NewMachine returns an empty Machine for a __consumer_offsets topic of
// nparts partitions.
func NewMachine(cfg Config, nparts int32) *Machine {
	if cfg.NewMemberID == nil {
		cfg.NewMemberID = func(clientID string) string {
			var b [16]byte
			rand.Read(b[:])
			return clientID + "-" + hex.EncodeToString(b[:4]) + "-" + hex.EncodeToString(b[4:6]) + "-" +
				hex.EncodeToString(b[6:8]) + "-" + hex.EncodeToString(b[8:10]) + "-" + hex.EncodeToString(b[10:])
		}
	}
	return &Machine{
		cfg: cfg, groups: map[string]*group{}, loaded: map[int32]bool{}, loading: map[int32]bool{}, nparts: nparts,
		openTxns: map[int32]map[int64]map[string]bool{}, loadMarkers: map[int32][]txnMarker{},
	}
}

// Partitions is the partition count of __consumer_offsets.
func (m *Machine) Partitions() int32 { return m.nparts }

// TakeWrites returns the writes queued since the last call, in order.
func (m *Machine) TakeWrites() []*Write {
	w := m.writes
	m.writes = nil
	return w
}

func (m *Machine) write(part int32, recs []Record, done func(now time.Time, err error)) {
	m.writes = append(m.writes, &Write{Partition: part, Records: recs, ProducerID: -1, ProducerEpoch: -1, done: done})
}

// coordinatorError is the error for a group this Machine does not serve:
// NOT_COORDINATOR when its partition is not loaded here.
func (m *Machine) coordinatorError(groupID string) *kerr.Error {
	if groupID == "" {
		return kerr.InvalidGroupID
	}
	p := PartitionFor(groupID, m.nparts)
	if m.loading[p] {
		return kerr.CoordinatorLoadInProgress
	}
	if !m.loaded[p] {
		return kerr.NotCoordinator
	}
	return nil
}

// getOrCreate returns the group, creating it Empty when create is set.
func (m *Machine) getOrCreate(id string, now time.Time, create bool) *group {
	g := m.groups[id]
	if g == nil && create {
		id = strings.Clone(id) // requests may alias connection buffers
		g = &group{
			id: id, partition: PartitionFor(id, m.nparts), state: Empty, stateSince: now,
			members: map[string]*member{}, pending: map[string]time.Time{}, static: map[string]string{},
			offsets: map[topicPartition]Offset{}, inflight: map[topicPartition]int{},
			txnOffsets: map[int64]map[topicPartition]Offset{}, txnInflight: map[topicPartition]int{},
		}
		m.groups[id] = g
	}
	return g
}

// removeGroup drops a group (it is Dead).
func (m *Machine) removeGroup(g *group, now time.Time) {
	g.transition(Dead, now)
	delete(m.groups, g.id)
	for pid := range g.txnOffsets {
		m.untrackTxn(g, pid)
	}
}

// groupRecord is the group-metadata record of g as it is now.
func groupRecord(g *group) Record {
	v := kmsg.GroupMetadataValue{Version: 3, ProtocolType: g.protocolType, Generation: g.generation, CurrentStateTimestamp: g.stateSince.UnixMilli()}
	if g.protocol != "" {
		v.Protocol = kmsg.StringPtr(g.protocol)
	}
	if g.leader != "" {
		v.Leader = kmsg.StringPtr(g.leader)
	}
	for _, mb := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = mb.id, mb.instanceID, mb.clientID, mb.clientHost
		vm.RebalanceTimeoutMillis = int32(mb.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(mb.sessionTimeout / time.Millisecond)
		vm.Subscription = mb.metadataFor(g.protocol)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		vm.Assignment = mb.assignment
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return Record{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// NextDeadline is the earliest time Tick has something to do; zero when
// nothing is scheduled.
func (m *Machine) NextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if len(m.groups) > 0 {
		consider(m.lastCheck.Add(m.cfg.OffsetsRetentionCheckInterval))
	}
	for _, g := range m.groups {
		if g.is(PreparingRebalance) {
			consider(g.joinDeadline)
		}
		for _, t := range g.pending {
			consider(t)
		}
		for _, mb := range g.members {
			if mb.joinReply == nil && mb.syncReply == nil {
				consider(mb.deadline)
			}
		}
		if g.cg != nil {
			g.cg.nextDeadline(consider)
		}
	}
	return next
}

// Tick runs what is due at now: expired sessions and pending member ids,
// rebalance and initial-delay deadlines, and (every
// OffsetsRetentionCheckInterval) offset expiry.
func (m *Machine) Tick(now time.Time) {
	ids := make([]string, 0, len(m.groups))
	for id := range m.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids) // deterministic order for tests
	for _, id := range ids {
		g := m.groups[id]
		if g == nil {
			continue
		}
		for pid, t := range g.pending {
			if !now.Before(t) {
				delete(g.pending, pid)
			}
		}
		for _, mb := range g.sortedMembers() {
			if mb.joinReply == nil && mb.syncReply == nil && !now.Before(mb.deadline) {
				m.removeMember(g, mb, now, "session timeout")
			}
		}
		m.maybeCompleteJoin(g, now)
		if g.cg != nil {
			m.consumerTick(g, now)
		}
	}
	if m.lastCheck.IsZero() {
		m.lastCheck = now
	} else if !now.Before(m.lastCheck.Add(m.cfg.OffsetsRetentionCheckInterval)) {
		m.lastCheck = now
		m.expireOffsets(now)
	}
}

// Unload drops the groups of partition p (it moved away): waiting joins
// and syncs get NOT_COORDINATOR.
func (m *Machine) Unload(p int32) {
	delete(m.loaded, p)
	delete(m.loading, p)
	delete(m.openTxns, p)
	delete(m.loadMarkers, p)
	for id, g := range m.groups {
		if g.partition != p {
			continue
		}
		for _, mb := range g.members {
			if mb.joinReply != nil {
				mb.joinReply(joinError(mb.id, kerr.NotCoordinator))
				mb.joinReply = nil
			}
			if mb.syncReply != nil {
				mb.syncReply(syncError(kerr.NotCoordinator))
				mb.syncReply = nil
			}
		}
		delete(m.groups, id)
	}
}

// Loader replays the records of one partition into the Machine; Finish
// makes the partition served.
type Loader struct {
	m     *Machine
	p     int32
	metas map[string]*kmsg.GroupMetadataValue
	// cmetas are the epochs of consumer groups (ConsumerGroupMetadata),
	// cmembers their members (member and assignment records).
	cmetas   map[string]int32
	cmembers map[string]map[string]*consumerMember
	offs     map[string]map[topicPartition]Offset
	// pend are transactional offsets not yet resolved by a marker:
	// producer id -> group -> partition.
	pend map[int64]map[string]map[topicPartition]Offset
}

// Load starts loading partition p (dropping what was held for it).
func (m *Machine) Load(p int32) *Loader {
	m.Unload(p)
	m.loading[p] = true
	return &Loader{
		m: m, p: p, metas: map[string]*kmsg.GroupMetadataValue{}, cmetas: map[string]int32{}, cmembers: map[string]map[string]*consumerMember{}, offs: map[string]map[topicPartition]Offset{},
		pend: map[int64]map[string]map[topicPartition]Offset{},
	}
}

// Apply replays one record of a non-transactional batch; later records
// replace earlier ones.
func (l *Loader) Apply(key, value []byte) error { return l.ApplyRecord(-1, key, value) }

// ApplyRecord replays one record; producerID is the producer of its batch
// when the batch is transactional, -1 otherwise. A transactional offset
// is pending until ApplyMarker resolves its producer's transaction, as
// Kafka's OffsetMetadataManager.replay does; an offset tombstone removes
// the committed offset and every pending one of that partition.
func (l *Loader) ApplyRecord(producerID int64, key, value []byte) error {
	d, err := decodeRecord(key, value)
	if err != nil {
		return err
	}
	if d.skip {
		return nil
	}
	if d.memberKind != 0 {
		ms := l.cmembers[d.group]
		if d.memberRec == nil {
			delete(ms, d.member)
			return nil
		}
		if ms == nil {
			ms = map[string]*consumerMember{}
			l.cmembers[d.group] = ms
		}
		mb := ms[d.member]
		if mb == nil {
			mb = &consumerMember{}
			ms[d.member] = mb
		}
		r := d.memberRec
		if d.memberKind == 5 {
			mb.instanceID, mb.rackID, mb.clientID, mb.clientHost = r.instanceID, r.rackID, r.clientID, r.clientHost
			mb.topics, mb.regex, mb.rebalanceTimeout, mb.assignor = r.topics, r.regex, r.rebalanceTimeout, r.assignor
		} else {
			mb.epoch, mb.prevEpoch, mb.state, mb.assigned, mb.revoking = r.epoch, r.prevEpoch, r.state, r.assigned, r.revoking
		}
		return nil
	}
	if d.isConsumer {
		if d.consumerTombstone {
			delete(l.cmetas, d.group)
			delete(l.cmembers, d.group)
			return nil
		}
		l.cmetas[d.group] = d.consumerEpoch
		delete(l.metas, d.group) // an upgraded classic group
		return nil
	}
	if d.isOffset {
		tp := topicPartition{d.topic, d.partition}
		if d.offset == nil {
			delete(l.offs[d.group], tp)
			for _, byGroup := range l.pend {
				delete(byGroup[d.group], tp)
			}
			return nil
		}
		l.m.seq++
		o := Offset{Offset: d.offset.Offset, LeaderEpoch: d.offset.LeaderEpoch, Metadata: d.offset.Metadata, CommitTimestamp: d.offset.CommitTimestamp, order: l.m.seq}
		if producerID >= 0 {
			byGroup := l.pend[producerID]
			if byGroup == nil {
				byGroup = map[string]map[topicPartition]Offset{}
				l.pend[producerID] = byGroup
			}
			if byGroup[d.group] == nil {
				byGroup[d.group] = map[topicPartition]Offset{}
			}
			byGroup[d.group][tp] = o
			return nil
		}
		offs := l.offs[d.group]
		if offs == nil {
			offs = map[topicPartition]Offset{}
			l.offs[d.group] = offs
		}
		offs[tp] = o
		return nil
	}
	if d.meta == nil {
		delete(l.metas, d.group)
		// A group tombstone follows the deletion of its offsets.
		delete(l.offs, d.group)
		for _, byGroup := range l.pend {
			delete(byGroup, d.group)
		}
		return nil
	}
	l.metas[d.group] = d.meta
	delete(l.cmetas, d.group) // a consumer group turned classic
	return nil
}

// ApplyMarker replays a transaction marker of producerID: on commit its
// pending offsets become committed (each unless a later commit of the
// partition was replayed before), on abort they are dropped.
func (l *Loader) ApplyMarker(producerID int64, commit bool) {
	byGroup := l.pend[producerID]
	delete(l.pend, producerID)
	if !commit {
		return
	}
	for id, offs := range byGroup {
		for tp, o := range offs {
			cur := l.offs[id]
			if cur == nil {
				cur = map[topicPartition]Offset{}
				l.offs[id] = cur
			}
			if old, ok := cur[tp]; !ok || o.order > old.order {
				cur[tp] = o
			}
		}
	}
}

// Finish builds the groups from the replayed records and marks the
// partition loaded. Members restored from a group record start a fresh
// session: they must heartbeat within their session timeout.
func (l *Loader) Finish(now time.Time) {
	m := l.m
	build := func(id string) *group {
		g := m.getOrCreate(id, now, true)
		g.partition = l.p
		return g
	}
	for id, meta := range l.metas {
		g := build(id)
		g.protocolType = meta.ProtocolType
		g.generation = meta.Generation
		if meta.Protocol != nil {
			g.protocol = *meta.Protocol
		}
		if meta.Leader != nil {
			g.leader = *meta.Leader
		}
		if meta.CurrentStateTimestamp > 0 {
			g.stateSince = time.UnixMilli(meta.CurrentStateTimestamp)
		}
		for _, vm := range meta.Members {
			m.nextOrder++
			mb := &member{
				id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
				rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
				sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				protocolType:     meta.ProtocolType,
				protocols:        []protocol{{name: g.protocol, metadata: vm.Subscription}},
				assignment:       vm.Assignment,
				order:            m.nextOrder,
			}
			if mb.rebalanceTimeout <= 0 {
				mb.rebalanceTimeout = mb.sessionTimeout
			}
			mb.deadline = now.Add(mb.sessionTimeout)
			g.members[mb.id] = mb
			if mb.instanceID != nil {
				g.static[*mb.instanceID] = mb.id
			}
		}
		if len(g.members) > 0 {
			g.state = Stable
		} else {
			g.state = Empty
		}
	}
	// Consumer groups come back empty at their epoch: members rejoin
	// (weir keeps members and assignments in memory only).
	for id, epoch := range l.cmetas {
		g := build(id)
		g.cg = newConsumerGroup()
		g.cg.epoch, g.cg.assignmentEpoch = epoch, epoch
		g.protocolType = ConsumerProtocol
		g.state = Empty
		m.restoreMembers(g, l.cmembers[id], now)
	}
	for id, offs := range l.offs {
		if len(offs) == 0 && l.metas[id] == nil {
			if _, ok := l.cmetas[id]; !ok {
				continue
			}
		}
		g := build(id)
		for tp, o := range offs {
			g.offsets[tp] = o
		}
	}
	// Transactions still open: their offsets stay pending until the
	// marker arrives (groupTxnMarker).
	for pid, byGroup := range l.pend {
		for id, offs := range byGroup {
			g := build(id)
			m.addPending(g, pid, offs)
		}
	}
	delete(m.loading, l.p)
	m.loaded[l.p] = true
	// Markers written while the partition was loading (after the replay
	// had passed them).
	marks := m.loadMarkers[l.p]
	delete(m.loadMarkers, l.p)
	for _, mk := range marks {
		m.TxnMarker(now, l.p, mk.producerID, mk.commit)
	}
}

// Loaded reports whether partition p is served.
func (m *Machine) Loaded(p int32) bool { return m.loaded[p] }

// CoordinatorError is the error a request for group gets here: nil when
// this Machine serves it, INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS
// or NOT_COORDINATOR.
func (m *Machine) CoordinatorError(group string) *kerr.Error { return m.coordinatorError(group) }
