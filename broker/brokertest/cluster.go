package brokertest

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"weir/broker/controller"
	"weir/broker/kafka"
	"weir/broker/log"
	"weir/broker/metadata"
	"weir/broker/node"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
)

// Option configures NewCluster.
type Option func(*options)

type options struct {
	brokers       int
	lag           time.Duration
	session       time.Duration
	heartbeat     time.Duration
	raftTimeout   time.Duration
	fetchWait     time.Duration
	preferred     time.Duration
	brokerConfigs map[string]string
	logLevel      zap.AtomicLevel
	logLevelIsSet bool
	logTee        zapcore.Core
	logDirs       map[int32]string
	tls           bool
}

// Brokers sets the number of brokers (default 3); every one is a voter of
// the controller quorum.
func Brokers(n int) Option { return func(o *options) { o.brokers = n } }

// LagTime sets replica.lag.time.max.ms (default 1s).
func LagTime(d time.Duration) Option { return func(o *options) { o.lag = d } }

// SessionTimeout sets how long the controller waits for heartbeats before
// fencing a broker (default 1.5s); heartbeats go every tenth of it.
func SessionTimeout(d time.Duration) Option {
	return func(o *options) { o.session, o.heartbeat = d, d/10 }
}

// PreferredLeaderInterval sets how often leadership moves back to
// preferred replicas (default: never, so tests see the elections they
// cause; unless BrokerConfig sets auto.leader.rebalance.enable or
// leader.imbalance.check.interval.seconds: then those decide, as in a
// real broker).
func PreferredLeaderInterval(d time.Duration) Option { return func(o *options) { o.preferred = d } }

// BrokerConfig sets broker configs (Kafka names) on every broker.
func BrokerConfig(kv map[string]string) Option {
	return func(o *options) { o.brokerConfigs = kv }
}

// LogLevel sets the brokers' log level in the test log (default warn).
func LogLevel(l zap.AtomicLevel) Option {
	return func(o *options) { o.logLevel, o.logLevelIsSet = l, true }
}

// LogTee also sends every broker's log lines to core (tests count
// them, e.g. with zaptest/observer), at every level core enables.
func LogTee(core zapcore.Core) Option { return func(o *options) { o.logTee = core } }

// LogDir puts broker id's partition logs in dir (node.Config.LogDir)
// instead of its data directory, e.g. on a small file system.
func LogDir(id int32, dir string) Option { return LogDirs(id, dir) }

// LogDirs gives broker id several log directories (Kafka's log.dirs).
func LogDirs(id int32, dirs ...string) Option {
	return func(o *options) {
		if o.logDirs == nil {
			o.logDirs = map[int32]string{}
		}
		o.logDirs[id] = strings.Join(dirs, ",")
	}
}

// TLS makes the brokers' traffic to each other TLS-only with mutual
// authentication. Each broker has three listeners: CLIENT (PLAINTEXT, the
// test's clients: Addr), INTERNAL (SSL, inter.broker.listener.name:
// follower fetches) and CONTROLLER (SSL, controller.listener.names: Raft
// and controller RPCs), with ssl.client.auth=required. Certificates come
// from a test CA (Cluster.CA) through PEM files (Broker.KeyStorePath,
// reloaded every 100ms); TLS handshakes time out after 2s.
func TLS() Option { return func(o *options) { o.tls = true } }

// Listener names of a TLS cluster.
const (
	ClientListener     = "CLIENT"
	InternalListener   = "INTERNAL"
	ControllerListener = "CONTROLLER"
)

// Cluster is an in-process weir cluster: brokers on 127.0.0.1 with real
// data directories, a Raft controller quorum over all of them, and a
// Network that carries their traffic to each other.
type Cluster struct {
	t       testing.TB
	o       options
	net     *Network
	voters  []controller.Voter
	brokers []*Broker
	ca      *tlstest.CA // TLS clusters
}

