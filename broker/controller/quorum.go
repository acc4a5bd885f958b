package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"weir/broker/metadata"
)

// The controller quorum as Kafka 4.x has it (KIP-595 DescribeQuorum,
// KIP-853 AddRaftVoter/RemoveRaftVoter), on hashicorp/raft's membership:
//
//   - Kafka's voters are Raft voters; Kafka's observers (brokers that
//     fetch the metadata log without voting) are Raft nonvoters. A node
//     started with an id not in its voter list joins as a nonvoter: it
//     asks the leader (RPC "Join") to add it, and is caught up by Raft.
//   - AddVoter promotes an observer that reports it is caught up (Raft
//     AddVoter); RemoveVoter demotes a voter to an observer (Raft
//     DemoteVoter): a node that keeps running keeps following the
//     metadata. A removed leader steps down once the change commits.
//     One change at a time; Raft commits each before the next.
//   - Every node reports its Raft log (last index), its metadata
//     directory id and its controller listener with its heartbeats; the
//     leader keeps the reports (quorumTracker) for DescribeQuorum, whose
//     offsets are Raft indexes (index i holds offset i-1, so a log's end
//     offset is its last index and the high watermark the commit index)
//     and whose epoch is the Raft term.
//   - A node's metadata directory id (Kafka's directory.id) is in
//     meta.properties in its Raft directory, the file Kafka's
//     kafka-metadata-quorum add-controller reads.

// RaftReport is what a node tells the leader about its replica of the
// metadata log with every heartbeat.
type RaftReport struct {
	DirectoryID metadata.UUID `json:"directory_id"`
	Listener    string        `json:"listener"`
	Addr        string        `json:"addr"`
	LastIndex   uint64        `json:"last_index"`
}

// JoinArgs asks the leader to add a node as a nonvoter (observer).
type JoinArgs struct {
	ID   int32  `json:"id"`
	Addr string `json:"addr"`
}

// VoterArgs is an AddVoter or RemoveVoter request (RPC).
type VoterArgs struct {
	ID          int32                     `json:"id"`
	DirectoryID metadata.UUID             `json:"directory_id"`
	Endpoints   []metadata.QuorumEndpoint `json:"endpoints,omitempty"`
}

// QuorumReply is the leader's answer to a quorum RPC.
type QuorumReply struct {
	State *metadata.QuorumState `json:"state,omitempty"`
	// Index is the Raft index of a metadata change (wait for it to
	// apply before reading the image).
	Index uint64     `json:"index,omitempty"`
	Err   *WireError `json:"err,omitempty"`
}

func init() {
	wireErrors["duplicate_voter"] = metadata.ErrDuplicateVoter
	wireErrors["voter_not_found"] = metadata.ErrVoterNotFound
	wireErrors["voter_not_ready"] = metadata.ErrVoterNotReady
	wireErrors["invalid_voter"] = metadata.ErrInvalidVoter
	wireErrors["broker_not_registered"] = metadata.ErrBrokerNotRegistered
	wireErrors["broker_is_voter"] = metadata.ErrBrokerIsVoter
}

// memberState is the leader's view of one node's replica.
type memberState struct {
	report    RaftReport
	lastFetch time.Time
	caughtUp  time.Time
}

type indexSample struct {
	at    time.Time
	index uint64
}

// quorumTracker is the leader's record of the replicas' reports. It is
// reset when the Raft term changes (a new leader learns afresh).
type quorumTracker struct {
	mu      sync.Mutex
	term    uint64
	members map[int32]*memberState
	// samples are the leader's last index over time, to tell when a
	// replica's last index was the leader's (lastCaughtUpTimestamp).
	samples []indexSample
	// dirs are directory ids given to AddVoter (until a report comes).
	dirs map[int32]metadata.UUID
	// since is when this term's tracking started (the leader's election,
	// as far as the tracker knows).
	since time.Time
}

const sampleKeep = 2 * time.Minute

