package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
	"weir/broker/tlsconf"
	"weir/broker/topicconfig"
)

// Voter is one member of the controller quorum.
type Voter struct {
	ID   int32
	Addr string // host:port of its controller listener
}

// ParseVoters parses "1@host:port,2@host:port,...".
func ParseVoters(s string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		id, addr, ok := strings.Cut(part, "@")
		n, err := strconv.ParseInt(id, 10, 32)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("%w: %q: want NODE_ID@HOST:PORT", ErrBadVoters, part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrBadVoters, part, err)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("%w: node id %d listed twice", ErrBadVoters, n)
		}
		seen[int32(n)] = true
		out = append(out, Voter{ID: int32(n), Addr: addr})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty list", ErrBadVoters)
	}
	return out, nil
}

// Config configures a Node.
type Config struct {
	// NodeID is this broker's node id; it must be one of Voters.
	NodeID int32
	// Addr is the controller listen address (used when Listener is nil).
	// Peers reach this node at its address in Voters.
	Addr string
	// Listener is an already bound controller listener (tests).
	Listener net.Listener
	// Voters is the quorum the cluster starts with, the same list on
	// every node (Kafka's controller.quorum.bootstrap.servers once it
	// runs: membership changes are in the Raft log). A node whose id is
	// not in it joins as an observer (quorum.go) and can be made a voter
	// with AddVoter.
	Voters []Voter
	// AdvertisedAddr is where other controllers reach a node that is not
	// in Voters ("": its listener's address).
	AdvertisedAddr string
	// ListenerName is the controller listener's name (Kafka's
	// controller.listener.names; default CONTROLLER), reported in
	// DescribeQuorum and looked for in AddVoter's endpoints.
	ListenerName string
	// Dir holds the Raft log (bbolt), stable store and snapshots.
	Dir string
	// BrokerConfig resolves topic configs (unclean.leader.election.enable);
	// nil means Kafka's defaults.
	BrokerConfig *topicconfig.Broker

	// HeartbeatInterval is how often this broker heartbeats (default 250ms).
	HeartbeatInterval time.Duration
	// SessionTimeout is how long the leader waits for a heartbeat before
	// fencing a broker (Kafka's broker.session.timeout.ms; default 2s).
	SessionTimeout time.Duration
	// PreferredLeaderInterval is how often the leader moves leadership
	// back to preferred replicas (Kafka's
	// leader.imbalance.check.interval.seconds); 0 means 30s, <0 never.
	PreferredLeaderInterval time.Duration
	// RaftTimeout is Raft's heartbeat and election timeout (default 1s).
	RaftTimeout time.Duration
	// ObserverTimeout is how long DescribeQuorum keeps listing an
	// observer the leader has not heard from (Kafka's observer session,
	// 5 minutes by default).
	ObserverTimeout time.Duration

	// Dial opens connections to other controllers (nil: plain TCP).
	Dial DialFunc
	// TLS, when set, puts the controller port under TLS with the
	// controller listener's ssl.* settings (tls.go): accepted connections
	// are verified as its ssl.client.auth says, other voters are dialed
	// with this node's key store as the client certificate.
	TLS *tlsconf.Server
	// HandshakeTimeout bounds a TLS handshake on the controller port
	// (default 10s).
	HandshakeTimeout time.Duration
	// Authorize, when set (with TLS), decides whether the principal of a
	// peer's verified certificate may use the controller port (node: the
	// super.users when an authorizer is configured); a refused peer is
	// cut after the handshake and logged.
	Authorize func(principal string) bool
	// Logger receives the node's logs (nil: none).
	Logger *zap.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Node is one broker's member of the controller quorum. It implements
// metadata.Store and metadata.PartitionAlterer: Image and Watch read the
// local copy of the replicated metadata (every broker applies every
// record), writes go to the Raft leader and return once the change is
// applied here too. It also heartbeats this broker's registration to the
// leader, and while it is the leader it runs the controller: command
// processing, broker liveness and fencing, leader elections.
type Node struct {
	cfg   Config
	log   *zap.Logger
	now   func() time.Time
	self  string // raft address
	raft  *raft.Raft
	fsm   *fsm
	mux   *mux
	store *raftboltdb.BoltStore
	rpc   rpcClient

	broker       atomic.Pointer[metadata.Broker] // set by RegisterBroker
	storage      atomic.Pointer[func() (metadata.StorageState, []metadata.LogDir)]
	shuttingDown atomic.Bool
	fenced       atomic.Bool
	hbKick       chan struct{}

	dirID    metadata.UUID // metadata directory id (meta.properties)
	quorum   quorumTracker // the leader's view of the replicas (quorum.go)
	memberMu sync.Mutex    // one membership change at a time

	leaderNotify chan bool // Raft's leadership notifications
	leadMu       sync.Mutex
	lead         *leader // non-nil while this node leads

	stop   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool
}

// Start opens (or creates) the Raft state in cfg.Dir, joins the quorum
// (bootstrapping it from cfg.Voters on first start) and starts the
// heartbeat loop. The metadata image fills as the log is replayed.
func Start(cfg Config) (*Node, error) {
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 250 * time.Millisecond
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 2 * time.Second
	}
	if cfg.PreferredLeaderInterval == 0 {
		cfg.PreferredLeaderInterval = 30 * time.Second
	}
	if cfg.RaftTimeout <= 0 {
		cfg.RaftTimeout = time.Second
	}
	if cfg.Dial == nil {
		cfg.Dial = defaultDial
	}
	if cfg.ObserverTimeout <= 0 {
		cfg.ObserverTimeout = 5 * time.Minute
	}
	if cfg.ListenerName == "" {
		cfg.ListenerName = "CONTROLLER"
	}
	if cfg.BrokerConfig == nil {
		cfg.BrokerConfig = topicconfig.Defaults()
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	n := &Node{cfg: cfg, log: lg, now: cfg.Now, fsm: newFSM(lg), hbKick: make(chan struct{}, 1), stop: make(chan struct{})}
	if n.now == nil {
		n.now = time.Now
	}
	var ptls *peerTLS
	if cfg.TLS != nil {
		ptls = newPeerTLS(cfg.TLS, cfg.HandshakeTimeout, lg.Named("tls"))
		ptls.authorize = cfg.Authorize
		n.cfg.Dial = ptls.dialer(cfg.Dial)
	}
	n.rpc.dial = n.cfg.Dial
	voter := false
	for _, v := range cfg.Voters {
		if v.ID == cfg.NodeID {
			n.self, voter = v.Addr, true
		}
	}
	if len(cfg.Voters) == 0 {
		return nil, fmt.Errorf("%w: no voters", ErrBadVoters)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("controller: raft dir %s: %w", cfg.Dir, err)
	}
	var err error
	if n.dirID, err = loadDirectoryID(cfg.Dir, cfg.NodeID); err != nil {
		return nil, err
	}
	ln := cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("controller: listen on %s: %w", cfg.Addr, err)
		}
	}
	if n.self == "" {
		if n.self, err = observerAddr(cfg.AdvertisedAddr, ln.Addr()); err != nil {
			ln.Close()
			return nil, err
		}
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Controller", &service{n: n}); err != nil {
		ln.Close()
		return nil, err
	}
	n.mux = newMux(ln, srv, ptls, lg)
	if err := n.startRaft(voter); err != nil {
		n.mux.close()
		if n.store != nil {
			n.store.Close()
		}
		return nil, err
	}
	n.wg.Add(4)
	go n.heartbeatLoop()
	go n.leadershipLoop()
	go n.joinLoop()
	go n.writeMetaProperties()
	return n, nil
}