// Broker is one in-process broker. Stop and Start it through the Cluster.
type Broker struct {
	ID int32
	c  *Cluster

	mu        sync.Mutex
	started   bool
	dataDir   string
	kafkaAddr string
	ctrlAddr  string
	intAddr   string // INTERNAL listener (TLS clusters)
	keyStore  string // key store file (TLS clusters)
	n         *node.Node
	node      *controller.Node
	srv       *kafka.Server
	logs      *log.Manager
}

// NewCluster starts a cluster and waits until every broker sees every
// broker registered and live. It is shut down when the test ends.
// Under go test -short it skips the test: a cluster of brokers is not a
// unit test (./scripts/test runs them all).
func NewCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a broker cluster: skipped under -short (go test without -short runs it)")
	}
	o := options{brokers: 3, lag: time.Second, session: 1500 * time.Millisecond, heartbeat: 150 * time.Millisecond,
		raftTimeout: 500 * time.Millisecond, fetchWait: 500 * time.Millisecond, preferred: -1}
	for _, fn := range opts {
		fn(&o)
	}
	if !o.logLevelIsSet {
		o.logLevel = zap.NewAtomicLevelAt(zap.WarnLevel)
	}
	c := &Cluster{t: t, o: o, net: newNetwork()}
	var tlsDir string
	if o.tls {
		c.ca = tlstest.NewCA(t, "brokertest CA")
		tlsDir = tlstest.Dir(t)
	}
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	var lns [][3]net.Listener
	for i := 0; i < o.brokers; i++ {
		id := int32(i + 1)
		l := [3]net.Listener{listen(), listen()}
		dir := t.TempDir()
		b := &Broker{ID: id, c: c, dataDir: dir, kafkaAddr: l[1].Addr().String(), ctrlAddr: l[0].Addr().String()}
		c.brokers = append(c.brokers, b)
		c.voters = append(c.voters, controller.Voter{ID: id, Addr: b.ctrlAddr})
		c.net.register(b.ctrlAddr, id, Controller)
		c.net.register(b.kafkaAddr, id, Kafka)
		if o.tls {
			l[2] = listen()
			b.intAddr = l[2].Addr().String()
			c.net.register(b.intAddr, id, Kafka)
			leaf := c.ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "broker" + strconv.Itoa(int(id))}})
			b.keyStore = tlstest.Write(t, tlsDir, "broker"+strconv.Itoa(int(id))+".pem", leaf.KeyStore())
		}
		lns = append(lns, l)
	}
	if o.tls {
		tlstest.Write(t, tlsDir, "ca.pem", c.ca.PEM)
	}
	t.Cleanup(c.Close)
	for i, b := range c.brokers {
		if err := b.startWithin(lns[i], 30*time.Second); err != nil {
			t.Fatalf("starting broker %d: %v", b.ID, err)
		}
	}
	c.WaitFor(30*time.Second, func() error { return c.allLive() })
	return c
}

// allLive checks that every running broker sees every broker live.
func (c *Cluster) allLive() error {
	for _, b := range c.brokers {
		if !b.Running() {
			continue
		}
		img := b.Image()
		if img.ClusterID() == "" {
			return fmt.Errorf("broker %d: no cluster id yet", b.ID)
		}
		if n := len(img.LiveBrokers()); n != len(c.brokers) {
			return fmt.Errorf("broker %d sees %d of %d brokers live", b.ID, n, len(c.brokers))
		}
	}
	return nil
}

// Network returns the fault controls of the brokers' traffic.
func (c *Cluster) Network() *Network { return c.net }

// Brokers returns the brokers, by node id order (ids 1..n).
func (c *Cluster) Brokers() []*Broker { return c.brokers }

// Broker returns broker id.
func (c *Cluster) Broker(id int32) *Broker {
	if id < 1 || int(id) > len(c.brokers) {
		c.t.Fatalf("brokertest: no broker %d", id)
	}
	return c.brokers[id-1]
}

