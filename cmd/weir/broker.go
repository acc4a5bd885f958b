package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"weir/broker/admin"
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
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		f := &brokerFlags{}
		cmd := &cobra.Command{
			Use:   "broker",
			Short: "Run a single-node Kafka-compatible broker in the foreground",
			Long: `Run one weir broker node in the foreground until SIGINT or SIGTERM.

With no controller voters the node is a single-node cluster and its own
controller. Topics, partitions and their configs live in the data
directory; clients connect to --kafka-addr with any Kafka client.
/metrics, /healthz and /readyz are served on --admin-addr.`,
			Example: `  weir broker --data-dir ./data --kafka-addr 127.0.0.1:9092
  weir broker --data-dir /var/lib/weir --kafka-addr :9092 --advertised-kafka-addr broker1.example:9092 \
      --config log.retention.hours=24 --config num.partitions=3`,
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

	meta, err := metadata.OpenFile(f.dataDir, lg.Named("metadata"))
	if err != nil {
		return err
	}
	defer meta.Close()
	ctx := context.Background()
	clusterID, err := meta.InitCluster(ctx, metadata.NewUUID().String())
	if err != nil {
		return fmt.Errorf("initializing cluster metadata in %s: %w", f.dataDir, err)
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
	if err == nil {
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
	if err := stopRegistry(sctx); err != nil {
		firstErr = fmt.Errorf("schema registry shutdown: %w", err)
	}
	if err := srv.Shutdown(sctx); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("kafka shutdown: %w", err)
	}
	if err := adm.Shutdown(sctx); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("admin shutdown: %w", err)
	}
	if err := logs.Close(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("closing partition logs: %w", err)
	}
	if err := meta.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	lg.Info("broker stopped")
	return firstErr
}