func (q *quorumTracker) resetFor(term uint64) {
	if q.term != term || q.members == nil {
		q.term = term
		q.members = map[int32]*memberState{}
		q.samples = nil
		q.dirs = map[int32]metadata.UUID{}
		q.since = time.Now()
	}
}

// sample notes the leader's last index at now.
func (q *quorumTracker) sample(now time.Time, last uint64) {
	if n := len(q.samples); n == 0 || q.samples[n-1].index != last {
		q.samples = append(q.samples, indexSample{at: now, index: last})
	}
	cut := 0
	for cut < len(q.samples)-1 && now.Sub(q.samples[cut].at) > sampleKeep {
		cut++
	}
	q.samples = q.samples[cut:]
}

// observe records node id's report, received by the leader at now when
// its own log ended at last.
func (q *quorumTracker) observe(term uint64, id int32, r RaftReport, now time.Time, last uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.resetFor(term)
	q.sample(now, last)
	m := q.members[id]
	if m == nil {
		m = &memberState{}
		q.members[id] = m
	}
	m.report, m.lastFetch = r, now
	if r.LastIndex >= last {
		m.caughtUp = now
		return
	}
	// The newest time the leader's log ended at or before r.LastIndex.
	for i := len(q.samples) - 1; i >= 0; i-- {
		if q.samples[i].index <= r.LastIndex {
			if q.samples[i].at.After(m.caughtUp) {
				m.caughtUp = q.samples[i].at
			}
			break
		}
	}
}

func (q *quorumTracker) member(term uint64, id int32) (memberState, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.resetFor(term)
	m, ok := q.members[id]
	if !ok {
		return memberState{}, false
	}
	return *m, true
}

func (q *quorumTracker) directory(term uint64, id int32) metadata.UUID {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.resetFor(term)
	if m, ok := q.members[id]; ok && m.report.DirectoryID != (metadata.UUID{}) {
		return m.report.DirectoryID
	}
	return q.dirs[id]
}

func (q *quorumTracker) setDirectory(term uint64, id int32, dir metadata.UUID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.resetFor(term)
	q.dirs[id] = dir
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}

// raftReport is this node's report for its next heartbeat.
func (n *Node) raftReport() *RaftReport {
	return &RaftReport{DirectoryID: n.dirID, Listener: n.cfg.ListenerName, Addr: n.self, LastIndex: n.raft.LastIndex()}
}

// DirectoryID returns this node's metadata directory id (Kafka's
// directory.id in meta.properties).
func (n *Node) DirectoryID() metadata.UUID { return n.dirID }

// serverID parses a Raft server id (the node id in decimal).
func serverID(s raft.ServerID) (int32, bool) {
	v, err := strconv.ParseInt(string(s), 10, 32)
	return int32(v), err == nil
}

func (n *Node) configuration() ([]raft.Server, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	return f.Configuration().Servers, nil
}

// endpoint is a voter's controller endpoint from its Raft address.
func (n *Node) endpoint(listener string, addr raft.ServerAddress) []metadata.QuorumEndpoint {
	host, port, err := net.SplitHostPort(string(addr))
	p, perr := strconv.ParseUint(port, 10, 16)
	if err != nil || perr != nil {
		return nil
	}
	if listener == "" {
		listener = n.cfg.ListenerName
	}
	return []metadata.QuorumEndpoint{{Name: listener, Host: host, Port: uint16(p)}}
}

