package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/group"
	"weir/broker/internal/repeatlog"
	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/metadata"
	"weir/broker/quota"
	"weir/broker/replica"
	"weir/broker/tlsconf"
	"weir/broker/topicconfig"
	"weir/broker/txncoord"
)

// Config configures a Server. Start from DefaultConfig: its zero values
// are not Kafka's defaults.
type Config struct {
	// NodeID is this broker's node id (broker.id / node.id).
	NodeID int32
	// Addr is the Kafka listener address, host:port; port 0 picks one.
	Addr string
	// AdvertisedAddr is the host:port given to clients in Metadata; empty
	// means the bound listener address (with an unspecified host replaced
	// by the machine's hostname).
	AdvertisedAddr string
	// Listeners are the named listeners (Kafka's listeners); empty means
	// one PLAINTEXT listener on Addr, advertised as AdvertisedAddr, whose
	// address is given to every client (the --kafka-addr shorthand).
	Listeners []Listener
	// InterBrokerListener is inter.broker.listener.name: its advertised
	// address is the one other brokers use (registration Host:Port).
	InterBrokerListener string
	// HandshakeTimeout bounds a TLS handshake (default 10s).
	HandshakeTimeout time.Duration
	// Rack is this broker's rack (broker.rack), nil for none.
	Rack *string

	// Metadata is the cluster metadata; required.
	Metadata metadata.Store
	// Logs opens and deletes the partition logs; required. The server
	// opens the logs of every topic in Metadata and follows its changes.
	Logs LogManager
	// FS is the file system of the data directory, for producer-state
	// snapshots (nil: vfs.OS).
	FS vfs.FS
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	// BrokerConfig is the broker's configuration (Kafka names:
	// auto.create.topics.enable, num.partitions, default.replication.factor,
	// message.max.bytes and the log.* defaults of topic configs); nil
	// means Kafka's defaults. The server feeds it the dynamic broker
	// configs of the metadata (dynamic_config.go), so it must be one made
	// by topicconfig.NewBroker, not Defaults(), for those to apply.
	BrokerConfig *topicconfig.Broker
	// MaxRequestBytes is socket.request.max.bytes (default 100 MiB).
	MaxRequestBytes int32
	// IdleTimeout is connections.max.idle.ms (default 10 min); 0 disables.
	IdleTimeout time.Duration

	// ReplicaLagTime is replica.lag.time.max.ms (0: the broker config's).
	ReplicaLagTime time.Duration
	// ReplicaFetchMaxWait is replica.fetch.wait.max.ms (default 500ms).
	ReplicaFetchMaxWait time.Duration
	// ReplicaDial opens this broker's connections to other brokers
	// (follower fetches); nil is plain TCP. Tests inject faults here.
	ReplicaDial replica.DialFunc
	// ReplicaTLS, when set, puts follower fetches under TLS: the
	// inter-broker listener's TLS side, whose key store is this broker's
	// client certificate (see replica.Config.TLS).
	ReplicaTLS *tlsconf.Server

	// OnStorageError gets every error of a write or read of the
	// partition logs and producer-state snapshots (appends, follower
	// appends, fetch reads), so the broker can tell a full or failing log
	// directory (broker/logdir); nil: ignored.
	// The partition is the one whose log (its directory) the error is
	// about.
	OnStorageError func(topic string, partition int32, err error)
	// LogDirs are the directories of the partition logs (Kafka's
	// log.dirs), as DescribeLogDirs reports them; nil reports none. A
	// partition is in the directory Logs says (its DirOf), or in the only
	// one.
	LogDirs []string
	// LogDirState tells the state of a directory of LogDirs
	// (broker/logdir's Dirs); nil: always writable.
	LogDirState func(dir string) (metadata.StorageState, error)

	// Authorizer, when set, enforces the ACLs of the metadata
	// (authorizer.class.name); nil allows everything and answers the ACL
	// requests with SECURITY_DISABLED. See authz.go.
	Authorizer *acl.Authorizer

	// Logger receives the server's logs (nil: none).
	Logger *zap.Logger
	// Registerer receives the server's metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// LogManager opens and deletes the partition logs of one data directory;
// *log.Manager implements it. Open opens or creates; Delete closes and
// removes (a partition not open is not an error).
type LogManager interface {
	Open(topic string, partition int32, cfg log.Config) (*log.Log, error)
	Delete(topic string, partition int32) error
}

// dirLocator is the optional LogManager capability of telling which log
// directory holds a partition (log.Manager.DirOf).
type dirLocator interface {
	DirOf(topic string, partition int32) (string, bool)
}

// orphanLister is the optional LogManager capability of listing the
// partitions found on disk.
type orphanLister interface {
	Existing() ([]log.TopicPartition, error)
}

// DefaultConfig returns Kafka's broker defaults, listening on :9092.
func DefaultConfig() Config {
	return Config{
		Addr:            ":9092",
		MaxRequestBytes: 100 << 20,
		IdleTimeout:     10 * time.Minute,
	}
}

func (c *Config) validate() error {
	switch {
	case c.Metadata == nil:
		return errors.New("kafka: Config.Metadata is required")
	case c.Logs == nil:
		return errors.New("kafka: Config.Logs is required")
	case c.NodeID < 0:
		return fmt.Errorf("kafka: node id %d < 0", c.NodeID)
	case c.MaxRequestBytes < minRequestSize:
		return fmt.Errorf("kafka: socket.request.max.bytes %d too small", c.MaxRequestBytes)
	}
	return c.validateListeners()
}

// Server is a Kafka protocol server for one broker node.
type Server struct {
	cfg     Config
	log     *zap.Logger
	meta    metadata.Store
	logs    LogManager
	parts   *partitionTable
	metrics *metrics
	// replicas runs replication for the hosted partitions; hostedBy maps
	// each *replica.Partition to its *partition.
	replicas *replica.Manager
	hostedBy sync.Map
	// groupCoord and txnCoord are the coordinators, started on first
	// use (lazy_coordinator.go); ib is the inter-broker client the
	// transaction coordinator sends markers with.
	groupCoord lazyCoordinator[group.Config, *group.Coordinator]
	txnCoord   lazyCoordinator[txncoord.Config, *txncoord.Coordinator]
	ib         interBrokerClient
	now        func() time.Time
	fs         vfs.FS
	// warn and errs say recurring warnings and errors (storage failures,
	// bad topic configs met at every metadata change) once per partition
	// or topic and state, with counts.
	warn, errs *repeatlog.Limiter

	ctx    context.Context // cancelled at shutdown: long polls return
	cancel context.CancelFunc

	bound      []*boundListener
	advertised metadata.Broker

	// quotas and connLimit enforce client quotas and connection limits
	// (quotas.go); stopAccept ends waits for a connection slot.
	quotas     *quota.Quotas
	connLimit  *quota.ConnLimiter
	acceptCtx  context.Context
	stopAccept context.CancelFunc

	mu       sync.Mutex
	conns    map[*conn]struct{}
	closing  bool
	connWG   sync.WaitGroup
	inflight sync.WaitGroup // async handlers
	acceptWG sync.WaitGroup
}

// New validates cfg and returns a server that is not yet listening.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.BrokerConfig == nil {
		cfg.BrokerConfig, _ = topicconfig.NewBroker(nil) // live: takes dynamic configs
	}
	lg := cfg.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("kafka: registering metrics: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:     cfg,
		log:     lg,
		meta:    cfg.Metadata,
		logs:    cfg.Logs,
		metrics: m,
		now:     cfg.Now,
		ctx:     ctx,
		cancel:  cancel,
		conns:   map[*conn]struct{}{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.warn = repeatlog.New(lg, zap.WarnLevel, 0, s.now)
	s.errs = repeatlog.New(lg, zap.ErrorLevel, 0, s.now)
	if s.fs = cfg.FS; s.fs == nil {
		s.fs = vfs.OS
	}
	s.acceptCtx, s.stopAccept = context.WithCancel(ctx)
	if err := s.startQuotas(); err != nil {
		cancel()
		return nil, fmt.Errorf("kafka: %w", err)
	}
	s.replicas = s.newReplicaManager()
	// Follow the metadata: register first, then load, so no change is
	// missed (sync is idempotent).
	s.parts = &partitionTable{s: s}
	s.followBrokerConfigs() // before the table's watcher: it re-resolves topics
	s.meta.Watch(func(c metadata.Change) { s.parts.sync(c.After, true) })
	s.parts.sync(s.meta.Image(), false)
	s.followACLs()
	refresh := s.parts.sampleLogSizes
	m.refreshLogSizes.Store(&refresh)
	s.warnOrphanLogs()
	return s, nil
}

// Start listens on every listener, registers this broker (with its
// advertised endpoints) in the metadata, and serves connections in the
// background.
func (s *Server) Start() error { return s.serve(s.cfg.listeners()) }

// Serve is Start with the (single) listener already bound: the --kafka-addr
// shorthand or, with cfg.Listeners, its first listener. It returns once
// serving began.
func (s *Server) Serve(ln net.Listener) error {
	ls := append([]Listener(nil), s.cfg.listeners()...)
	ls[0].Listener = ln
	return s.serve(ls)
}

func (s *Server) serve(ls []Listener) error {
	bound, err := s.bind(ls)
	if err != nil {
		return err
	}
	s.bound = bound
	adv := s.registration()
	if err := s.meta.RegisterBroker(s.ctx, adv); err != nil {
		for _, b := range bound {
			b.ln.Close()
		}
		return fmt.Errorf("kafka: registering broker %d: %w", s.cfg.NodeID, err)
	}
	s.advertised = adv
	for _, b := range bound {
		s.acceptWG.Add(1)
		go s.acceptLoop(b)
		s.log.Info("kafka listener started", zap.String("listener", b.cfg.Name), zap.String("security_protocol", b.cfg.Protocol),
			zap.String("kafka_addr", b.ln.Addr().String()),
			zap.String("advertised", net.JoinHostPort(b.adv.Host, strconv.Itoa(int(b.adv.Port)))), zap.Int32("node_id", s.cfg.NodeID))
	}
	return nil
}

// warnOrphanLogs reports partition directories that no topic owns (a
// delete interrupted by a crash, or a lost metadata file). They are left
// alone: deleting data on a guess is worse than a warning. The logs of
// partitions of known topics this broker is not a replica of (reassigned
// away while it was down) are deleted: the metadata says where they went.
func (s *Server) warnOrphanLogs() {
	ol, ok := s.logs.(orphanLister)
	if !ok {
		return
	}
	found, err := ol.Existing()
	if err != nil {
		s.log.Warn("listing partition logs failed", zap.Error(err))
		return
	}
	if s.meta.Image().ClusterID() == "" {
		return // the metadata is not loaded yet (a quorum replays it later)
	}
	tab := s.parts.load()
	for _, tp := range found {
		ts := tab[tp.Topic]
		if ts == nil || int(tp.Partition) >= len(ts.parts) {
			s.log.Warn("partition log on disk belongs to no topic in the metadata; leaving it alone",
				zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition))
			continue
		}
		if !ts.parts[tp.Partition].hosted {
			// A stray replica: the partition was reassigned away while
			// this broker was down (Kafka's KRaft brokers delete them too).
			s.log.Info("deleting the log of a partition this broker is no longer a replica of",
				zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition))
			if err := s.logs.Delete(tp.Topic, tp.Partition); err != nil {
				s.log.Warn("deleting a stray partition log failed", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Error(err))
			}
		}
	}
}

