package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"weir/broker/admin"
	"weir/broker/controller"
	"weir/broker/kafka"
	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/metadata"
	"weir/broker/topicconfig"
	"weir/broker/txn"
)

type brokerFlags struct {
	dataDir        string
	kafkaAddr      string
	adminAddr      string
	advertisedAddr string
	nodeID         int32
	configs        []string
	numPartitions  int32
	autoCreate     bool
	shutdownGrace  time.Duration
	registryAddr   string

	controllerAddr   string
	controllerVoters string
	sessionTimeout   time.Duration
	heartbeat        time.Duration
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		f := &brokerFlags{}
		cmd := &cobra.Command{
			Use:   "broker",
			Short: "Run a Kafka-compatible broker node in the foreground",
			Long: `Run one weir broker node in the foreground until SIGINT or SIGTERM.

With no controller voters the node is a single-node cluster and its own
controller. Topics, partitions and their configs live in the data
directory; clients connect to --kafka-addr with any Kafka client.
/metrics, /healthz and /readyz are served on --admin-addr.

With --controller-voters the node is a broker of a replicated cluster and
a voter of its Raft controller quorum (every broker of the list runs one):
each broker is started with its own --node-id, the same voter list, and
--controller-addr to listen on for Raft and controller requests. Partitions
are replicated (default.replication.factor, or the topic's replication
factor); a broker that stops heartbeating for --broker-session-timeout is
fenced and its partitions get new leaders from their in-sync replicas. On
SIGTERM the broker first hands its leaderships over (controlled shutdown).`,
			Example: `  weir broker --data-dir ./data --kafka-addr 127.0.0.1:9092
  weir broker --data-dir /var/lib/weir --kafka-addr :9092 --advertised-kafka-addr broker1.example:9092 \
      --config log.retention.hours=24 --config num.partitions=3

  # three brokers on one host (nodes 2 and 3 alike, on their own ports)
  weir broker --node-id 1 --data-dir d1 --kafka-addr 127.0.0.1:9092 --controller-addr 127.0.0.1:9093 \
      --controller-voters 1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293 \
      --admin-addr 127.0.0.1:9644 --registry-addr off`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				return runBroker(cmd, g.Logger(), f)
			},
		}
		fl := cmd.Flags()
		fl.StringVar(&f.dataDir, "data-dir", "", "directory holding the partition logs and cluster metadata (required)")
		fl.StringVar(&f.kafkaAddr, "kafka-addr", ":9092", "Kafka listener address host:port (port 0 picks a free port)")
		fl.StringVar(&f.adminAddr, "admin-addr", admin.DefaultAddr, "admin HTTP listener (/metrics, /healthz, /readyz)")
		fl.StringVar(&f.advertisedAddr, "advertised-kafka-addr", "", "host:port given to clients in Metadata (default: the listener address)")
		fl.Int32Var(&f.nodeID, "node-id", 0, "this broker's node id")
		fl.StringArrayVar(&f.configs, "config", nil, "broker config NAME=VALUE with Kafka's names (num.partitions, log.retention.hours, message.max.bytes, ...); repeatable")
		fl.Int32Var(&f.numPartitions, "num-partitions", 1, "partitions of auto-created topics (num.partitions)")
		fl.BoolVar(&f.autoCreate, "auto-create-topics", true, "create unknown topics on Metadata requests (auto.create.topics.enable)")
		fl.DurationVar(&f.shutdownGrace, "shutdown-timeout", 30*time.Second, "how long a clean shutdown may take before connections are cut")
		fl.StringVar(&f.registryAddr, "registry-addr", DefaultRegistryAddr, registryAddrHelp)
		fl.StringVar(&f.controllerAddr, "controller-addr", ":9093", "controller (Raft) listener address host:port, with --controller-voters")
		fl.StringVar(&f.controllerVoters, "controller-voters", "", "the controller quorum, NODE_ID@HOST:PORT,... (empty: a single-node cluster)")
		fl.DurationVar(&f.sessionTimeout, "broker-session-timeout", 2*time.Second, "with --controller-voters: a broker silent this long is fenced and loses its leaderships (broker.session.timeout.ms)")
		fl.DurationVar(&f.heartbeat, "broker-heartbeat-interval", 250*time.Millisecond, "with --controller-voters: how often this broker heartbeats to the controller (broker.heartbeat.interval.ms)")
		_ = cmd.MarkFlagRequired("data-dir")
		return cmd
	})
}

