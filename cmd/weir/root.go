package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
)

// commandFactories holds the subcommands registered by the other files of
// this package (each in its init function).
var commandFactories []func(*globalFlags) *cobra.Command

// registerCommand adds a subcommand built by f to the root command.
func registerCommand(f func(*globalFlags) *cobra.Command) {
	commandFactories = append(commandFactories, f)
}

// globalFlags are the persistent flags every subcommand shares.
type globalFlags struct {
	logLevel  string
	logFormat string

	logger *zap.Logger
}

// Logger returns the process logger, built from --log-level and
// --log-format when the command starts.
func (g *globalFlags) Logger() *zap.Logger {
	if g.logger == nil {
		return zap.NewNop()
	}
	return g.logger
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:   "weir",
		Short: "weir is a log-pipeline appliance: a Kafka-compatible broker with sources, sinks, streams and schemas",
		Long: `weir is a log-pipeline appliance in one binary: a Kafka-compatible,
partitioned, replicated broker, wrapped in Connect-style sources (MySQL binlog
CDC, file tail, HTTP and syslog ingest) and sinks (Elasticsearch), a Streams
layer, Avro records with a schema registry, and pipelines declared in HCL.

Any Kafka client (kcat, franz-go, the Java client, librdkafka) talks to a weir
broker unchanged.`,
		Example: `  # run a single-node broker in the foreground
  weir broker --data-dir ./data --kafka-addr 127.0.0.1:9092

  # print the version
  weir version`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			lg, err := newLogger(g.logLevel, g.logFormat, os.Stderr)
			if err != nil {
				return err
			}
			g.logger = lg
			return nil
		},
		PersistentPostRun: func(cmd *cobra.Command, args []string) {
			if g.logger != nil {
				_ = g.logger.Sync()
			}
		},
	}
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "auto", "log format: auto (console on a terminal, JSON otherwise), console, json")
	for _, f := range commandFactories {
		root.AddCommand(f(g))
	}
	return root
}

// newLogger builds the zap logger, writing to stderr so that commands like
// `weir consume` keep stdout for records: JSON when out is not a terminal (or
// format is "json"), a readable console encoding otherwise.
func newLogger(level, format string, out *os.File) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(strings.ToLower(level))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(encCfg)
	case "console":
		enc = newConsoleEncoder(encCfg)
	case "auto", "":
		if term.IsTerminal(int(out.Fd())) {
			enc = newConsoleEncoder(encCfg)
		} else {
			enc = zapcore.NewJSONEncoder(encCfg)
		}
	default:
		return nil, fmt.Errorf("--log-format %q: want auto, console or json", format)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(out), lvl)
	return zap.New(core, zap.AddCaller()), nil
}

func newConsoleEncoder(cfg zapcore.EncoderConfig) zapcore.Encoder {
	cfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
	cfg.EncodeCaller = zapcore.ShortCallerEncoder
	return zapcore.NewConsoleEncoder(cfg)
}