// describeLocal is DescribeQuorum on the leader.
func (n *Node) describeLocal() (metadata.QuorumState, error) {
	servers, err := n.configuration()
	if err != nil {
		return metadata.QuorumState{}, fmt.Errorf("%w: %v", ErrNotController, err)
	}
	term := n.raft.CurrentTerm()
	now := n.now()
	last := n.raft.LastIndex()
	n.quorum.mu.Lock()
	n.quorum.resetFor(term)
	n.quorum.sample(now, last)
	n.quorum.mu.Unlock()
	st := metadata.QuorumState{LeaderID: n.cfg.NodeID, LeaderEpoch: int32(term), HighWatermark: int64(n.raft.CommitIndex())}
	for _, s := range servers {
		id, ok := serverID(s.ID)
		if !ok {
			continue
		}
		rep := metadata.QuorumReplica{ID: id, LogEndOffset: -1, LastFetch: -1, LastCaughtUp: -1, DirectoryID: n.quorum.directory(term, id)}
		listener := ""
		if id == n.cfg.NodeID {
			rep.DirectoryID, rep.LogEndOffset = n.dirID, int64(last)
			rep.LastFetch, rep.LastCaughtUp = now.UnixMilli(), now.UnixMilli()
		} else if m, ok := n.quorum.member(term, id); ok {
			rep.LogEndOffset = int64(m.report.LastIndex)
			rep.LastFetch, rep.LastCaughtUp = millis(m.lastFetch), millis(m.caughtUp)
			listener = m.report.Listener
		}
		if s.Suffrage == raft.Voter {
			rep.Endpoints = n.endpoint(listener, s.Address)
			st.Voters = append(st.Voters, rep)
		} else if n.observerActive(term, id, now) {
			st.Observers = append(st.Observers, rep)
		}
	}
	sort.Slice(st.Voters, func(i, j int) bool { return st.Voters[i].ID < st.Voters[j].ID })
	sort.Slice(st.Observers, func(i, j int) bool { return st.Observers[i].ID < st.Observers[j].ID })
	return st, nil
}

// observerActive reports whether DescribeQuorum lists observer id: as
// Kafka's leader, only while it was heard from within the observer
// session (Config.ObserverTimeout); one not heard from yet is listed
// for that long after this leader's election. A stopped observer stays
// a Raft nonvoter until UnregisterBroker.
func (n *Node) observerActive(term uint64, id int32, now time.Time) bool {
	if m, ok := n.quorum.member(term, id); ok {
		return now.Sub(m.lastFetch) <= n.cfg.ObserverTimeout
	}
	n.quorum.mu.Lock()
	defer n.quorum.mu.Unlock()
	return now.Sub(n.quorum.since) <= n.cfg.ObserverTimeout
}

// quorumCall runs a quorum RPC on the leader (locally when this node
// leads) and returns its reply's error.
func (n *Node) quorumCall(ctx context.Context, method string, args any, local func() (QuorumReply, error)) (metadata.QuorumState, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	var reply QuorumReply
	err := n.toLeader(ctx, func(ctx context.Context, l *leader, addr string) error {
		reply = QuorumReply{}
		if l != nil {
			r, err := local()
			reply, reply.Err = r, toWire(err)
			return nil
		}
		return n.rpc.call(ctx, addr, method, args, &reply)
	}, func() error { return fromWire(reply.Err) })
	if err != nil {
		return metadata.QuorumState{}, err
	}
	if reply.Index > 0 {
		if err := n.fsm.waitApplied(ctx, reply.Index); err != nil {
			return metadata.QuorumState{}, err
		}
	}
	if reply.State == nil {
		return metadata.QuorumState{}, nil
	}
	return *reply.State, nil
}

// DescribeQuorum returns the quorum's state as the leader sees it; see
// metadata.QuorumAdmin.
func (n *Node) DescribeQuorum(ctx context.Context) (metadata.QuorumState, error) {
	return n.quorumCall(ctx, "DescribeQuorum", struct{}{}, func() (QuorumReply, error) {
		st, err := n.describeLocal()
		return QuorumReply{State: &st}, err
	})
}

// AddVoter promotes an observer to a voter; see metadata.QuorumAdmin.
func (n *Node) AddVoter(ctx context.Context, id int32, dir metadata.UUID, endpoints []metadata.QuorumEndpoint) error {
	args := VoterArgs{ID: id, DirectoryID: dir, Endpoints: endpoints}
	_, err := n.quorumCall(ctx, "AddVoter", args, func() (QuorumReply, error) { return QuorumReply{}, n.addVoterLocal(args) })
	return err
}