func (n *Node) startRaft(voter bool) error {
	hl := hclog.New(&hclog.LoggerOptions{
		Name:   "raft",
		Level:  hclog.Warn,
		Output: zap.NewStdLog(n.log.Named("raft")).Writer(),
	})
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(strconv.Itoa(int(n.cfg.NodeID)))
	rc.HeartbeatTimeout = n.cfg.RaftTimeout
	rc.ElectionTimeout = n.cfg.RaftTimeout
	// The leader steps down when a majority has not answered for this
	// long. Raft's default (half the heartbeat timeout) made a loaded
	// machine's quorum change leaders every few seconds for minutes after
	// a voter restarted (heartbeat answers 0.5-1.5 s late); a whole
	// timeout costs nothing when the leader dies, which the followers'
	// own heartbeat timeout detects.
	rc.LeaderLeaseTimeout = n.cfg.RaftTimeout
	rc.CommitTimeout = 20 * time.Millisecond
	rc.SnapshotThreshold = 4096
	rc.TrailingLogs = 4096
	rc.Logger = hl
	// A leader removed from the voters (RemoveVoter demotes) goes on as
	// an observer instead of stopping Raft.
	rc.ShutdownOnRemove = false
	notify := make(chan bool, 16)
	rc.NotifyCh = notify
	n.leaderNotify = notify

	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(n.cfg.Dir, "raft.db")})
	if err != nil {
		return fmt.Errorf("controller: opening %s: %w", filepath.Join(n.cfg.Dir, "raft.db"), err)
	}
	n.store = store
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.cfg.Dir, 2, hl)
	if err != nil {
		return fmt.Errorf("controller: snapshot store in %s: %w", n.cfg.Dir, err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &raftLayer{m: n.mux, dial: n.cfg.Dial},
		MaxPool: 3,
		Timeout: 5 * time.Second,
		Logger:  hl,
	})
	r, err := raft.NewRaft(rc, n.fsm, store, store, snaps, trans)
	if err != nil {
		trans.Close()
		return fmt.Errorf("controller: starting raft: %w", err)
	}
	n.raft = r
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return fmt.Errorf("controller: reading raft state: %w", err)
	}
	if !has && voter {
		var servers []raft.Server
		for _, v := range n.cfg.Voters {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(strconv.Itoa(int(v.ID))), Address: raft.ServerAddress(v.Addr)})
		}
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("controller: bootstrapping the quorum: %w", err)
		}
	}
	return nil
}

