package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"weir/broker/node"
	"weir/connectors/stdout"
	"weir/internal/kafkaclient"
	"weir/pipelines"

	// Connector kinds weir ships; each registers itself in
	// connectors.Default.
	_ "weir/connectors/elasticsearch"
	_ "weir/connectors/file"
	_ "weir/connectors/filesink"
	_ "weir/connectors/http"
	_ "weir/connectors/kafkasink"
	_ "weir/connectors/mysql"
	_ "weir/connectors/syslog"
)

type runFlags struct {
	pipelineFlags
	status       string
	pollInterval time.Duration
	summaryEvery time.Duration
	group        string
	workerID     string
	sessionTO    time.Duration
	adminAddr    string
	adminConfig  []string
	console      consoleFlags
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		f := &runFlags{}
		cmd := &cobra.Command{
			Use:   "run [PATH...]",
			Short: "Run the pipelines declared in HCL files: broker, registry, sources, streams and sinks",
			Long: `Run the appliance: load the pipeline files (a folder means all its *.hcl
files), start the embedded single-node broker and schema registry (unless the
broker block names external brokers), create or update the declared topics
and register their schemas, then run every source, stream and sink.

On a terminal a live status line per component shows records/s in and out,
lag and errors. Editing a pipeline file (or sending SIGHUP) reloads it: only
the components whose settings changed restart, each with a final flush and
offset commit, so no record is lost or repeated. A file with errors is
reported and the running pipelines are kept. Ctrl-C (SIGINT) or SIGTERM stops
everything cleanly, committing offsets.`,
			Example: `  weir run examples/quickstart
  weir run pipelines/ -var env=prod -var-file prod.hcl`,
			RunE: func(cmd *cobra.Command, args []string) error {
				return runPipelines(cmd, g, f, args)
			},
		}
		f.add(cmd)
		cmd.Flags().StringVar(&f.status, "status", "auto", "live status lines: auto (on a terminal), on, off")
		cmd.Flags().DurationVar(&f.pollInterval, "watch-interval", time.Second, "how often pipeline files are checked for changes (0 disables; SIGHUP always reloads)")
		cmd.Flags().DurationVar(&f.summaryEvery, "summary-interval", time.Minute, "how often the records-per-component summary is logged at info when records moved (0 disables; one is always logged on exit)")
		cmd.Flags().StringVar(&f.group, "group", "", "join this worker group (a Kafka group id; default: the broker block's worker_group): every weir run with the same pipeline files and group shares the work")
		cmd.Flags().StringVar(&f.adminAddr, "admin-addr", "", "admin HTTP listener: the pipeline API (weir tap, weir top), /metrics, the console; host:port or https://host:port, \"off\" for none (default: the embedded broker's admin_addr when set, else "+DefaultRunAdminAddr+"); with the embedded broker it replaces the broker block's admin_addr")
		cmd.Flags().StringArrayVar(&f.adminConfig, "admin-config", nil, "admin listener setting NAME=VALUE with weir broker's names (ssl.keystore.location, ssl.truststore.location, ssl.client.auth, listener.name.admin.authentication.method=BASIC, listener.name.admin.authentication.users.file, ...), for https:// and basic auth on --admin-addr; repeatable; no passwords (use an unencrypted PEM key store; the users file holds the users' passwords); with the embedded broker, added to its admin listener's settings")
		addConsoleFlags(cmd.Flags(), &f.console)
		cmd.Flags().StringVar(&f.workerID, "worker-id", "", "this worker's id in its group, unique and stable across restarts (default: the host name)")
		cmd.Flags().DurationVar(&f.sessionTO, "session-timeout", 0, "session timeout of the worker group and of its sinks' and streams' consumer groups (default 6s): a killed worker's work moves after it; a worker restarted with its id takes its place back at once (static members)")
		return cmd
	})
}

