package kafka

// Wiring of the transaction coordinator (weir/broker/txncoord) into the
// server, as group_support.go wires the group coordinator.
//
// The coordinator is created on the first transactional request
// (FindCoordinator for a transactional id, InitProducerId, ...): it loads
// __transaction_state when the topic exists, or creates it (compacted,
// transaction.state.log.num.partitions partitions, replication factor
// transaction.state.log.replication.factor capped by the live brokers,
// min.insync.replicas transaction.state.log.min.isr capped by that factor,
// segment.bytes transaction.state.log.segment.bytes) when a transactional
// id first needs it. Its settings are broker configs with Kafka's names
// (transaction.max.timeout.ms, transactional.id.expiration.ms,
// transaction.abort.timed.out.transaction.cleanup.interval.ms,
// transaction.remove.expired.transaction.cleanup.interval.ms and the
// transaction.state.log.* ones), or set with SetTxnConfig. Producer ids
// come from the allocator InitProducerId uses for idempotent producers.
//
// Its Storage is the state topic's partition logs (appendInternal /
// replayInternal, as for __consumer_offsets); a partition is loaded when
// this broker becomes its leader (coordinator epoch = leader epoch) and
// unloaded when it stops leading. Its MarkerWriter writes each marker at
// the partition's leader: WriteTxnMarkersLocal here, WriteTxnMarkers
// (key 27) over the inter-broker listener elsewhere (interBroker).

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/metadata"
	"weir/broker/replica"
	"weir/broker/txncoord"
	"weir/internal/kafkaclient"
)

// interBrokerClient is the server's client of the inter-broker
// listeners (interBrokerRequest), made on first use and closed with the
// transaction coordinator.
type interBrokerClient struct {
	once sync.Once
	mu   sync.Mutex
	cl   *kgo.Client
	err  error
}

// ErrTxnsStarted is returned by SetTxnConfig after the coordinator
// started.
var ErrTxnsStarted = errors.New("kafka: transaction coordinator already started")

// SetTxnConfig sets the transaction coordinator's configuration,
// overriding the broker configs; call it before the first transactional
// request.
func (s *Server) SetTxnConfig(cfg txncoord.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return s.txnCoord.setConfig(cfg, ErrTxnsStarted)
}

// txns returns the server's transaction coordinator, starting it on
// first use.
func (s *Server) txns() (*txncoord.Coordinator, error) {
	return s.txnCoord.get(s, "transaction coordinator", txncoord.ErrClosed, func(set *txncoord.Config) (*txncoord.Coordinator, error) {
		cfg := s.txnConfigFromBroker()
		if set != nil {
			cfg = *set
		}
		newPID := func() (int64, error) {
			a, err := s.producerIDs()
			if err != nil {
				return 0, err
			}
			return a.Next()
		}
		st := txnStorage{s, cfg}
		return txncoord.NewCoordinator(cfg, st, st, newPID, txncoord.Options{
			Now: s.now, Logger: s.log.Named("txncoord"),
		})
	}, func(*txncoord.Coordinator) {
		s.ib.mu.Lock()
		if s.ib.cl != nil {
			s.ib.cl.Close()
		}
		s.ib.mu.Unlock()
	})
}

// txnConfigFromBroker reads the coordinator's settings from the broker
// configuration (Kafka's defaults for what it does not set).
func (s *Server) txnConfigFromBroker() txncoord.Config {
	cfg := txncoord.DefaultConfig()
	num := func(name string, set func(int64)) { s.brokerSetting("transaction", name, set) }
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	num(txncoord.SettingMaxTimeoutMs, func(n int64) { cfg.MaxTimeout = ms(n) })
	num(txncoord.SettingIDExpirationMs, func(n int64) { cfg.IDExpiration = ms(n) })
	num(txncoord.SettingAbortTimedOutIntervalMs, func(n int64) { cfg.AbortTimedOutInterval = ms(n) })
	num(txncoord.SettingRemoveExpiredIntervalMs, func(n int64) { cfg.RemoveExpiredInterval = ms(n) })
	num(txncoord.SettingStateLogNumPartitions, func(n int64) { cfg.StateLogPartitions = int32(n) })
	num(txncoord.SettingStateLogReplicationFactor, func(n int64) { cfg.StateLogReplicationFactor = int16(n) })
	num(txncoord.SettingStateLogMinISR, func(n int64) { cfg.StateLogMinISR = int32(n) })
	num(txncoord.SettingStateLogSegmentBytes, func(n int64) { cfg.StateLogSegmentBytes = n })
	if err := cfg.Validate(); err != nil {
		s.log.Warn("ignoring bad transaction settings: using Kafka's defaults", zap.Error(err))
		return txncoord.DefaultConfig()
	}
	return cfg
}

// txnStorage is __transaction_state over this server's logs, and the
// marker writer.
type txnStorage struct {
	s   *Server
	cfg txncoord.Config
}