// Addr returns the controller listener's address.
func (n *Node) Addr() net.Addr { return n.mux.ln.Addr() }

// Image returns the local metadata image.
func (n *Node) Image() *metadata.Image { return n.fsm.image() }

// Watch registers fn for every record applied here; see metadata.Store.
// A Change with a zero Record means the image was replaced by a snapshot.
func (n *Node) Watch(fn func(metadata.Change)) { n.fsm.watch(fn) }

// ControllerID returns the node id of the controller leader, -1 if none is
// known.
func (n *Node) ControllerID() int32 {
	_, id := n.raft.LeaderWithID()
	v, err := strconv.Atoi(string(id))
	if id == "" || err != nil {
		return -1
	}
	return int32(v)
}

// IsLeader reports whether this node is the controller leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// AppliedIndex returns the Raft index of the last entry applied here.
func (n *Node) AppliedIndex() uint64 { return n.fsm.applied.Load() }

// CatchUp reports how far this node is from ready (WaitReady): the Raft
// index of the last entry applied here, the commit index as far as this
// node knows, its last log index, and whether the cluster is initialized
// in its image. A "still waiting" log line carries them.
func (n *Node) CatchUp() (applied, commit, last uint64, initialized bool) {
	return n.fsm.applied.Load(), n.raft.CommitIndex(), n.raft.LastIndex(), n.Image().ClusterID() != ""
}

// WaitReady waits until this node has caught up with the quorum: a
// leader is known, the cluster is initialized, and every entry committed
// as far as this node knows is applied locally. A broker serves clients
// only after that, so its Metadata answers are not from an empty or stale
// image after a restart.
func (n *Node) WaitReady(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		addr, _ := n.raft.LeaderWithID()
		if addr != "" && n.Image().ClusterID() != "" && n.caughtUp() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controller: waiting to catch up with the quorum: %w", ctx.Err())
		case <-n.stop:
			return ErrClosed
		case <-t.C:
		}
	}
}