func runPipelines(cmd *cobra.Command, g *globalFlags, f *runFlags, args []string) error {
	opts := f.options()
	cfg, err := loadPipelines(cmd.ErrOrStderr(), args, opts)
	if err != nil {
		return err
	}
	showStatus := f.status == "on" || (f.status == "auto" && term.IsTerminal(int(os.Stderr.Fd())))
	lg := g.Logger()
	var st *statusTerm
	if showStatus {
		st = &statusTerm{out: os.Stderr}
		if l, err := termLogger(g.logLevel, st); err == nil {
			lg = l
		}
		if term.IsTerminal(int(os.Stdout.Fd())) {
			stdout.Output = st
		}
	}

	adminCfg, err := parseAdminConfig(f.adminConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	brokers, registryURL := cfg.Broker.External, cfg.Broker.SchemaRegistry
	var emb *embeddedBroker
	if cfg.Broker.Embedded() {
		b := *cfg.Broker
		if f.adminAddr != "" {
			b.AdminAddr = f.adminAddr
		}
		b.Configs = withAdminConfig(b.Configs, adminCfg)
		emb, err = startEmbedded(lg, &b)
		if err != nil {
			return err
		}
		defer emb.stop(lg)
		brokers, registryURL = []string{emb.kafkaAddr}, emb.registryURL
	}
	worker, err := f.worker(cfg)
	if err != nil {
		return err
	}
	metrics := prometheus.NewRegistry()
	if emb != nil {
		metrics = emb.n.Metrics()
	}
	client := cfg.Broker.Client.Options(kafkaclient.Options{Brokers: brokers})
	runner, err := pipelines.NewRunner(pipelines.RunOptions{Client: client,
		SchemaRegistry: registryURL, Registry: cfg.Broker.Client.Registry, ClientProperties: cfg.Broker.ClientProperties(),
		Logger: lg.Named("pipelines"), Registerer: metrics, Worker: worker})
	if err != nil {
		return err
	}
	defer runner.Stop()
	if _, err := runner.Apply(ctx, cfg); err != nil {
		return err
	}
	adm, stopAdmin, err := runAdminListener(lg, emb, f.adminAddr, adminCfg, metrics)
	if err != nil {
		return err
	}
	defer stopAdmin()
	if adm != nil {
		workerID := ""
		if worker != nil {
			workerID = worker.ID
		}
		closeConsole, err := mountRunAdmin(ctx, &RunAdmin{Server: adm, Pipeline: runner.Observed(), Client: client,
			Registry: cfg.Broker.Client.Registry.WithURL(registryURL), Console: &f.console, Files: args, Worker: workerID, Logger: lg})
		if err != nil {
			return err
		}
		defer closeConsole()
	}
	lg.Info("pipelines running", zap.Strings("brokers", brokers), zap.String("security_protocol", cfg.Broker.Client.Security.Protocol), zap.String("schema_registry", registryURL),
		zap.Int("sources", len(cfg.Sources)), zap.Int("streams", len(cfg.Streams)), zap.Int("sinks", len(cfg.Sinks)))

	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	files := watchState(args, opts.VarFiles)
	var watchC <-chan time.Time
	if f.pollInterval > 0 {
		tk := time.NewTicker(f.pollInterval)
		defer tk.Stop()
		watchC = tk.C
	}
	statusTick := time.NewTicker(time.Second)
	defer statusTick.Stop()
	var prev []pipelines.Status
	prevAt := time.Now()
	var summaryC <-chan time.Time
	if f.summaryEvery > 0 {
		tk := time.NewTicker(f.summaryEvery)
		defer tk.Stop()
		summaryC = tk.C
	}
	var lastSummary map[string]string
	reload := func(why string) {
		ncfg, diags := pipelines.Load(args, opts)
		if diags.HasErrors() {
			var out io.Writer = os.Stderr
			if st != nil {
				out = st
			}
			writeDiags(out, ncfg, diags)
			lg.Error("pipeline files have errors; the running pipelines are kept", zap.String("trigger", why))
			return
		}
		if !reflect.DeepEqual(ncfg.Broker, cfg.Broker) {
			lg.Warn("broker settings changed; restart weir run to apply them")
		}
		changed, err := runner.Apply(ctx, ncfg)
		if err != nil {
			lg.Error("reload failed", zap.Error(err))
			return
		}
		cfg = ncfg
		lg.Info("pipelines reloaded", zap.String("trigger", why), zap.Strings("restarted", changed))
	}
	for {
		select {
		case err := <-runner.GroupErr():
			return err
		case s := <-sig:
			if s == syscall.SIGHUP {
				files = watchState(args, opts.VarFiles)
				reload("SIGHUP")
				continue
			}
			if st != nil {
				st.set(nil)
			}
			lg.Info("shutting down: stopping pipelines (final flush and commit)", zap.String("signal", s.String()))
			runner.Stop()
			logSummary(lg, "pipelines stopped: records per component since start", cfg, runner.Status(), nil)
			return nil
		case <-summaryC:
			lastSummary = logSummary(lg, "records per component since start", cfg, runner.Status(), lastSummary)
		case <-watchC:
			if now := watchState(args, opts.VarFiles); now != files {
				files = now
				reload("file change")
			}
		case <-statusTick.C:
			if st == nil {
				continue
			}
			cur := runner.Status()
			st.set(statusLines(cur, prev, time.Since(prevAt)))
			prev, prevAt = cur, time.Now()
		}
	}
}

// worker returns the worker-group options of the run (nil: alone).
func (f *runFlags) worker(cfg *pipelines.Config) (*pipelines.WorkerOptions, error) {
	group := f.group
	if group == "" {
		group = cfg.Broker.WorkerGroup
	}
	if group == "" {
		if f.workerID != "" {
			return nil, fmt.Errorf("--worker-id %q needs a worker group (--group or the broker block's worker_group)", f.workerID)
		}
		if f.sessionTO != 0 {
			return nil, fmt.Errorf("--session-timeout %s needs a worker group (--group or the broker block's worker_group)", f.sessionTO)
		}
		return nil, nil
	}
	if f.sessionTO < 0 {
		return nil, fmt.Errorf("--session-timeout %s: must be positive", f.sessionTO)
	}
	if cfg.Broker.Embedded() {
		return nil, fmt.Errorf("worker group %q: the workers must share a cluster: name its brokers in the broker block (brokers = [...]) instead of running the embedded broker", group)
	}
	id := f.workerID
	if id == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return nil, fmt.Errorf("worker group %q: no --worker-id and no host name: %v", group, err)
		}
		id = h
	}
	return &pipelines.WorkerOptions{Group: group, ID: id, SessionTimeout: f.sessionTO}, nil
}