// BrokerConfig returns the broker's static configuration.
func (s *Server) BrokerConfig() *topicconfig.Broker { return s.cfg.BrokerConfig }

// Metadata returns the metadata store the server serves.
func (s *Server) Metadata() metadata.Store { return s.meta }

// Addr returns the bound address of the first listener (nil before
// Start); see ListenerAddrs for all.
func (s *Server) Addr() net.Addr {
	if len(s.bound) == 0 {
		return nil
	}
	return s.bound[0].ln.Addr()
}

func (s *Server) acceptLoop(l *boundListener) {
	defer s.acceptWG.Done()
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			// Temporary failures (EMFILE...): back off and retry.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff *= 2; backoff > time.Second {
				backoff = time.Second
			}
			s.log.Warn("kafka accept failed", zap.Error(err), zap.Duration("retry_in", backoff))
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		ip, admitted := s.admit(s.acceptCtx, l, nc)
		if !admitted {
			continue
		}
		if l.tlsCfg != nil {
			nc = tls.Server(nc, l.tlsCfg)
		}
		c := newConn(s, l, nc)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			s.releaseConn(ip, admitted)
			return
		}
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.connWG.Done()
			c.serve()
			s.releaseConn(ip, admitted)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Shutdown stops accepting, stops reading new requests, lets the requests
// in flight finish (long polls return early with what they have), writes
// their responses, closes every connection, and closes the producer states
// (final snapshots). Close the LogManager after it. When ctx ends first, the
// remaining connections are closed at once. Safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.closing
	s.closing = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if first {
		s.stopAccept()
		for _, l := range s.bound {
			l.ln.Close()
		}
	}
	s.acceptWG.Wait()
	// Stop reading: the read loops see a deadline error and exit; the
	// writers finish what is queued. Long polls see s.ctx cancelled.
	for _, c := range conns {
		c.nc.SetReadDeadline(time.Now())
	}
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		s.inflight.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		for _, c := range conns {
			c.close()
		}
		<-done
		err = ctx.Err()
	}
	if first {
		s.replicas.Close()
		s.parts.closeAll()
		s.warn.Flush()
		s.errs.Flush()
	}
	return err
}

// storageError passes a log write or read error of a partition on
// (Config.OnStorageError).
func (s *Server) storageError(topic string, partition int32, err error) {
	if err != nil && s.cfg.OnStorageError != nil {
		s.cfg.OnStorageError(topic, partition, err)
	}
}