// caughtUp reports whether every entry committed as far as this node
// knows is applied to the image here. hashicorp/raft never calls the
// FSM for a LogNoop or a LogBarrier (a new leader writes one of each,
// startLeading), so when the log ends with them (a controller election
// with no metadata change since, frequent on a loaded machine) the FSM's
// applied index stays below the commit index until the next metadata
// record, and a restarted broker waited for one: those entries count as
// applied once Raft has processed them.
func (n *Node) caughtUp() bool {
	applied, commit := n.fsm.applied.Load(), n.raft.CommitIndex()
	if applied >= commit {
		return true
	}
	if n.store == nil || n.raft.AppliedIndex() < commit {
		return false
	}
	for i := applied + 1; i <= commit; i++ {
		var l raft.Log
		if err := n.store.GetLog(i, &l); err != nil || (l.Type != raft.LogNoop && l.Type != raft.LogBarrier) {
			return false // a command still on its way to the FSM (or compacted away)
		}
	}
	return true
}

// Fenced reports whether this broker was fenced at its last heartbeat.
func (n *Node) Fenced() bool { return n.fenced.Load() }

// command sends c to the leader, retrying while there is none, and
// waits until the change is applied here.
func (n *Node) command(ctx context.Context, c Command) (CommandReply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	var reply CommandReply
	err := n.toLeader(ctx, func(ctx context.Context, l *leader, addr string) error {
		reply = CommandReply{}
		if l != nil {
			reply = l.submitCommand(ctx, c)
			return nil
		}
		return n.rpc.call(ctx, addr, "Command", c, &reply)
	}, func() error { return fromWire(reply.Err) })
	if err != nil {
		return reply, err
	}
	if reply.Index > 0 {
		if err := n.fsm.waitApplied(ctx, reply.Index); err != nil {
			return reply, err
		}
	}
	return reply, nil
}

// toLeader runs call against the leader (l non-nil when it is this node)
// until it gets an answer that is not "no leader"; result extracts the
// answer's own error.
func (n *Node) toLeader(ctx context.Context, call func(ctx context.Context, l *leader, addr string) error, result func() error) error {
	backoff := 20 * time.Millisecond
	for {
		if n.closed.Load() {
			return ErrClosed
		}
		var err error
		l := n.currentLeader()
		addr, _ := n.raft.LeaderWithID()
		switch {
		case l != nil:
			err = call(ctx, l, "")
		case addr == "" || string(addr) == n.self:
			err = ErrNoController
		default:
			err = call(ctx, nil, string(addr))
		}
		if err == nil {
			err = result()
		}
		if err == nil || !(errors.Is(err, ErrNoController) || errors.Is(err, ErrNotController)) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ErrNoController, ctx.Err())
		case <-n.stop:
			return ErrClosed
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 200*time.Millisecond)
	}
}

// CreateTopic creates a topic through the leader; see metadata.Store.
func (n *Node) CreateTopic(ctx context.Context, spec metadata.TopicSpec) (*metadata.Topic, error) {
	reply, err := n.command(ctx, Command{Kind: KindCreateTopic, Spec: &spec})
	if err != nil {
		return nil, err
	}
	if !spec.ValidateOnly {
		if t, ok := n.Image().Topic(spec.Name); ok {
			return t, nil
		}
	}
	return reply.Topic, nil
}

// DeleteTopic deletes a topic through the leader; see metadata.Store.
func (n *Node) DeleteTopic(ctx context.Context, name string) (*metadata.Topic, error) {
	reply, err := n.command(ctx, Command{Kind: KindDeleteTopic, Name: name})
	if err != nil {
		return nil, err
	}
	return reply.Topic, nil
}

// CreatePartitions grows a topic through the leader; see metadata.Store.
func (n *Node) CreatePartitions(ctx context.Context, name string, total int32, assignment [][]int32) (*metadata.Topic, error) {
	if _, err := n.command(ctx, Command{Kind: KindCreatePartitions, Name: name, Total: total, Assignment: assignment}); err != nil {
		return nil, err
	}
	t, _ := n.Image().Topic(name)
	return t, nil
}