// RemoveVoter demotes a voter to an observer; see metadata.QuorumAdmin.
func (n *Node) RemoveVoter(ctx context.Context, id int32, dir metadata.UUID) error {
	args := VoterArgs{ID: id, DirectoryID: dir}
	_, err := n.quorumCall(ctx, "RemoveVoter", args, func() (QuorumReply, error) { return QuorumReply{}, n.removeVoterLocal(args) })
	return err
}

// UnregisterBroker removes a broker's registration; see
// metadata.QuorumAdmin.
func (n *Node) UnregisterBroker(ctx context.Context, id int32) error {
	args := VoterArgs{ID: id}
	_, err := n.quorumCall(ctx, "UnregisterBroker", args, func() (QuorumReply, error) {
		index, err := n.unregisterLocal(ctx, id)
		return QuorumReply{Index: index}, err
	})
	return err
}

// replicaKey formats a voter as Kafka's ReplicaKey.toString does.
func replicaKey(id int32, dir metadata.UUID) string {
	d := "Optional.empty"
	if dir != (metadata.UUID{}) {
		d = "Optional[" + dir.String() + "]"
	}
	return fmt.Sprintf("ReplicaKey(id=%d, directoryId=%s)", id, d)
}

func (n *Node) voterKeys(servers []raft.Server) string {
	term := n.raft.CurrentTerm()
	var keys []string
	for _, s := range servers {
		if id, ok := serverID(s.ID); ok && s.Suffrage == raft.Voter {
			dir := n.quorum.directory(term, id)
			if id == n.cfg.NodeID {
				dir = n.dirID
			}
			keys = append(keys, replicaKey(id, dir))
		}
	}
	return "[" + strings.Join(keys, ", ") + "]"
}

// changeTimeout bounds one membership change.
const changeTimeout = 20 * time.Second

// membershipError is a Raft membership future's error as a controller
// error.
func membershipError(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) {
		return fmt.Errorf("%w: %v", ErrNotController, err)
	}
	return err
}

// beginVoterChange starts a voter change: one at a time (another one
// running: ErrVoterNotReady, Kafka's message), with the quorum's
// configuration now; done ends it.
func (n *Node) beginVoterChange() (servers []raft.Server, done func(), err error) {
	if !n.memberMu.TryLock() {
		return nil, nil, fmt.Errorf("%w: Request timed out waiting for leader to handle previous voter change request", metadata.ErrVoterNotReady)
	}
	servers, err = n.configuration()
	if err != nil {
		n.memberMu.Unlock()
		return nil, nil, membershipError(err)
	}
	return servers, n.memberMu.Unlock, nil
}

