package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/admin"
	"weir/broker/controller"
	"weir/broker/httpsec"
	"weir/broker/kafka"
	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/logdir"
	"weir/broker/metadata"
	"weir/broker/sasl"
	"weir/broker/topicconfig"
	"weir/broker/txn"
)

// Config describes one broker node.
type Config struct {
	// NodeID is the broker's node id (in a cluster: its voter id).
	NodeID int32
	// DataDir holds the partition logs, the metadata (single node) or the
	// Raft log (cluster), and the producer-id blocks. Created if missing.
	DataDir string
	// LogDir holds the partition logs: Kafka's log.dirs, one directory or
	// several separated by commas; "" is the broker config log.dirs if
	// set, else DataDir. New partitions go to the directory holding the
	// fewest; a failed or full directory takes only its own partitions
	// offline (broker/logdir). Putting them on their own disks keeps the
	// metadata (the Raft log in DataDir, Kafka's metadata.log.dir)
	// writable when the logs fill their disk.
	LogDir string
	// KafkaAddr is the Kafka listener, host:port; port 0 picks a free
	// port (see Node.KafkaAddr). It is a shorthand for the broker config
	// listeners=PLAINTEXT://KafkaAddr (and AdvertisedAddr for
	// advertised.listeners); leave both empty when BrokerConfigs has
	// listeners. "" without listeners is :9092.
	KafkaAddr string
	// KafkaListener, when set, is an already bound Kafka listener used
	// instead of KafkaAddr (tests that know their ports before start).
	KafkaListener net.Listener
	// BoundListeners, by listener name (upper case), are already bound
	// listeners used instead of the addresses in the listeners config,
	// the controller listener's included (tests).
	BoundListeners map[string]net.Listener
	// AdvertisedAddr is given to clients in Metadata ("" = the bound
	// listener address).
	AdvertisedAddr string
	// AdminAddr is the admin HTTP listener (/metrics, /healthz, /readyz);
	// "" or "off" runs none.
	AdminAddr string
	// RegistryAddr is the schema registry listener; "" or "off" runs none.
	RegistryAddr string
	// RegistryConfigs are the schema registry's settings with Confluent
	// Schema Registry's names (listeners=https://host:port, ssl.*,
	// ssl.client.authentication, authentication.method=BASIC, ...; see
	// broker/httpsec). listeners replaces RegistryAddr.
	RegistryConfigs map[string]string
	// RegistryAddrIsDefault says RegistryAddr was not chosen by the user:
	// when that port is taken the node runs without a registry (with a
	// warning) instead of failing.
	RegistryAddrIsDefault bool
	// BrokerConfigs are broker-level configs with Kafka's names
	// (num.partitions, log.retention.hours, ...); validated by Start.
	BrokerConfigs map[string]string
	// Controller makes the node a broker of a replicated cluster and a
	// voter of its Raft controller quorum; nil is a single-node cluster
	// that is its own controller.
	Controller *ControllerConfig
	// AddScram are SCRAM credentials stored when the data directory is
	// new (weir broker --add-scram, as kafka-storage format --add-scram).
	AddScram []sasl.ScramUser
	// TLSReloadInterval is how often SSL listeners' key and trust store
	// files (the HTTP listeners' too) are checked for changes (0:
	// DefaultTLSReloadInterval).
	TLSReloadInterval time.Duration
	// Logger receives the node's logs (nil: none).
	Logger *zap.Logger
	// Metrics receives the node's collectors and is served at /metrics
	// (nil: a fresh registry, see Node.Metrics).
	Metrics *prometheus.Registry
	// TuneKafka, when set, adjusts the Kafka server's configuration after
	// Start filled it in (tests shorten replication timings with it).
	TuneKafka func(*kafka.Config)
}