// AlterTopicConfig replaces a topic's overrides; see metadata.Store.
func (n *Node) AlterTopicConfig(ctx context.Context, name string, configs map[string]string) (*metadata.Topic, error) {
	if _, err := n.command(ctx, Command{Kind: KindAlterTopicConfig, Name: name, Configs: configs}); err != nil {
		return nil, err
	}
	t, _ := n.Image().Topic(name)
	return t, nil
}

// AlterPartition changes an ISR through the leader; see
// metadata.PartitionAlterer.
func (n *Node) AlterPartition(ctx context.Context, req metadata.AlterPartition) (metadata.Partition, error) {
	if _, err := n.command(ctx, Command{Kind: KindAlterPartition, Alter: &req}); err != nil {
		return metadata.Partition{}, err
	}
	p, _ := n.Image().Partition(req.Topic, req.Partition)
	return p, nil
}

// AlterClientQuotas changes client quotas through the leader, in one
// entry; see metadata.ClientQuotaAlterer.
func (n *Node) AlterClientQuotas(ctx context.Context, changes []metadata.ClientQuota) error {
	if len(changes) == 0 {
		return nil
	}
	_, err := n.command(ctx, Command{Kind: KindClientQuotas, Quotas: changes})
	return err
}

// Reserve reserves a block of size producer ids for this broker's
// InitProducerId (txn.BlockStore): blocks come from the replicated
// metadata, so no two brokers ever hand out the same id.
func (n *Node) Reserve(size int64) (int64, error) {
	if size <= 0 || size > 1<<30 {
		return 0, fmt.Errorf("controller: producer id block of %d", size)
	}
	reply, err := n.command(context.Background(), Command{Kind: KindProducerIDs, Total: int32(size)})
	if err != nil {
		return 0, fmt.Errorf("controller: reserving %d producer ids: %w", size, err)
	}
	return reply.First, nil
}

// RegisterBroker sets this broker's registration. It does not wait: the
// heartbeat loop registers it with the leader as soon as there is one
// (a broker cannot wait for a quorum it may be needed to form).
func (n *Node) RegisterBroker(_ context.Context, b metadata.Broker) error {
	if b.NodeID != n.cfg.NodeID {
		return fmt.Errorf("controller: registering broker %d on node %d", b.NodeID, n.cfg.NodeID)
	}
	b.Fenced = false
	n.broker.Store(&b)
	select {
	case n.hbKick <- struct{}{}:
	default:
	}
	return nil
}

// SetStorage reports the state of this broker's log directory with its
// heartbeats, the next one sent at once. While it cannot write, the
// controller moves its leaderships and ISR memberships to other replicas
// (StorageMoves); once it can again, the broker rejoins the ISRs as it
// catches up.
func (n *Node) SetStorage(st metadata.StorageState) {
	n.SetStorageReport(func() (metadata.StorageState, []metadata.LogDir) { return st, nil })
}

// SetStorageReport is SetStorage for a broker with several log
// directories: every heartbeat (the next one sent at once) carries what
// fn returns, the broker-wide state (metadata.Broker.Storage) and the
// directories that cannot write with their partitions (Broker.Dirs), so
// the controller moves only those partitions. fn must be quick.
func (n *Node) SetStorageReport(fn func() (metadata.StorageState, []metadata.LogDir)) {
	n.storage.Store(&fn)
	select {
	case n.hbKick <- struct{}{}:
	default:
	}
}

// heartbeatLoop sends this broker's heartbeat to the leader.
func (n *Node) heartbeatLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		case <-n.hbKick:
		}
		if _, err := n.heartbeat(); err != nil {
			n.log.Debug("heartbeat failed", zap.Error(err))
		}
	}
}