func (t txnStorage) Partitions() int32 {
	if tp, ok := t.s.meta.Image().Topic(txncoord.StateTopic); ok {
		return int32(len(tp.Partitions))
	}
	return 0
}

func (t txnStorage) CreateTopic(n int32) (int32, error) {
	s, cfg := t.s, t.cfg
	rf := min(cfg.StateLogReplicationFactor, int16(max(len(s.meta.Image().LiveBrokers()), 1)))
	tp, err := s.meta.CreateTopic(s.ctx, metadata.TopicSpec{
		Name:              txncoord.StateTopic,
		Partitions:        n,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"unclean.leader.election.enable": "false",
			"min.insync.replicas":            strconv.Itoa(int(min(cfg.StateLogMinISR, int32(rf)))),
			"segment.bytes":                  strconv.FormatInt(cfg.StateLogSegmentBytes, 10),
		},
	})
	switch {
	case err == nil:
		s.log.Info("created the transaction state topic", zap.String("topic", txncoord.StateTopic), zap.Int32("partitions", n), zap.Int16("replication_factor", rf))
		return int32(len(tp.Partitions)), nil
	case errors.Is(err, metadata.ErrTopicExists):
		// Another broker created it: wait for this broker's image.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if n := t.Partitions(); n > 0 {
				return n, nil
			}
		}
	}
	return 0, err
}

func (t txnStorage) Append(p int32, batch []byte) error {
	return t.s.appendInternal(txncoord.StateTopic, p, batch, 5*time.Second)
}

func (t txnStorage) Replay(p int32, fn func([]byte) error) error {
	return t.s.replayInternal(txncoord.StateTopic, p, fn)
}

// LeaderEpoch reports whether this broker leads partition p of the state
// topic, and in which epoch (txncoord.PartitionLeader).
func (t txnStorage) LeaderEpoch(p int32) (int32, bool) {
	_, part := t.s.parts.lookup(txncoord.StateTopic, p)
	if part == nil || part.rep == nil {
		return 0, false
	}
	role, _, epoch := part.rep.State()
	return epoch, role == replica.RoleLeader
}

// markerAttemptTimeout bounds one WriteTxnMarkers attempt (Kafka's
// request.timeout.ms).
const markerAttemptTimeout = 30 * time.Second

// WriteMarkers writes mk's marker to each partition at its leader, one
// attempt (txncoord.MarkerWriter). Partitions of topics that no longer
// exist count as written.
func (t txnStorage) WriteMarkers(ctx context.Context, mk txncoord.Markers, parts []txncoord.TP) map[txncoord.TP]*kerr.Error {
	s := t.s
	img := s.meta.Image()
	out := map[txncoord.TP]*kerr.Error{}
	byLeader := map[int32][]txncoord.TP{}
	for _, tp := range parts {
		mp, ok := img.Partition(tp.Topic, tp.Partition)
		switch {
		case !ok:
			s.log.Info("skipping the transaction marker of a partition that no longer exists",
				zap.String("transactional_id", mk.TransactionalID), zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition))
		case mp.Leader < 0:
			out[tp] = kerr.NotLeaderForPartition
		default:
			byLeader[mp.Leader] = append(byLeader[mp.Leader], tp)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, markerAttemptTimeout)
	defer cancel()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for leader, tps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := s.writeMarkersAt(ctx, leader, mk, tps)
			mu.Lock()
			defer mu.Unlock()
			for _, tp := range tps {
				if e, ok := res[tp]; !ok {
					out[tp] = kerr.UnknownServerError // not answered: retry
				} else if e != nil {
					out[tp] = e
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// writeMarkersAt sends one WriteTxnMarkers to broker leader (this one:
// WriteTxnMarkersLocal) and returns each partition's error.
func (s *Server) writeMarkersAt(ctx context.Context, leader int32, mk txncoord.Markers, tps []txncoord.TP) map[txncoord.TP]*kerr.Error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = mk.ProducerID, mk.ProducerEpoch, mk.Commit, mk.CoordinatorEpoch
	for i := 0; i < len(tps); {
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic = tps[i].Topic
		for ; i < len(tps) && tps[i].Topic == mt.Topic; i++ {
			mt.Partitions = append(mt.Partitions, tps[i].Partition)
		}
		m.Topics = append(m.Topics, mt)
	}
	req.Markers = append(req.Markers, m)
	out := map[txncoord.TP]*kerr.Error{}
	var resp *kmsg.WriteTxnMarkersResponse
	if leader == s.cfg.NodeID {
		resp = s.WriteTxnMarkersLocal(ctx, req)
	} else {
		r, err := s.interBrokerRequest(ctx, leader, req)
		if err != nil {
			s.log.Debug("sending transaction markers failed", zap.Int32("leader", leader), zap.Error(err))
			for _, tp := range tps {
				out[tp] = kerr.NetworkException
			}
			return out
		}
		resp = r.(*kmsg.WriteTxnMarkersResponse)
	}
	for _, rm := range resp.Markers {
		if rm.ProducerID != mk.ProducerID {
			continue
		}
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				out[txncoord.TP{Topic: rt.Topic, Partition: rp.Partition}] = kerr.TypedErrorForCode(rp.ErrorCode)
			}
		}
	}
	return out
}