// ControllerConfig is the node's part of the controller quorum.
type ControllerConfig struct {
	// Addr is the controller (Raft) listen address.
	Addr string
	// Voters is the quorum, the same list on every node.
	Voters []controller.Voter
	// SessionTimeout fences a broker silent this long (default 2s).
	SessionTimeout time.Duration
	// HeartbeatInterval is how often this broker heartbeats (default 250ms).
	HeartbeatInterval time.Duration
	// PreferredLeaderInterval is how often the controller gives
	// partitions back to their preferred replicas: 0 = as the broker
	// configs say (Kafka's auto.leader.rebalance.enable, default true,
	// and leader.imbalance.check.interval.seconds, default 300), <0
	// never.
	PreferredLeaderInterval time.Duration
	// RaftTimeout: see controller.Config (0 = 1s).
	RaftTimeout time.Duration
	// Listener, when set, is an already bound controller listener.
	Listener net.Listener
	// Dial opens connections to other controllers (nil: plain TCP).
	Dial controller.DialFunc
	// HandshakeTimeout bounds a TLS handshake on an SSL controller
	// listener (default 10s).
	HandshakeTimeout time.Duration
	// NoWait starts serving without waiting for the quorum: for the very
	// first start of a cluster, whose quorum forms as its brokers start.
	NoWait bool
}

// Node is a running broker. Its methods are safe for concurrent use.
type Node struct {
	cfg          Config
	lg           *zap.Logger
	metrics      *prometheus.Registry
	meta         metadata.Store
	fileMeta     *metadata.FileStore // single node
	ctrl         *controller.Node    // cluster
	clusterID    string
	logs         *log.Manager
	logDirs      *logdir.Dirs
	srv          *kafka.Server
	listeners    *listenerSetup
	adm          *admin.Server
	adminSec     *httpsec.Security
	registrySt   *httpsec.Settings
	stopRegistry func(context.Context) error
	registryAddr string
	ready        atomic.Bool
	stopped      atomic.Bool
}

