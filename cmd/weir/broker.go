package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"weir/broker/admin"
	"weir/broker/controller"
	"weir/broker/node"
	"weir/broker/topicconfig"
)

type brokerFlags struct {
	dataDir        string
	logDir         string
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
		fl.StringVar(&f.logDir, "log-dir", "", "directory holding the partition logs (log.dirs; default: the data directory). On its own disk, a full log disk leaves the cluster metadata writable")
		fl.StringVar(&f.kafkaAddr, "kafka-addr", ":9092", "Kafka listener address host:port (port 0 picks a free port)")
		fl.StringVar(&f.adminAddr, "admin-addr", admin.DefaultAddr, "admin HTTP listener (/metrics, /healthz, /readyz)")
		fl.StringVar(&f.advertisedAddr, "advertised-kafka-addr", "", "host:port given to clients in Metadata (default: the listener address)")
		fl.Int32Var(&f.nodeID, "node-id", 0, "this broker's node id")
		fl.StringArrayVar(&f.configs, "config", nil, "broker config NAME=VALUE with Kafka's names (num.partitions, log.retention.hours, message.max.bytes, ...); repeatable")
		fl.Int32Var(&f.numPartitions, "num-partitions", 1, "partitions of auto-created topics (num.partitions)")
		fl.BoolVar(&f.autoCreate, "auto-create-topics", true, "create unknown topics on Metadata requests (auto.create.topics.enable)")
		fl.DurationVar(&f.shutdownGrace, "shutdown-timeout", 30*time.Second, "how long a clean shutdown may take before connections are cut")
		fl.StringVar(&f.registryAddr, "registry-addr", node.DefaultRegistryAddr, `schema registry HTTP listener (Confluent Schema Registry API); "" or "off" disables it`)
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
	cfg := node.Config{
		NodeID: f.nodeID, DataDir: f.dataDir, LogDir: f.logDir,
		KafkaAddr: f.kafkaAddr, AdvertisedAddr: f.advertisedAddr, AdminAddr: f.adminAddr,
		RegistryAddr: f.registryAddr, RegistryAddrIsDefault: !cmd.Flags().Changed("registry-addr"),
		BrokerConfigs: static, Logger: lg,
	}
	if strings.TrimSpace(f.controllerVoters) != "" {
		voters, err := controller.ParseVoters(f.controllerVoters)
		if err != nil {
			return fmt.Errorf("--controller-voters: %w", err)
		}
		cfg.Controller = &node.ControllerConfig{Addr: f.controllerAddr, Voters: voters,
			SessionTimeout: f.sessionTimeout, HeartbeatInterval: f.heartbeat}
		lg.Info("waiting for the controller quorum", zap.String("voters", f.controllerVoters))
	}
	// SIGINT or SIGTERM while waiting for the quorum give up.
	startCtx, stopStart := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	n, err := node.Start(startCtx, cfg)
	stopStart()
	if err != nil {
		return err
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	s := <-sig
	lg.Info("shutting down", zap.String("signal", s.String()))
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownGrace)
	defer cancel()
	return n.Shutdown(sctx)
}