func (n *Node) addVoterLocal(a VoterArgs) error {
	servers, done, err := n.beginVoterChange()
	if err != nil {
		return err
	}
	defer done()
	key := replicaKey(a.ID, a.DirectoryID)
	for _, s := range servers {
		if id, _ := serverID(s.ID); id == a.ID && s.Suffrage == raft.Voter {
			//lint:ignore ST1005 Kafka's message (AddVoterHandler)
			return fmt.Errorf("%w: The voter id for %s is already part of the set of voters %s.", metadata.ErrDuplicateVoter, key, n.voterKeys(servers))
		}
	}
	var ep *metadata.QuorumEndpoint
	for i := range a.Endpoints {
		if strings.EqualFold(a.Endpoints[i].Name, n.cfg.ListenerName) {
			ep = &a.Endpoints[i]
		}
	}
	if ep == nil {
		var names []string
		for _, e := range a.Endpoints {
			names = append(names, e.Name)
		}
		return fmt.Errorf("%w: Provided listeners [%s] do not contain a listener for %s", metadata.ErrInvalidVoter, strings.Join(names, ", "), n.cfg.ListenerName)
	}
	if ep.Host == "" || ep.Port == 0 {
		return fmt.Errorf("%w: listener %s of %s has no host or port", metadata.ErrInvalidVoter, ep.Name, key)
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	// Kafka adds only an observer that fetches with that replica key and
	// has caught up with the leader's log.
	term := n.raft.CurrentTerm()
	m, ok := n.quorum.member(term, a.ID)
	now := n.now()
	if !ok || now.Sub(m.lastFetch) > n.cfg.SessionTimeout {
		return fmt.Errorf("%w: New voter %s is not ready to receive requests", metadata.ErrVoterNotReady, key)
	}
	if (a.DirectoryID != metadata.UUID{}) && m.report.DirectoryID != a.DirectoryID {
		return fmt.Errorf("%w: Aborted add voter operation for %s since it is lagging behind (the replica with id %d reports directory id %s)",
			metadata.ErrVoterNotReady, key, a.ID, m.report.DirectoryID)
	}
	if m.report.LastIndex < n.raft.CommitIndex() && now.Sub(m.caughtUp) > n.cfg.SessionTimeout {
		return fmt.Errorf("%w: Aborted add voter operation for %s since it is lagging behind", metadata.ErrVoterNotReady, key)
	}
	// As Kafka's leader sends ApiVersions to the new voter's endpoint:
	// the endpoint must reach that node.
	if err := n.identify(addr, a.ID, m.report.DirectoryID); err != nil {
		return fmt.Errorf("%w: New voter %s is not ready to receive requests at %s: %v", metadata.ErrVoterNotReady, key, addr, err)
	}
	if err := n.raft.AddVoter(raft.ServerID(strconv.Itoa(int(a.ID))), raft.ServerAddress(addr), 0, changeTimeout).Error(); err != nil {
		return membershipError(err)
	}
	dir := a.DirectoryID
	if dir == (metadata.UUID{}) {
		dir = m.report.DirectoryID
	}
	n.quorum.setDirectory(term, a.ID, dir)
	n.log.Info("controller voter added", zap.Int32("voter", a.ID), zap.String("directory_id", dir.String()), zap.String("addr", addr))
	return nil
}

func (n *Node) removeVoterLocal(a VoterArgs) error {
	servers, done, err := n.beginVoterChange()
	if err != nil {
		return err
	}
	defer done()
	term := n.raft.CurrentTerm()
	voters, found := 0, false
	for _, s := range servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if id, _ := serverID(s.ID); id == a.ID {
			dir := n.quorum.directory(term, id)
			if id == n.cfg.NodeID {
				dir = n.dirID
			}
			if dir == (metadata.UUID{}) {
				// Not reported to this leader yet: ask the voter.
				if r, err := n.whoIs(string(s.Address)); err == nil && r.ID == id {
					dir = r.DirectoryID
				}
			}
			// A voter whose directory id the leader cannot learn (down
			// since this leader was elected) matches any.
			found = a.DirectoryID == (metadata.UUID{}) || dir == (metadata.UUID{}) || dir == a.DirectoryID
		}
	}
	if !found || voters <= 1 {
		return fmt.Errorf("%w: Cannot remove voter %s from the set of voters %s", metadata.ErrVoterNotFound, replicaKey(a.ID, a.DirectoryID), n.voterKeys(servers))
	}
	if err := n.raft.DemoteVoter(raft.ServerID(strconv.Itoa(int(a.ID))), 0, changeTimeout).Error(); err != nil {
		return membershipError(err)
	}
	n.log.Info("controller voter removed (now an observer)", zap.Int32("voter", a.ID))
	return nil
}