// Start starts a node and returns once its listeners are bound and it
// serves. In a cluster it first waits, until ctx is done, for the
// controller quorum (logging every 10 s while it waits). On error
// everything started so far is stopped again.
func Start(ctx context.Context, cfg Config) (n *Node, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("node: no data directory")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	bcfg, err := topicconfig.NewBroker(cfg.BrokerConfigs)
	if err != nil {
		return nil, fmt.Errorf("broker config: %w", err)
	}
	authz, err := acl.ParseConfig(cfg.BrokerConfigs)
	if err != nil {
		return nil, fmt.Errorf("broker config: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	regSt, err := registrySettings(cfg)
	if err != nil {
		return nil, err
	}
	if regSt != nil {
		regSt.ReloadEvery = cfg.TLSReloadInterval
	}
	lg := cfg.Logger
	n = &Node{cfg: cfg, lg: lg, metrics: cfg.Metrics, registrySt: regSt}
	defer func() {
		if err != nil {
			n.close(context.Background())
			n = nil
		}
	}()
	fresh := freshMetadata(cfg)
	if n.listeners, err = setupListeners(cfg, lg, n.scramLookup); err != nil {
		return n, fmt.Errorf("broker config: %w", err)
	}
	if n.listeners.controller != "" {
		if cfg.Controller.Addr != "" && cfg.Controller.Listener == nil && cfg.Controller.Addr != n.listeners.controller {
			return n, fmt.Errorf("broker config: controller.listener.names puts the controller listener on %s, and the controller address is %s too: set one", n.listeners.controller, cfg.Controller.Addr)
		}
		c := *cfg.Controller
		c.Addr = n.listeners.controller
		if n.listeners.controllerLn != nil {
			c.Listener = n.listeners.controllerLn
		}
		cfg.Controller = &c
	} else if cfg.Controller != nil && cfg.Controller.Addr == "" && cfg.Controller.Listener == nil {
		c := *cfg.Controller
		c.Addr = ":9093"
		cfg.Controller = &c
	}

	if c := cfg.Controller; c == nil {
		if n.fileMeta, err = metadata.OpenFile(cfg.DataDir, lg.Named("metadata")); err != nil {
			return n, err
		}
		if n.clusterID, err = n.fileMeta.InitCluster(ctx, metadata.NewUUID().String()); err != nil {
			return n, fmt.Errorf("initializing cluster metadata in %s: %w", cfg.DataDir, err)
		}
		n.meta = n.fileMeta
	} else {
		n.ctrl, err = controller.Start(controller.Config{
			NodeID: cfg.NodeID, Addr: c.Addr, Voters: c.Voters,
			Dir: filepath.Join(cfg.DataDir, "controller"), BrokerConfig: bcfg,
			SessionTimeout: c.SessionTimeout, HeartbeatInterval: c.HeartbeatInterval,
			PreferredLeaderInterval: preferredLeaderInterval(c.PreferredLeaderInterval, bcfg), RaftTimeout: c.RaftTimeout,
			Listener: c.Listener, Dial: c.Dial, Logger: lg.Named("controller"),
			TLS: n.listeners.controllerTLS, HandshakeTimeout: c.HandshakeTimeout,
			Authorize: controllerAuthorize(authz), ListenerName: n.listeners.controllerName(),
		})
		if err != nil {
			return n, err
		}
		if !c.NoWait {
			if err = n.waitQuorum(ctx); err != nil {
				return n, err
			}
		}
		n.meta, n.clusterID = n.ctrl, n.ctrl.Image().ClusterID()
	}
	if fresh {
		if cfg.Controller != nil && cfg.Controller.NoWait {
			go func() {
				if err := n.addScram(context.Background()); err != nil {
					lg.Error("storing the --add-scram credentials", zap.Error(err))
				}
			}()
		} else if err = n.addScram(ctx); err != nil {
			return n, err
		}
	}

	logDirs, err := cfg.logDirs()
	if err != nil {
		return n, err
	}
	if len(logDirs) == 1 {
		// With several, one that cannot be created is a failed directory
		// (log.Manager goes on with the others).
		if err := os.MkdirAll(logDirs[0], 0o755); err != nil {
			return n, fmt.Errorf("log directory: %w", err)
		}
	}
	// Each log directory's state: full or failed writes hand the
	// partitions of that directory to other replicas (broker/logdir).
	if n.logDirs, err = logdir.NewDirs(logdir.Config{FS: vfs.OS, Logger: lg.Named("logdir")}, logDirs); err != nil {
		return n, err
	}
	if n.logs, err = log.NewManagerDirs(vfs.OS, logDirs, log.ManagerOptions{
		OnOffline: func(tp log.TopicPartition, err error) {
			if d, ok := n.logs.DirOf(tp.Topic, tp.Partition); ok {
				n.logDirs.Report(d, err)
			}
		},
		DirUsable: n.logDirs.Usable,
		OnDirFailed: func(dir string, err error) {
			if m := n.logDirs.Monitor(dir); m != nil {
				m.Fail(err)
			}
		},
		Logger:                 lg.Named("log"),
		RetentionCheckInterval: bcfg.RetentionCheckInterval(),
		// log.cleaner.*, read before every cleaning round (dynamic too).
		Cleaner: func() log.CleanerConfig { return log.CleanerConfig(bcfg.Cleaner()) },
	}); err != nil {
		return n, err
	}
	// A dynamic log.cleaner.* change starts a round with the new values
	// now rather than at the end of the old backoff (WakeCleaner after
	// Close is harmless, so the watch is never cancelled).
	bcfg.OnChange(func(names []string) {
		for _, name := range names {
			if strings.HasPrefix(name, "log.cleaner.") {
				n.logs.WakeCleaner()
				return
			}
		}
	})
	n.logDirs.SetPartitions(n.logs.PartitionsIn)
	if n.ctrl != nil {
		n.ctrl.SetStorageReport(n.logDirs.StorageReport)
		n.logDirs.Watch(func() { n.ctrl.SetStorageReport(n.logDirs.StorageReport) })
	}
	// Recover every partition on disk now, several at a time, rather than
	// one by one as the Kafka layer claims them.
	if err := n.logs.LoadExisting(nil); err != nil {
		lg.Warn("some partition logs could not be opened at startup; opening them is retried when they are claimed", zap.Error(err))
	}
	if a := strings.TrimSpace(cfg.AdminAddr); a != "" && !strings.EqualFold(a, "off") {
		st, err := httpsec.ParseAdmin(a, cfg.BrokerConfigs)
		if err != nil {
			return n, err
		}
		st.ReloadEvery = cfg.TLSReloadInterval
		if n.adminSec, err = httpsec.New(st, lg.Named("admin")); err != nil {
			return n, err
		}
		n.adm, err = admin.New(admin.Config{Addr: st.Addr, Registry: n.metrics, Logger: lg.Named("admin"), Ready: n.readiness, Security: n.adminSec})
		if err != nil {
			return n, fmt.Errorf("admin listener %s: %w", a, err)
		}
		n.adm.Start()
	}

	kcfg := kafka.DefaultConfig()
	kcfg.NodeID = cfg.NodeID
	kcfg.Listeners = n.listeners.kafka
	if n.ctrl != nil {
		// The controller port's Kafka-protocol connections (Kafka's tools
		// with --bootstrap-controller; broker/controller kafkaport.go).
		name := n.listeners.controllerName()
		if name == "" {
			name = "CONTROLLER"
		}
		kcfg.Listeners = append(slices.Clone(kcfg.Listeners), kafka.Listener{Name: name, Protocol: "PLAINTEXT",
			Listener: n.ctrl.KafkaListener(), NoAdvertise: true, Controller: true})
	}
	kcfg.InterBrokerListener = n.listeners.cfg.InterBroker
	kcfg.ReplicaTLS = n.listeners.interBrokerTLS
	kcfg.Metadata = n.meta
	kcfg.Logs = n.logs
	kcfg.BrokerConfig = bcfg
	kcfg.Logger = lg.Named("kafka")
	kcfg.OnStorageError = func(topic string, partition int32, err error) {
		if d, ok := n.logs.DirOf(topic, partition); ok {
			n.logDirs.Report(d, err)
		}
	}
	kcfg.LogDirs = logDirs
	kcfg.LogDirState = func(dir string) (metadata.StorageState, error) {
		if m := n.logDirs.Monitor(dir); m != nil {
			return m.State()
		}
		return metadata.StorageOK, nil
	}
	kcfg.Registerer = n.metrics
	if authz != nil {
		kcfg.Authorizer = acl.New(*authz, lg)
	}
	if cfg.TuneKafka != nil {
		cfg.TuneKafka(&kcfg)
	}
	srv, err := kafka.New(kcfg)
	if err != nil {
		return n, err
	}
	if n.ctrl != nil {
		// Producer ids are reserved in blocks through the controller
		// quorum, so no two brokers (and no restart) hand out one twice.
		err = srv.SetProducerIDStore(n.ctrl)
	} else {
		// Producer ids are reserved in blocks persisted in the data
		// directory, so an id is never handed out twice across restarts.
		var pids *txn.FileBlockStore
		if pids, err = txn.OpenFileBlockStore(vfs.OS, cfg.DataDir); err == nil {
			err = srv.SetProducerIDStore(pids)
		}
	}
	if err != nil {
		return n, fmt.Errorf("producer ids in %s: %w", cfg.DataDir, err)
	}
	if err = srv.Start(); err != nil {
		return n, err
	}
	n.srv = srv
	n.listeners.watch(context.Background(), cfg.TLSReloadInterval)

	if n.plaintextAddr() == "" && n.registrySt != nil {
		// The registry is a Kafka client of this broker, plaintext only
		// for now (client-side TLS is issue 16 item 7).
		if !cfg.RegistryAddrIsDefault {
			return n, fmt.Errorf("the schema registry needs a PLAINTEXT Kafka listener (its Kafka client has no TLS yet); add one to listeners or set --registry-addr off")
		}
		lg.Warn("schema registry disabled: it needs a PLAINTEXT Kafka listener (its Kafka client has no TLS yet)")
		n.registrySt = nil
	}
	if n.stopRegistry, n.registryAddr, err = ServeRegistrySecure(lg.Named("registry"), n.registrySt, n.plaintextAddr(), n.meta, !cfg.RegistryAddrIsDefault); err != nil {
		return n, err
	}
	n.ready.Store(true)
	lg.Info("broker started", zap.String("kafka_addr", n.KafkaAddr()), zap.String("listeners", n.listeners.describe()), zap.String("admin_addr", n.AdminAddr()),
		zap.String("schema_registry", n.RegistryURL()), zap.String("data_dir", cfg.DataDir),
		zap.Int32("node_id", cfg.NodeID), zap.String("cluster_id", n.clusterID))
	return n, nil
}

func (n *Node) waitQuorum(ctx context.Context) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := n.ctrl.WaitReady(wctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("gave up waiting for the controller quorum: %w", ctx.Err())
		}
		applied, commit, last, initialized := n.ctrl.CatchUp()
		n.lg.Warn("still waiting for the controller quorum (are the other voters running?)", zap.Int32("controller_id", n.ctrl.ControllerID()),
			zap.Uint64("applied_index", applied), zap.Uint64("commit_index", commit), zap.Uint64("last_index", last), zap.Bool("cluster_initialized", initialized))
	}
}