// Addrs returns every broker's Kafka address (client seeds).
func (c *Cluster) Addrs() []string {
	var out []string
	for _, b := range c.brokers {
		out = append(out, b.kafkaAddr)
	}
	return out
}

// Client returns a franz-go client seeded with every broker, closed at the
// end of the test. It refreshes metadata quickly, to follow leadership
// changes in test time, and does not compress (tests read logs directly).
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	base := []kgo.Opt{
		kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: c.Addrs()}, append(base, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client over Client().
func (c *Cluster) Admin() *kadm.Client { return kadm.NewClient(c.Client()) }

// CreateTopic creates a topic through broker 1's metadata (any running
// broker's, if 1 is down) and waits until every running broker sees a live
// leader for every partition.
func (c *Cluster) CreateTopic(name string, partitions int32, rf int16, configs map[string]string) {
	c.t.Helper()
	var err error
	running := 0
	for _, b := range c.brokers {
		if b.Running() {
			running++
		}
	}
	// A running broker whose heartbeats were late on a loaded machine is
	// fenced for a moment (the test session timeout is short): the
	// controller then counts too few brokers for the replication factor,
	// as Kafka answers INVALID_REPLICATION_FACTOR. With enough brokers
	// running that is "not yet": retry until the deadline.
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, b := range c.brokers {
			if !b.Running() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err = b.Node().CreateTopic(ctx, metadata.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: rf, Configs: configs})
			cancel()
			break
		}
		if !errors.Is(err, metadata.ErrInvalidReplicationFactor) || int(rf) > running || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.created(name, err)
	c.WaitFor(20*time.Second, func() error {
		for p := int32(0); p < partitions; p++ {
			if _, err := c.LeaderOf(name, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// CreateTopicSpec creates spec's topic through broker on's node, for
// tests that choose the assignment; as CreateTopic, a retry that finds
// the topic created counts as created (created). The caller waits for
// the leaders it needs.
func (c *Cluster) CreateTopicSpec(ctx context.Context, on int32, spec metadata.TopicSpec) {
	c.t.Helper()
	_, err := c.Broker(on).Node().CreateTopic(ctx, spec)
	c.created(spec.Name, err)
}

// created fails the test unless err, a topic creation's outcome, is nil
// or ErrTopicExists: the create can be committed by a controller that
// then loses its leadership before answering (frequent on a loaded
// machine), and the node's retry then finds the topic, as a Kafka
// client's retry gets TOPIC_ALREADY_EXISTS. Every test's topics are new
// in its own cluster; the caller's wait for the partitions' leaders
// checks that it has them.
func (c *Cluster) created(name string, err error) {
	c.t.Helper()
	if errors.Is(err, metadata.ErrTopicExists) {
		c.t.Logf("creating topic %s: %v (a retry after a controller change): waiting for its partitions", name, err)
		return
	}
	if err != nil {
		c.t.Fatalf("creating topic %s: %v", name, err)
	}
}

// LeaderOf returns the partition's leader once every running broker agrees
// on it and it has taken over (it leads in its own replica state).
func (c *Cluster) LeaderOf(topic string, p int32) (int32, error) {
	leader, epoch := int32(-2), int32(-1)
	var isr, replicas []int32
	for _, b := range c.brokers {
		if !b.Running() {
			continue
		}
		mp, ok := b.Image().Partition(topic, p)
		if !ok {
			return -1, fmt.Errorf("broker %d does not know %s-%d", b.ID, topic, p)
		}
		if leader == -2 {
			leader, epoch, isr, replicas = mp.Leader, mp.LeaderEpoch, mp.ISR, mp.Replicas
		} else if mp.Leader != leader || mp.LeaderEpoch != epoch {
			return -1, fmt.Errorf("%s-%d: brokers disagree on the leader (%d epoch %d vs %d epoch %d)", topic, p, leader, epoch, mp.Leader, mp.LeaderEpoch)
		}
	}
	if leader < 0 {
		// The ISR says why (e.g. it had shrunk to the lost leader).
		return -1, fmt.Errorf("%s-%d has no leader (ISR %v, replicas %v)", topic, p, isr, replicas)
	}
	lb := c.Broker(leader)
	if !lb.Running() {
		return -1, fmt.Errorf("%s-%d: leader %d is not running", topic, p, leader)
	}
	if !lb.Leads(topic, p) {
		return -1, fmt.Errorf("%s-%d: broker %d has not taken over yet", topic, p, leader)
	}
	return leader, nil
}

// Partition returns the partition's state in a running broker's view.
func (c *Cluster) Partition(topic string, p int32) metadata.Partition {
	for _, b := range c.brokers {
		if b.Running() {
			mp, _ := b.Image().Partition(topic, p)
			return mp
		}
	}
	c.t.Fatal("brokertest: no broker running")
	return metadata.Partition{}
}

// WaitFor is testkit.CheckFor on the cluster's test: it polls cond until
// it returns nil, failing the test with cond's last error after d.
func (c *Cluster) WaitFor(d time.Duration, cond func() error) {
	c.t.Helper()
	testkit.CheckFor(c.t, d, cond)
}

// Isolate cuts every link to and from broker id (it keeps running and
// serving clients).
func (c *Cluster) Isolate(id int32) {
	for _, b := range c.brokers {
		if b.ID != id {
			c.net.Cut(id, b.ID)
			c.net.Cut(b.ID, id)
		}
	}
}

// Reconnect heals every link to and from broker id.
func (c *Cluster) Reconnect(id int32) {
	for _, b := range c.brokers {
		if b.ID != id {
			c.net.Heal(id, b.ID)
			c.net.Heal(b.ID, id)
		}
	}
}

// Kill stops broker id abruptly: its links are cut first (no controlled
// shutdown, no leadership hand-over reaches anyone), then it is closed.
// Its data directory stays for Restart. The logs are closed cleanly (an
// in-process test cannot lose the page cache); use the process-level
// tests for kill -9.
func (c *Cluster) Kill(id int32) {
	c.t.Helper()
	c.Isolate(id)
	c.Broker(id).stop()
	c.Reconnect(id)
}

// Restart starts a stopped broker again on the same addresses and data.
func (c *Cluster) Restart(id int32) {
	c.t.Helper()
	if err := c.TryRestart(id, 30*time.Second); err != nil {
		c.t.Fatalf("restarting broker %d: %v", id, err)
	}
}

// TryRestart is Restart giving the broker d to catch up with the quorum
// before it serves, and returning the start's error (the broker stays
// stopped then).
func (c *Cluster) TryRestart(id int32, d time.Duration) error {
	c.t.Helper()
	b := c.Broker(id)
	if b.Running() {
		c.t.Fatalf("brokertest: broker %d is running", id)
	}
	var l [3]net.Listener
	addrs := []string{b.ctrlAddr, b.kafkaAddr, b.intAddr}
	testkit.CheckFor(c.t, 10*time.Second, func() error {
		for i, a := range addrs {
			if l[i] != nil || a == "" {
				continue
			}
			var err error
			if l[i], err = net.Listen("tcp", a); err != nil {
				return err
			}
		}
		return nil
	})
	return b.startWithin(l, d)
}

// Close stops every broker.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for _, b := range c.brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.stop()
		}()
	}
	wg.Wait()
}

// tlsConfigs are the listener and ssl.* settings of a TLS cluster's
// broker, over the cluster's broker configs.
func (b *Broker) tlsConfigs() map[string]string {
	out := map[string]string{}
	for k, v := range b.c.o.brokerConfigs {
		out[k] = v
	}
	out["listeners"] = ClientListener + "://" + b.kafkaAddr + "," + InternalListener + "://" + b.intAddr + "," + ControllerListener + "://" + b.ctrlAddr
	out["listener.security.protocol.map"] = ClientListener + ":PLAINTEXT," + InternalListener + ":SSL," + ControllerListener + ":SSL"
	out["inter.broker.listener.name"] = InternalListener
	out["controller.listener.names"] = ControllerListener
	out["ssl.keystore.location"] = b.keyStore
	out["ssl.truststore.location"] = filepath.Join(filepath.Dir(b.keyStore), "ca.pem")
	out["ssl.client.auth"] = "required"
	return out
}

// startWithin starts the broker on its bound controller, Kafka and (TLS
// clusters) INTERNAL listeners, giving a restarted broker d to catch up
// with the quorum.
func (b *Broker) startWithin(l [3]net.Listener, d time.Duration) error {
	ctrlLn, kafkaLn := l[0], l[1]
	c := b.c
	o := c.o
	lg := zaptest.NewLogger(c.t, zaptest.Level(o.logLevel))
	if o.logTee != nil {
		lg = lg.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, o.logTee) }))
	}
	lg = lg.Named("broker" + strconv.Itoa(int(b.ID)))
	// A restarted broker serves only once it caught up; on the first
	// start the quorum forms as the brokers start.
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	preferred := o.preferred
	if preferred < 0 && (o.brokerConfigs["auto.leader.rebalance.enable"] != "" || o.brokerConfigs["leader.imbalance.check.interval.seconds"] != "") {
		preferred = 0 // the broker configs decide
	}
	cfg := node.Config{
		NodeID: b.ID, DataDir: b.dataDir, LogDir: o.logDirs[b.ID], KafkaListener: kafkaLn, BrokerConfigs: o.brokerConfigs, Logger: lg,
		Controller: &node.ControllerConfig{
			Listener: ctrlLn, Voters: c.voters, HeartbeatInterval: o.heartbeat, SessionTimeout: o.session,
			PreferredLeaderInterval: preferred, RaftTimeout: o.raftTimeout, Dial: c.net.dialer(b.ID),
			NoWait: b.firstStart(),
		},
		TuneKafka: func(k *kafka.Config) {
			k.ReplicaLagTime = o.lag
			k.ReplicaFetchMaxWait = o.fetchWait
			k.ReplicaDial = c.net.dialer(b.ID)
			if o.tls {
				k.HandshakeTimeout = tlsHandshakeTimeout
			}
		},
	}
	if o.tls {
		cfg.KafkaListener, cfg.Controller.Listener = nil, nil
		cfg.BoundListeners = map[string]net.Listener{ClientListener: kafkaLn, InternalListener: l[2], ControllerListener: ctrlLn}
		cfg.BrokerConfigs = b.tlsConfigs()
		cfg.TLSReloadInterval = 100 * time.Millisecond
		cfg.Controller.HandshakeTimeout = tlsHandshakeTimeout
	}
	n, err := node.Start(ctx, cfg)
	if err != nil {
		for _, ln := range l {
			if ln != nil {
				ln.Close()
			}
		}
		return err
	}
	b.mu.Lock()
	b.n, b.node, b.srv, b.logs = n, n.Controller(), n.Server(), n.Logs()
	b.mu.Unlock()
	return nil
}

