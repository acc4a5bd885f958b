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
	"weir/broker/sasl"
	"weir/broker/topicconfig"
	"weir/console"
	"weir/internal/kafkaclient"
)

type brokerFlags struct {
	dataDir        string
	logDirs        []string
	kafkaAddr      string
	adminAddr      string
	advertisedAddr string
	nodeID         int32
	configs        []string
	addScram       []string
	numPartitions  int32
	autoCreate     bool
	shutdownGrace  time.Duration
	registryAddr   string
	registryConfig []string
	console        consoleFlags

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
SIGTERM the broker first hands its leaderships over (controlled shutdown).

A broker whose --node-id is not in --controller-voters joins the cluster as
an observer of the quorum (it follows the metadata without voting; its
--controller-addr must name a host the voters can reach). Voters are
added and removed at runtime (weir cluster add-voter/remove-voter, or
Kafka's kafka-metadata-quorum add-controller/remove-controller); the list
is then only where a starting node looks for the quorum.`,
			Example: `  weir broker --data-dir ./data --kafka-addr 127.0.0.1:9092
  weir broker --data-dir /var/lib/weir --kafka-addr :9092 --advertised-kafka-addr broker1.example:9092 \
      --config log.retention.hours=24 --config num.partitions=3

  # a PLAINTEXT listener on loopback for local tools and TLS for the network
  weir broker --data-dir ./data --config listeners=PLAINTEXT://127.0.0.1:9092,SSL://:9094 \
      --config advertised.listeners=PLAINTEXT://127.0.0.1:9092,SSL://broker1.example:9094 \
      --config ssl.keystore.location=/etc/weir/broker.pem \
      --config ssl.truststore.location=/etc/weir/ca.pem --config ssl.client.auth=required

  # three brokers on one host (nodes 2 and 3 alike, on their own ports)
  weir broker --node-id 1 --data-dir d1 --kafka-addr 127.0.0.1:9092 --controller-addr 127.0.0.1:9093 \
      --controller-voters 1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293 \
      --admin-addr 127.0.0.1:9644 --registry-addr off

  # the registry over TLS with basic auth (Confluent's names), the admin
  # listener over TLS with /metrics and the health checks left open
  weir broker --data-dir ./data --admin-addr https://:9644 \
      --config ssl.keystore.location=/etc/weir/broker.pem \
      --config listener.name.admin.authentication.method=BASIC \
      --config listener.name.admin.authentication.users.file=/etc/weir/users \
      --config listener.name.admin.authentication.skip.paths=/metrics,/healthz,/readyz \
      --registry-config listeners=https://:8081 \
      --registry-config ssl.keystore.location=/etc/weir/registry.pem \
      --registry-config authentication.method=BASIC \
      --registry-config authentication.users.file=/etc/weir/users \
      --registry-config auth.restricted.roles=reader`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				return runBroker(cmd, g.Logger(), f)
			},
		}
		fl := cmd.Flags()
		fl.StringVar(&f.dataDir, "data-dir", "", "directory holding the partition logs and cluster metadata (required)")
		fl.StringArrayVar(&f.logDirs, "log-dir", nil, "directory holding the partition logs (log.dirs; default: the data directory); repeatable or comma-separated for several, new partitions go to the one holding the fewest and a failed or full one takes only its own partitions offline. On their own disks, a full log disk leaves the cluster metadata writable")
		fl.StringVar(&f.kafkaAddr, "kafka-addr", ":9092", "Kafka listener address host:port (port 0 picks a free port): shorthand for --config listeners=PLAINTEXT://host:port")
		fl.StringVar(&f.adminAddr, "admin-addr", admin.DefaultAddr, "admin HTTP listener (/metrics, /healthz, /readyz): host:port, or https://host:port for TLS with the ssl.* settings (listener.name.admin.ssl.* overrides); basic auth with listener.name.admin.authentication.*")
		fl.StringVar(&f.advertisedAddr, "advertised-kafka-addr", "", "host:port given to clients in Metadata (default: the listener address)")
		fl.Int32Var(&f.nodeID, "node-id", 0, "this broker's node id")
		fl.StringArrayVar(&f.configs, "config", nil, "broker config NAME=VALUE with Kafka's names (num.partitions, log.retention.hours, message.max.bytes, listeners, ssl.keystore.location, ...); repeatable")
		fl.StringArrayVar(&f.addScram, "add-scram", nil, `a SCRAM credential stored when the data directory is new, as kafka-storage format --add-scram: 'SCRAM-SHA-512=[name=admin,password=...]' (iterations=N optional); repeatable`)
		fl.Int32Var(&f.numPartitions, "num-partitions", 1, "partitions of auto-created topics (num.partitions)")
		fl.BoolVar(&f.autoCreate, "auto-create-topics", true, "create unknown topics on Metadata requests (auto.create.topics.enable)")
		fl.DurationVar(&f.shutdownGrace, "shutdown-timeout", 30*time.Second, "how long a clean shutdown may take before connections are cut")
		fl.StringVar(&f.registryAddr, "registry-addr", node.DefaultRegistryAddr, `schema registry HTTP listener (Confluent Schema Registry API): host:port or https://host:port; "" or "off" disables it`)
		fl.StringArrayVar(&f.registryConfig, "registry-config", nil, "schema registry setting NAME=VALUE with Confluent Schema Registry's names (listeners=https://:8081, ssl.keystore.location, ssl.truststore.location, ssl.client.authentication, authentication.method=BASIC, authentication.roles, auth.restricted.roles, authentication.skip.paths, authentication.users.file); repeatable")
		fl.StringVar(&f.controllerAddr, "controller-addr", ":9093", "controller (Raft) listener address host:port, with --controller-voters")
		fl.StringVar(&f.controllerVoters, "controller-voters", "", "the controller quorum, NODE_ID@HOST:PORT,... (empty: a single-node cluster)")
		fl.DurationVar(&f.sessionTimeout, "broker-session-timeout", 2*time.Second, "with --controller-voters: a broker silent this long is fenced and loses its leaderships (broker.session.timeout.ms)")
		fl.DurationVar(&f.heartbeat, "broker-heartbeat-interval", 250*time.Millisecond, "with --controller-voters: how often this broker heartbeats to the controller (broker.heartbeat.interval.ms)")
		addConsoleFlags(fl, &f.console)
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
	regConfigs := map[string]string{}
	for _, kv := range f.registryConfig {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("--registry-config %q: want NAME=VALUE", kv)
		}
		regConfigs[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	kafkaAddr, advertised := f.kafkaAddr, f.advertisedAddr
	if _, ok := static["listeners"]; ok {
		// Kafka's listeners replace the shorthand flags.
		if cmd.Flags().Changed("kafka-addr") || cmd.Flags().Changed("advertised-kafka-addr") {
			return fmt.Errorf("--config listeners=... replaces --kafka-addr and --advertised-kafka-addr: use one or the other (advertised.listeners for the advertised addresses)")
		}
		kafkaAddr, advertised = "", ""
	}
	cfg := node.Config{
		NodeID: f.nodeID, DataDir: f.dataDir, LogDir: strings.Join(f.logDirs, ","),
		KafkaAddr: kafkaAddr, AdvertisedAddr: advertised, AdminAddr: f.adminAddr,
		RegistryAddr: f.registryAddr, RegistryAddrIsDefault: !cmd.Flags().Changed("registry-addr"), RegistryConfigs: regConfigs,
		BrokerConfigs: static, Logger: lg,
	}
	for _, a := range f.addScram {
		u, err := sasl.ParseAddScram(a)
		if err != nil {
			return err
		}
		cfg.AddScram = append(cfg.AddScram, u)
	}
	if strings.TrimSpace(f.controllerVoters) != "" {
		voters, err := controller.ParseVoters(f.controllerVoters)
		if err != nil {
			return fmt.Errorf("--controller-voters: %w", err)
		}
		ctrlAddr := f.controllerAddr
		if _, ok := static["controller.listener.names"]; ok && !cmd.Flags().Changed("controller-addr") {
			ctrlAddr = "" // the controller listener of listeners
		}
		cfg.Controller = &node.ControllerConfig{Addr: ctrlAddr, Voters: voters,
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
	if adm := n.Admin(); adm != nil {
		con, err := startConsole(&f.console, adm, kafkaclient.Options{Brokers: []string{n.KafkaAddr()}},
			kafkaclient.Registry{}.WithURL(n.RegistryURL()), nil, lg)
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), f.shutdownGrace)
			defer cancel()
			return fmt.Errorf("%w (shutdown: %v)", err, n.Shutdown(sctx))
		}
		if con != nil {
			defer con.Close()
			lg.Info("web console", zap.String("addr", adm.Addr()), zap.String("path", console.Prefix), zap.Bool("read_only", f.console.readOnly))
		}
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