func (n *Node) readiness() error {
	if !n.ready.Load() {
		return fmt.Errorf("kafka listener not serving")
	}
	return nil
}

// KafkaAddr is the bound address of the first PLAINTEXT Kafka listener
// (the one weir's own clients use), else of the first listener.
func (n *Node) KafkaAddr() string {
	if a := n.plaintextAddr(); a != "" {
		return a
	}
	if n.srv == nil {
		return ""
	}
	return n.srv.Addr().String()
}

// plaintextAddr is the bound address of the first PLAINTEXT listener.
func (n *Node) plaintextAddr() string {
	if n.srv == nil {
		return ""
	}
	addrs := n.srv.ListenerAddrs()
	for _, l := range n.listeners.kafka {
		if l.Protocol == "PLAINTEXT" {
			return addrs[l.Name].String()
		}
	}
	return ""
}

// ListenerAddrs are the bound addresses of the Kafka listeners by name.
func (n *Node) ListenerAddrs() map[string]string {
	out := map[string]string{}
	if n.srv != nil {
		for name, a := range n.srv.ListenerAddrs() {
			if n.ctrl != nil && a.String() == n.ctrl.Addr().String() {
				continue // the controller port (kafkaport.go), not a Kafka listener
			}
			out[name] = a.String()
		}
	}
	return out
}