// tlsHandshakeTimeout bounds TLS handshakes in TLS clusters.
const tlsHandshakeTimeout = 2 * time.Second

// CA is a TLS cluster's certificate authority (nil otherwise): the
// brokers' certificates and trust store come from it.
func (c *Cluster) CA() *tlstest.CA { return c.ca }

// KeyStorePath is the PEM key store file of a TLS cluster's broker
// (ssl.keystore.location): replacing it rotates the broker's certificate
// for new connections.
func (b *Broker) KeyStorePath() string { return b.keyStore }

// InternalAddr is a TLS cluster's broker's INTERNAL (SSL, inter-broker)
// listener address.
func (b *Broker) InternalAddr() string { return b.intAddr }

// ControllerAddr is the broker's controller listener address.
func (b *Broker) ControllerAddr() string { return b.ctrlAddr }

// firstStart reports whether this is the broker's first start (the quorum
// cannot be waited for then: it forms as the brokers start).
func (b *Broker) firstStart() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := !b.started
	b.started = true
	return first
}

func (b *Broker) stop() {
	b.mu.Lock()
	n := b.n
	b.n, b.node, b.srv, b.logs = nil, nil, nil, nil
	b.mu.Unlock()
	if n == nil {
		return
	}
	// As abrupt as a crash: no controlled shutdown.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = n.Close(ctx)
}