// unregisterLocal is UnregisterBroker on the leader: the broker (not a
// voter) is fenced and unregistered in one entry, then leaves the Raft
// configuration.
func (n *Node) unregisterLocal(ctx context.Context, id int32) (uint64, error) {
	l := n.currentLeader()
	if l == nil {
		return 0, ErrNotController
	}
	servers, err := n.configuration()
	if err != nil {
		return 0, membershipError(err)
	}
	var observer bool
	for _, s := range servers {
		if sid, _ := serverID(s.ID); sid == id {
			if s.Suffrage == raft.Voter {
				return 0, fmt.Errorf("%w: broker %d is a voter of the controller quorum: remove it first (kafka-metadata-quorum remove-controller, weir cluster remove-voter)", metadata.ErrBrokerIsVoter, id)
			}
			observer = true
		}
	}
	reply := l.submitCommand(ctx, Command{Kind: KindUnregisterBroker, Total: id})
	if err := fromWire(reply.Err); err != nil {
		return 0, err
	}
	if observer {
		n.memberMu.Lock()
		defer n.memberMu.Unlock()
		if err := n.raft.RemoveServer(raft.ServerID(strconv.Itoa(int(id))), 0, changeTimeout).Error(); err != nil {
			return reply.Index, membershipError(err)
		}
	}
	n.log.Info("broker unregistered", zap.Int32("broker", id))
	return reply.Index, nil
}

// KindUnregisterBroker removes broker Total's registration.
const KindUnregisterBroker = "unregister_broker"

// planUnregister fences broker id (moving its leaderships and ISR
// memberships) and unregisters it.
func planUnregister(im *metadata.Image, id int32) ([]metadata.Record, error) {
	if _, ok := im.Broker(id); !ok {
		return nil, fmt.Errorf("%w: Broker ID %d is not currently registered", metadata.ErrBrokerNotRegistered, id)
	}
	rs := FenceBroker(im, id, nil)
	return append(rs, metadata.Record{Type: metadata.TypeUnregisterBroker, UnregisterBroker: &metadata.UnregisterBroker{NodeID: id}}), nil
}

// joinLoop makes a node that does not vote an observer: while it knows
// no leader, it asks the voters to add it as a nonvoter.
func (n *Node) joinLoop() {
	defer n.wg.Done()
	rc := &rpcClient{dial: n.cfg.Dial}
	defer rc.close()
	t := time.NewTicker(n.cfg.RaftTimeout)
	defer t.Stop()
	quiet := 0
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if addr, _ := n.raft.LeaderWithID(); addr != "" {
			quiet = 0
			continue
		}
		if quiet++; quiet < 2 && n.raft.LastIndex() > 0 {
			continue // a restart: give the leader a moment to reach us
		}
		if servers, err := n.configuration(); err == nil && slices.ContainsFunc(servers, func(s raft.Server) bool {
			id, _ := serverID(s.ID)
			return id == n.cfg.NodeID && s.Suffrage == raft.Voter
		}) {
			continue // a voter waits for an election instead
		}
		for _, v := range n.cfg.Voters {
			if v.ID == n.cfg.NodeID {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.RaftTimeout+changeTimeout)
			var reply QuorumReply
			err := rc.call(ctx, v.Addr, "Join", JoinArgs{ID: n.cfg.NodeID, Addr: n.self}, &reply)
			cancel()
			if err == nil {
				err = fromWire(reply.Err)
			}
			if err == nil {
				n.log.Info("joined the controller quorum as an observer", zap.String("via", v.Addr))
				break
			}
			n.log.Debug("joining the controller quorum", zap.String("voter", v.Addr), zap.Error(err))
		}
	}
}

// joinLocal adds a node as a nonvoter on the leader (nothing when it is
// already in the configuration at that address).
func (n *Node) joinLocal(a JoinArgs) error {
	if _, _, err := net.SplitHostPort(a.Addr); err != nil || a.ID < 0 {
		return fmt.Errorf("%w: join of node %d at %q", metadata.ErrInvalidVoter, a.ID, a.Addr)
	}
	n.memberMu.Lock()
	defer n.memberMu.Unlock()
	servers, err := n.configuration()
	if err != nil {
		return membershipError(err)
	}
	i := slices.IndexFunc(servers, func(s raft.Server) bool { id, _ := serverID(s.ID); return id == a.ID })
	if i >= 0 {
		if string(servers[i].Address) == a.Addr {
			return nil
		}
		if servers[i].Suffrage == raft.Voter {
			return fmt.Errorf("%w: node %d is a voter at %s, not %s", metadata.ErrDuplicateVoter, a.ID, servers[i].Address, a.Addr)
		}
	}
	if err := n.raft.AddNonvoter(raft.ServerID(strconv.Itoa(int(a.ID))), raft.ServerAddress(a.Addr), 0, changeTimeout).Error(); err != nil {
		return membershipError(err)
	}
	n.log.Info("observer joined the controller quorum", zap.Int32("node", a.ID), zap.String("addr", a.Addr))
	return nil
}