// AdminAddr is the bound admin listener address ("" when off).
func (n *Node) AdminAddr() string {
	if n.adm == nil {
		return ""
	}
	return n.adm.Addr()
}

// Admin is the admin HTTP listener (nil when off), for components that
// mount their handlers on it (the web console, weir run's API).
func (n *Node) Admin() *admin.Server { return n.adm }

// RegistryAddr is the bound schema registry listener address ("" when
// off).
func (n *Node) RegistryAddr() string { return n.registryAddr }

// RegistryURL is the schema registry's URL for clients ("" when off).
func (n *Node) RegistryURL() string {
	if n.registryAddr == "" {
		return ""
	}
	return n.registrySt.Scheme() + "://" + Dialable(n.registryAddr)
}

// ClusterID is the cluster's id.
func (n *Node) ClusterID() string { return n.clusterID }

// Server is the Kafka server.
func (n *Node) Server() *kafka.Server { return n.srv }

// Metadata is the node's view of the cluster metadata.
func (n *Node) Metadata() metadata.Store { return n.meta }

// Controller is the node's controller (nil for a single node).
func (n *Node) Controller() *controller.Node { return n.ctrl }

// LogDirs are the monitors of the node's log directories.
func (n *Node) LogDirs() *logdir.Dirs { return n.logDirs }

// Logs is the node's partition-log manager.
func (n *Node) Logs() *log.Manager { return n.logs }

// Metrics is the registry the node's collectors are in.
func (n *Node) Metrics() *prometheus.Registry { return n.metrics }