// Running reports whether the broker is started.
func (b *Broker) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srv != nil
}

// Node returns the broker's controller node (nil when stopped).
func (b *Broker) Node() *controller.Node {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.node
}

// Server returns the broker's Kafka server (nil when stopped).
func (b *Broker) Server() *kafka.Server {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.srv
}

// Image returns the broker's metadata view (empty when stopped).
func (b *Broker) Image() *metadata.Image {
	if n := b.Node(); n != nil {
		return n.Image()
	}
	return &metadata.Image{}
}

// Addr returns the broker's Kafka address.
func (b *Broker) Addr() string { return b.kafkaAddr }

// DataDir returns the broker's data directory.
func (b *Broker) DataDir() string { return b.dataDir }

// Storage returns the state of the broker's log directory as the broker
// sees it (broker/logdir; StorageOK when stopped).
func (b *Broker) Storage() metadata.StorageState {
	b.mu.Lock()
	n := b.n
	b.mu.Unlock()
	if n == nil {
		return metadata.StorageOK
	}
	st, _ := n.LogDirs().State()
	return st
}

// DirStorage returns the state of one of the broker's log directories
// (StorageOK when stopped or not one of them).
func (b *Broker) DirStorage(dir string) metadata.StorageState {
	b.mu.Lock()
	n := b.n
	b.mu.Unlock()
	if n == nil {
		return metadata.StorageOK
	}
	m := n.LogDirs().Monitor(dir)
	if m == nil {
		return metadata.StorageOK
	}
	st, _ := m.State()
	return st
}