// watchState fingerprints the pipeline files (names, sizes, mtimes).
func watchState(args, varFiles []string) string {
	files, _, err := pipelines.ExpandPaths(args)
	if err != nil {
		return "error: " + err.Error()
	}
	var sb strings.Builder
	for _, p := range append(files, varFiles...) {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&sb, "%s:missing;", p)
			continue
		}
		fmt.Fprintf(&sb, "%s:%d:%d;", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return sb.String()
}

func statusLines(cur, prev []pipelines.Status, dt time.Duration) []string {
	old := map[string]pipelines.Status{}
	for _, s := range prev {
		old[s.ID] = s
	}
	secs := dt.Seconds()
	if secs <= 0 {
		secs = 1
	}
	w := 0
	for _, s := range cur {
		w = max(w, len(s.ID))
	}
	lines := make([]string, 0, len(cur))
	for _, s := range cur {
		p := old[s.ID]
		in := (s.RecordsIn - p.RecordsIn) / secs
		out := (s.RecordsOut - p.RecordsOut) / secs
		if in < 0 || out < 0 {
			in, out = 0, 0
		}
		line := fmt.Sprintf("%-*s  %-8s  in %7s/s  out %7s/s  lag %6s  errors %s",
			w, s.ID, s.State, pipelines.FormatRate(in), pipelines.FormatRate(out), pipelines.FormatRate(s.Lag), pipelines.FormatRate(s.Errors))
		if s.State == "failed" && s.LastErr != nil {
			line += "  " + truncate(s.LastErr.Error(), 80)
		}
		lines = append(lines, line)
	}
	return lines
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// statusTerm keeps status lines at the bottom of a terminal: every write
// (logs, stdout sinks) erases them, writes, and draws them again.
type statusTerm struct {
	mu    sync.Mutex
	out   *os.File
	lines []string
}

func (t *statusTerm) clearLocked() {
	if n := len(t.lines); n > 0 {
		fmt.Fprintf(t.out, "\x1b[%dA\x1b[J", n)
	}
}

func (t *statusTerm) drawLocked() {
	for _, l := range t.lines {
		fmt.Fprintf(t.out, "\x1b[2K%s\n", l)
	}
}

func (t *statusTerm) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
	n, err := t.out.Write(b)
	t.drawLocked()
	return n, err
}

func (t *statusTerm) Sync() error { return nil }

func (t *statusTerm) set(lines []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
	t.lines = lines
	t.drawLocked()
}

func termLogger(level string, w *statusTerm) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(strings.ToLower(level))); err != nil {
		return nil, err
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(newConsoleEncoder(encCfg), w, lvl), zap.AddCaller()), nil
}

// embeddedBroker is the single-node broker and registry weir run starts.
type embeddedBroker struct {
	n           *node.Node
	kafkaAddr   string
	registryURL string
}

func startEmbedded(lg *zap.Logger, b *pipelines.Broker) (*embeddedBroker, error) {
	n, err := node.Start(context.Background(), node.Config{
		DataDir: b.DataDir, KafkaAddr: b.KafkaAddr, AdminAddr: b.AdminAddr, RegistryAddr: b.RegistryAddr,
		RegistryConfigs: b.RegistryConfigs(), BrokerConfigs: b.Configs, Logger: lg,
	})
	if err != nil {
		return nil, err
	}
	return &embeddedBroker{n: n, kafkaAddr: n.KafkaAddr(), registryURL: n.RegistryURL()}, nil
}

func (e *embeddedBroker) stop(lg *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.n.Shutdown(ctx); err != nil {
		lg.Warn("embedded broker shutdown", zap.Error(err))
	}
}