// IdentifyReply is who answers at a controller address.
type IdentifyReply struct {
	ID          int32         `json:"id"`
	DirectoryID metadata.UUID `json:"directory_id"`
}

// identify checks that the controller at addr is node id with directory
// id dir.
func (n *Node) identify(addr string, id int32, dir metadata.UUID) error {
	reply, err := n.whoIs(addr)
	if err != nil {
		return err
	}
	if reply.ID != id || reply.DirectoryID != dir {
		return fmt.Errorf("the controller there is %s", replicaKey(reply.ID, reply.DirectoryID))
	}
	return nil
}

// whoIs asks the controller at addr who it is.
func (n *Node) whoIs(addr string) (IdentifyReply, error) {
	rc := &rpcClient{dial: n.cfg.Dial}
	defer rc.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*n.cfg.RaftTimeout+time.Second)
	defer cancel()
	var reply IdentifyReply
	err := rc.call(ctx, addr, "Identify", struct{}{}, &reply)
	return reply, err
}

// Identify answers who this node is (any node).
func (s *service) Identify(_ struct{}, reply *IdentifyReply) error {
	reply.ID, reply.DirectoryID = s.n.cfg.NodeID, s.n.dirID
	return nil
}

// Quorum RPCs, answered by the leader.

func (s *service) leaderOr(reply *QuorumReply) bool {
	if s.n.currentLeader() == nil {
		reply.Err = toWire(ErrNotController)
		return false
	}
	return true
}

// DescribeQuorum answers DescribeQuorum on the leader.
func (s *service) DescribeQuorum(_ struct{}, reply *QuorumReply) error {
	if s.leaderOr(reply) {
		st, err := s.n.describeLocal()
		reply.State, reply.Err = &st, toWire(err)
	}
	return nil
}

// AddVoter answers AddVoter on the leader.
func (s *service) AddVoter(a VoterArgs, reply *QuorumReply) error {
	if s.leaderOr(reply) {
		reply.Err = toWire(s.n.addVoterLocal(a))
	}
	return nil
}

// RemoveVoter answers RemoveVoter on the leader.
func (s *service) RemoveVoter(a VoterArgs, reply *QuorumReply) error {
	if s.leaderOr(reply) {
		reply.Err = toWire(s.n.removeVoterLocal(a))
	}
	return nil
}

// UnregisterBroker answers UnregisterBroker on the leader.
func (s *service) UnregisterBroker(a VoterArgs, reply *QuorumReply) error {
	if s.leaderOr(reply) {
		ctx, cancel := context.WithTimeout(context.Background(), changeTimeout)
		defer cancel()
		index, err := s.n.unregisterLocal(ctx, a.ID)
		reply.Index, reply.Err = index, toWire(err)
	}
	return nil
}

// Join adds an observer on the leader.
func (s *service) Join(a JoinArgs, reply *QuorumReply) error {
	if s.leaderOr(reply) {
		reply.Err = toWire(s.n.joinLocal(a))
	}
	return nil
}

// StoreConfiguration is Raft telling the FSM that a membership change
// (an entry without metadata records) was committed: it counts as
// applied, so a node whose newest entry is one (an observer that just
// joined) is caught up (WaitReady).
func (f *fsm) StoreConfiguration(index uint64, _ raft.Configuration) { f.advance(index) }

var _ raft.ConfigurationStore = (*fsm)(nil)