// ReportStorageErrorIn is ReportStorageError for one log directory of a
// broker with several.
func (b *Broker) ReportStorageErrorIn(dir string, err error) {
	b.mu.Lock()
	n := b.n
	b.mu.Unlock()
	if n != nil {
		n.LogDirs().Report(dir, err)
	}
}

// ReportStorageError hands err to the monitor of the broker's (first) log
// directory as if a log write or read had failed with it: for faults a
// real file system in a test cannot produce (EIO).
func (b *Broker) ReportStorageError(err error) {
	b.mu.Lock()
	n := b.n
	b.mu.Unlock()
	if n != nil {
		n.LogDirs().Report(n.LogDirs().Paths()[0], err)
	}
}

// Log returns the broker's open log of a partition (nil when not hosted
// or stopped).
func (b *Broker) Log(topic string, p int32) *log.Log {
	b.mu.Lock()
	logs := b.logs
	b.mu.Unlock()
	if logs == nil {
		return nil
	}
	l, _ := logs.Get(topic, p)
	return l
}

// LogDirOf returns the log directory holding the broker's log of a
// partition ("" when not open or stopped).
func (b *Broker) LogDirOf(topic string, p int32) string {
	b.mu.Lock()
	logs := b.logs
	b.mu.Unlock()
	if logs == nil {
		return ""
	}
	d, _ := logs.DirOf(topic, p)
	return d
}

// Leads reports whether the broker leads the partition in its own replica
// state (it has taken over, not only been elected).
func (b *Broker) Leads(topic string, p int32) bool {
	srv := b.Server()
	return srv != nil && srv.Leads(topic, p)
}

// ISR returns the ISR as the broker, leading the partition, knows it.
func (b *Broker) ISR(topic string, p int32) []int32 {
	srv := b.Server()
	if srv == nil {
		return nil
	}
	isr := srv.LeaderISR(topic, p)
	sort.Slice(isr, func(i, j int) bool { return isr[i] < isr[j] })
	return isr
}