func runBroker(cmd *cobra.Command, lg *zap.Logger, f *brokerFlags) error {
	static := map[string]string{}
	if cmd.Flags().Changed("num-partitions") {
		static[topicconfig.BrokerNumPartitions] = strconv.Itoa(int(f.numPartitions))
	}
	if cmd.Flags().Changed("auto-create-topics") {
		static[topicconfig.BrokerAutoCreateTopicsEnable] = strconv.FormatBool(f.autoCreate)
	}
	for _, kv := range f.configs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--config %q: want NAME=VALUE", kv)
		}
		static[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	bcfg, err := topicconfig.NewBroker(static)
	if err != nil {
		return fmt.Errorf("broker config: %w", err)
	}

	ctx := context.Background()
	var (
		meta      metadata.Store
		node      *controller.Node
		clusterID string
	)
	if strings.TrimSpace(f.controllerVoters) == "" {
		fs, err := metadata.OpenFile(f.dataDir, lg.Named("metadata"))
		if err != nil {
			return err
		}
		defer fs.Close()
		if clusterID, err = fs.InitCluster(ctx, metadata.NewUUID().String()); err != nil {
			return fmt.Errorf("initializing cluster metadata in %s: %w", f.dataDir, err)
		}
		meta = fs
	} else {
		voters, err := controller.ParseVoters(f.controllerVoters)
		if err != nil {
			return fmt.Errorf("--controller-voters: %w", err)
		}
		node, err = controller.Start(controller.Config{
			NodeID: f.nodeID, Addr: f.controllerAddr, Voters: voters,
			Dir: filepath.Join(f.dataDir, "controller"), BrokerConfig: bcfg,
			SessionTimeout: f.sessionTimeout, HeartbeatInterval: f.heartbeat,
			Logger: lg.Named("controller"),
		})
		if err != nil {
			return err
		}
		defer node.Close()
		lg.Info("waiting for the controller quorum", zap.String("voters", f.controllerVoters))
		if err := waitQuorum(node, lg); err != nil {
			return err
		}
		meta, clusterID = node, node.Image().ClusterID()
	}

	logs, err := log.NewManager(vfs.OS, f.dataDir, log.ManagerOptions{
		Logger:                 lg.Named("log"),
		RetentionCheckInterval: bcfg.RetentionCheckInterval(),
	})
	if err != nil {
		return err
	}
	defer logs.Close()

	reg := prometheus.NewRegistry()
	var ready atomic.Bool
	adm, err := admin.New(admin.Config{
		Addr:     f.adminAddr,
		Registry: reg,
		Logger:   lg.Named("admin"),
		Ready: func() error {
			if !ready.Load() {
				return fmt.Errorf("kafka listener not started")
			}
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("admin listener %s: %w", f.adminAddr, err)
	}
	adm.Start()

	kcfg := kafka.DefaultConfig()
	kcfg.NodeID = f.nodeID
	kcfg.Addr = f.kafkaAddr
	kcfg.AdvertisedAddr = f.advertisedAddr
	kcfg.Metadata = meta
	kcfg.Logs = logs
	kcfg.BrokerConfig = bcfg
	kcfg.Logger = lg.Named("kafka")
	kcfg.Registerer = reg
	srv, err := kafka.New(kcfg)
	if err == nil && node != nil {
		// Producer ids are reserved in blocks through the controller
		// quorum, so no two brokers (and no restart) hand out one twice.
		err = srv.SetProducerIDStore(node)
	} else if err == nil {
		// Producer ids are reserved in blocks persisted in the data
		// directory, so an id is never handed out twice across restarts.
		var pids *txn.FileBlockStore
		if pids, err = txn.OpenFileBlockStore(vfs.OS, f.dataDir); err == nil {
			err = srv.SetProducerIDStore(pids)
		}
	}
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = adm.Shutdown(sctx)
		return err
	}
	stopRegistry, _, err := startRegistry(lg.Named("registry"), f.registryAddr, srv.Addr().String(), meta, cmd.Flags().Changed("registry-addr"))
	if err != nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = adm.Shutdown(sctx)
		return err
	}
	ready.Store(true)
	lg.Info("broker started", zap.String("kafka_addr", srv.Addr().String()), zap.String("admin_addr", adm.Addr()),
		zap.String("data_dir", f.dataDir), zap.Int32("node_id", f.nodeID), zap.String("cluster_id", clusterID))

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	s := <-sig
	lg.Info("shutting down", zap.String("signal", s.String()))
	ready.Store(false)

	sctx, cancel := context.WithTimeout(ctx, f.shutdownGrace)
	defer cancel()
	var firstErr error
	if node != nil {
		// Controlled shutdown: leaderships move to other ISR members
		// before this broker stops serving them.
		hctx, hcancel := context.WithTimeout(sctx, min(f.shutdownGrace/2, 10*time.Second))
		if err := node.Shutdown(hctx); err != nil {
			lg.Warn("controlled shutdown incomplete; stopping anyway", zap.Error(err))
		}
		hcancel()
	}
	if err := stopRegistry(sctx); err != nil {
		firstErr = fmt.Errorf("schema registry shutdown: %w", err)
	}
	if err := srv.Shutdown(sctx); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("kafka shutdown: %w", err)
	}
	if err := adm.Shutdown(sctx); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("admin shutdown: %w", err)
	}
	if node != nil {
		if err := node.Close(); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("controller shutdown: %w", err)
		}
	}
	if err := logs.Close(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("closing partition logs: %w", err)
	}
	if c, ok := meta.(interface{ Close() error }); ok && node == nil {
		if err := c.Close(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	lg.Info("broker stopped")
	return firstErr
}

// waitQuorum waits until the controller node has caught up with the
// quorum (a leader exists and this node applied what it committed),
// logging while it waits; SIGINT or SIGTERM give up.
func waitQuorum(node *controller.Node, lg *zap.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := node.WaitReady(wctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while waiting for the controller quorum")
		}
		lg.Warn("still waiting for the controller quorum (are the other voters running?)", zap.Int32("controller_id", node.ControllerID()))
	}
}