// interBrokerRequest sends req to broker id over the inter-broker
// listener (its registered address, TLS as the replica fetchers use it:
// Config.ReplicaDial and Config.ReplicaTLS; like them, no SASL) and
// returns the response. The client (franz-go, one per server) learns
// the brokers from the Metadata of that listener.
func (s *Server) interBrokerRequest(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	ib := &s.ib
	ib.once.Do(func() {
		var seeds []string
		for _, b := range s.meta.Image().LiveBrokers() {
			seeds = append(seeds, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		}
		dial := s.cfg.ReplicaDial
		if dial == nil {
			dial = func(ctx context.Context, addr string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", addr)
			}
		}
		tlsCfg := s.cfg.ReplicaTLS
		hs := s.cfg.HandshakeTimeout
		if hs <= 0 {
			hs = 10 * time.Second
		}
		cl, err := kafkaclient.New(kafkaclient.Options{
			Brokers:  seeds,
			ClientID: "weir-broker-" + strconv.Itoa(int(s.cfg.NodeID)),
			Extra: []kgo.Opt{kgo.Dialer(func(ctx context.Context, _, addr string) (net.Conn, error) {
				nc, err := dial(ctx, addr)
				if err != nil || tlsCfg == nil {
					return nc, err
				}
				return tlsCfg.DialHandshake(ctx, nc, addr, hs, func(err error) {
					s.log.Warn("inter-broker connection refused: TLS handshake failed", zap.String("addr", addr), zap.Error(err))
				})
			})},
		})
		ib.mu.Lock()
		ib.cl, ib.err = cl, err
		ib.mu.Unlock()
	})
	ib.mu.Lock()
	cl, err := ib.cl, ib.err
	ib.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if cl == nil {
		return nil, txncoord.ErrClosed
	}
	return cl.Broker(int(id)).Request(ctx, req)
}

// followTxnLeadership loads or unloads a state partition's transactional
// ids to match this broker's current role for it (decided when it runs,
// under loadMu, so the order of the goroutines does not matter).
func (s *Server) followTxnLeadership(rp *replica.Partition) {
	// Wait until the partition table holding it is published (Replay
	// looks it up).
	s.waitPartsPublished()
	coord, ok := s.txnCoord.running()
	if !ok {
		role, _, _ := rp.State()
		if role != replica.RoleLeader {
			return
		}
		// Leading a state partition: start the coordinator now (it
		// loads what this broker leads), so transactions left preparing
		// by the previous leader get their markers without waiting for
		// a client.
		var err error
		if coord, err = s.txns(); err != nil {
			return
		}
	}
	if coord.Partitions() == 0 {
		// The coordinator is creating the state topic (ensure): when
		// it starts it loads every partition this broker leads then,
		// this one included (its role is decided already).
		return
	}
	s.txnCoord.follow(s, rp, "loading the transactions of a led state partition failed",
		func(p, epoch int32) bool { loaded, ok := coord.Serving(p); return ok && loaded == epoch },
		coord.Load, coord.Unload)
}

// txnCoordinator returns the broker coordinating a transactional id: the
// leader of its __transaction_state partition (created on first use).
func (s *Server) txnCoordinator(coord *txncoord.Coordinator, id string) (metadata.Broker, *kerr.Error) {
	if id == "" {
		return metadata.Broker{}, kerr.InvalidRequest
	}
	img := s.meta.Image()
	t, ok := img.Topic(txncoord.StateTopic)
	if !ok {
		if e := coord.CoordinatorFor(id); e != nil && e != kerr.NotCoordinator {
			return metadata.Broker{}, e
		}
		img = s.meta.Image()
		if t, ok = img.Topic(txncoord.StateTopic); !ok {
			return metadata.Broker{}, kerr.CoordinatorNotAvailable
		}
	}
	p := txncoord.PartitionFor(id, int32(len(t.Partitions)))
	leader := t.Partitions[p].Leader
	if leader == s.cfg.NodeID {
		switch e := coord.CoordinatorFor(id); e {
		case nil:
			return s.advertised, nil
		case kerr.NotCoordinator:
			if _, part := s.parts.lookup(txncoord.StateTopic, p); part != nil && part.rep != nil {
				go s.followTxnLeadership(part.rep)
			}
			return metadata.Broker{}, kerr.CoordinatorLoadInProgress
		default:
			return metadata.Broker{}, e
		}
	}
	if b, ok := img.Broker(leader); ok && !b.Fenced {
		return b, nil
	}
	return metadata.Broker{}, kerr.CoordinatorNotAvailable
}