// heartbeat sends one heartbeat; it returns the reply.
func (n *Node) heartbeat() (HeartbeatReply, error) {
	b := n.broker.Load()
	if b == nil {
		return HeartbeatReply{}, nil
	}
	args := HeartbeatArgs{Broker: *b, ShuttingDown: n.shuttingDown.Load(), Raft: n.raftReport()}
	if fn := n.storage.Load(); fn != nil {
		args.Broker.Storage, args.Broker.Dirs = (*fn)()
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(n.cfg.SessionTimeout, time.Second))
	defer cancel()
	var reply HeartbeatReply
	var once bool
	err := n.toLeader(ctx, func(ctx context.Context, l *leader, addr string) error {
		if once {
			return fmt.Errorf("%w: no leader for heartbeat", errHeartbeatGiveUp)
		}
		once = true
		if l != nil {
			var err error
			reply, err = l.submitHeartbeat(ctx, args)
			return err
		}
		return n.rpc.call(ctx, addr, "Heartbeat", args, &reply)
	}, func() error { return fromWire(reply.Err) })
	if err != nil {
		return reply, err
	}
	n.fenced.Store(reply.Fenced)
	return reply, nil
}

var errHeartbeatGiveUp = errors.New("heartbeat skipped")

// Shutdown is Kafka's controlled shutdown: it tells the leader this broker
// is going away, so its leaderships move to other ISR members and it is
// fenced, and waits (until ctx ends) for that to be applied here. Close
// the Kafka server after it, then the Node.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shuttingDown.Store(true)
	for {
		reply, err := n.heartbeat()
		if err == nil && reply.Fenced {
			return n.fsm.waitApplied(ctx, reply.Index)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("controlled shutdown of broker %d: %w", n.cfg.NodeID, ctx.Err())
		case <-time.After(n.cfg.HeartbeatInterval / 2):
		}
	}
}

// Close leaves the quorum's work to the others (handing over leadership
// when it leads) and stops Raft. Safe to call twice.
func (n *Node) Close() error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	if n.IsLeader() {
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.log.Debug("leadership transfer at close failed", zap.Error(err))
		}
	}
	close(n.stop)
	err := n.raft.Shutdown().Error()
	n.wg.Wait()
	n.stopLeading()
	n.mux.close()
	n.rpc.close()
	if cerr := n.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// service is the RPC service the leader answers.
type service struct{ n *Node }

// Command runs a Command on the leader.
func (s *service) Command(args Command, reply *CommandReply) error {
	l := s.n.currentLeader()
	if l == nil {
		reply.Err = toWire(ErrNotController)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	*reply = l.submitCommand(ctx, args)
	return nil
}

// Heartbeat processes a broker heartbeat on the leader.
func (s *service) Heartbeat(args HeartbeatArgs, reply *HeartbeatReply) error {
	l := s.n.currentLeader()
	if l == nil {
		reply.Err = toWire(ErrNotController)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := l.submitHeartbeat(ctx, args)
	*reply = r
	reply.Err = toWire(err)
	return nil
}

var (
	_ metadata.Store            = (*Node)(nil)
	_ metadata.PartitionAlterer = (*Node)(nil)
	_ metadata.LeaderElector    = (*Node)(nil)
)

// ElectLeaders runs leader elections on the controller, in one entry;
// see metadata.LeaderElector.
func (n *Node) ElectLeaders(ctx context.Context, req metadata.ElectLeaders) ([]metadata.ElectionResult, error) {
	reply, err := n.command(ctx, Command{Kind: KindElectLeaders, Elect: &req})
	if err != nil {
		return nil, err
	}
	return reply.Elections, nil
}

// CreateACLs adds ACLs through the leader; see metadata.ACLStore.
func (n *Node) CreateACLs(ctx context.Context, bindings []acl.Binding) error {
	_, err := n.command(ctx, Command{Kind: KindCreateACLs, ACLs: bindings})
	return err
}

// DeleteACLs removes ACLs through the leader; see metadata.ACLStore.
func (n *Node) DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Binding, error) {
	reply, err := n.command(ctx, Command{Kind: KindDeleteACLs, ACLFilters: filters})
	if err != nil {
		return nil, err
	}
	if reply.DeletedACLs == nil {
		reply.DeletedACLs = make([][]acl.Binding, len(filters))
	}
	return reply.DeletedACLs, nil
}