// Shutdown stops the node: readiness off, in a cluster a controlled
// shutdown (leaderships handed to other in-sync replicas, bounded by
// half of ctx's time and at most 10 s), then the registry, the Kafka
// listener (in-flight requests finish until ctx is done), the admin
// listener, the controller, the logs and the metadata. It returns the
// first error; calling it again returns nil.
func (n *Node) Shutdown(ctx context.Context) error {
	if n.stopped.Swap(true) {
		return nil
	}
	n.ready.Store(false)
	if n.ctrl != nil {
		grace := 10 * time.Second
		if d, ok := ctx.Deadline(); ok {
			grace = min(time.Until(d)/2, grace)
		}
		hctx, cancel := context.WithTimeout(ctx, grace)
		if err := n.ctrl.Shutdown(hctx); err != nil {
			n.lg.Warn("controlled shutdown incomplete; stopping anyway", zap.Error(err))
		}
		cancel()
	}
	err := n.close(ctx)
	n.lg.Info("broker stopped")
	return err
}

// Close stops the node at once, without the controlled shutdown (its
// leaderships move only when the controller fences it, as after a
// crash). Calling it again, or after Shutdown, returns nil.
func (n *Node) Close(ctx context.Context) error {
	if n.stopped.Swap(true) {
		return nil
	}
	return n.close(ctx)
}

// close stops whatever is running, in reverse order of Start.
func (n *Node) close(ctx context.Context) error {
	n.ready.Store(false)
	var errs []error
	add := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	if n.stopRegistry != nil {
		add("schema registry shutdown", n.stopRegistry(ctx))
	}
	if n.srv != nil {
		add("kafka shutdown", n.srv.Shutdown(ctx))
	}
	n.listeners.close()
	if n.adm != nil {
		add("admin shutdown", n.adm.Shutdown(ctx))
	}
	n.adminSec.Close()
	if n.logDirs != nil {
		n.logDirs.Close()
	}
	if n.ctrl != nil {
		add("controller shutdown", n.ctrl.Close())
	}
	if n.logs != nil {
		add("closing partition logs", n.logs.Close())
	}
	if n.fileMeta != nil {
		add("closing metadata", n.fileMeta.Close())
	}
	return errors.Join(errs...)
}

// Dialable turns a listen address (":8081", "[::]:8081") into one
// clients can dial.
func Dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// preferredLeaderInterval is the controller's automatic preferred leader
// election schedule: set (non-zero) wins; else every
// leader.imbalance.check.interval.seconds while auto.leader.rebalance.enable
// (as Kafka's ControllerServer; leader.imbalance.per.broker.percentage
// is accepted and, as in KRaft, not used: every imbalanced partition
// whose preferred replica can lead is moved back), else never (-1).
func preferredLeaderInterval(set time.Duration, b *topicconfig.Broker) time.Duration {
	if set != 0 {
		return set
	}
	if v, _, ok := b.Value(topicconfig.BrokerAutoLeaderRebalanceEnable); ok && strings.EqualFold(v, "false") {
		return -1
	}
	v, _, _ := b.Value(topicconfig.BrokerLeaderImbalanceCheckIntervalSeconds)
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil || secs <= 0 {
		return -1
	}
	return time.Duration(secs) * time.Second
}

// logDirs returns the partition log directories: LogDir, else the broker
// config log.dirs, else DataDir; a list separated by commas (Kafka's
// log.dirs), each trimmed. Empty or repeated entries are errors.
func (c Config) logDirs() ([]string, error) {
	list, from := c.LogDir, "log directory"
	if strings.TrimSpace(list) == "" {
		list, from = c.BrokerConfigs[topicconfig.BrokerLogDirs], topicconfig.BrokerLogDirs
	}
	if strings.TrimSpace(list) == "" {
		return []string{c.DataDir}, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, d := range strings.Split(list, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			return nil, fmt.Errorf("%s %q: an empty directory in the list", from, list)
		}
		clean := filepath.Clean(d)
		if seen[clean] {
			return nil, fmt.Errorf("%s %q: %s is listed twice", from, list, d)
		}
		seen[clean] = true
		out = append(out, clean)
	}
	return out, nil
}
