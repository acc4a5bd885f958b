package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"weir/internal/kafkaclient"
)

// clientFlags are the flags every command that talks to brokers takes.
type clientFlags struct {
	brokers string
	cc      *string // --command-config, shared with the registry flags
	timeout time.Duration
	g       *globalFlags
	fs      *pflag.FlagSet
}

// addClientFlags adds --brokers (default $WEIR_BROKERS or 127.0.0.1:9092),
// --command-config and --timeout to cmd.
func addClientFlags(cmd *cobra.Command, g *globalFlags) *clientFlags {
	f := &clientFlags{g: g, fs: cmd.Flags(), cc: addCommandConfigFlag(cmd)}
	cmd.Flags().StringVar(&f.brokers, "brokers", kafkaclient.BrokersDefault(),
		"bootstrap brokers, comma-separated host:port (default from $"+kafkaclient.BrokersEnv+", else bootstrap.servers of --command-config)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to keep retrying an unreachable or unready broker")
	return f
}

// addCommandConfigFlag adds --command-config to cmd once (the client and
// the registry flags share it) and returns where its value goes.
func addCommandConfigFlag(cmd *cobra.Command) *string {
	if fl := cmd.Flags().Lookup("command-config"); fl != nil {
		return fl.Value.(*commandConfigValue).path
	}
	v := &commandConfigValue{path: new(string)}
	cmd.Flags().Var(v, "command-config", "Kafka client properties file, as Kafka's tools take it: security.protocol, sasl.mechanism, "+
		"sasl.username, sasl.password, ssl.truststore.location, ssl.keystore.location, ssl.key.password, ... "+
		"(and schema.registry.* / basic.auth.user.info for the registry)")
	return v.path
}

type commandConfigValue struct{ path *string }

func (v *commandConfigValue) String() string     { return *v.path }
func (v *commandConfigValue) Set(s string) error { *v.path = s; return nil }
func (v *commandConfigValue) Type() string       { return "file" }

// readCommandConfig reads and checks a --command-config file; properties
// weir does not use are logged as Kafka's tools warn about them.
func readCommandConfig(path string, lg *zap.Logger) (kafkaclient.Settings, error) {
	props, err := kafkaclient.ReadPropertiesFile(path)
	if err != nil {
		return kafkaclient.Settings{}, fmt.Errorf("--command-config: %w", err)
	}
	set, ignored, err := kafkaclient.ParseProperties(props)
	if err != nil {
		return set, fmt.Errorf("--command-config %s: %w", path, err)
	}
	if len(ignored) > 0 {
		lg.Warn("--command-config: properties not used by this command", zap.String("file", path), zap.Strings("ignored", ignored))
	}
	return set, nil
}

// bench returns weir bench's brokers and security: --brokers, with
// --command-config's TLS and SASL settings (and its bootstrap.servers
// when neither --brokers nor $WEIR_BROKERS names brokers).
func (f *clientFlags) bench() ([]string, kafkaclient.Security, error) {
	o, err := f.options()
	return o.Brokers, o.Security, err
}

// options returns the client options every command starts from: seeds,
// retry bound, and kgo's own logs when --log-level is debug. (kgo's logs
// stay off otherwise: the process logger writes to stdout, which consume
// uses for records.)
//
// --command-config adds security.protocol and its TLS and SASL settings,
// and client.id; its bootstrap.servers is used when neither --brokers nor
// $WEIR_BROKERS names brokers.
func (f *clientFlags) options() (kafkaclient.Options, error) {
	seeds, err := kafkaclient.SplitBrokers(f.brokers)
	if err != nil {
		return kafkaclient.Options{}, err
	}
	o := kafkaclient.Options{Brokers: seeds, RetryTimeout: f.timeout}
	if *f.cc != "" {
		set, err := readCommandConfig(*f.cc, f.g.Logger())
		if err != nil {
			return o, err
		}
		if f.fs.Changed("brokers") || os.Getenv(kafkaclient.BrokersEnv) != "" {
			set.Brokers = nil
		}
		o = set.Options(o)
		f.brokers = strings.Join(o.Brokers, ",")
	}
	if lg := f.g.Logger(); lg.Core().Enabled(zapcore.DebugLevel) {
		o.Logger = kgoLogger{lg.Named("kgo")}
	}
	return o, nil
}

// admin returns a kadm client over a fresh kgo client; close the kgo one.
func (f *clientFlags) admin() (*kadm.Client, *kgo.Client, error) {
	o, err := f.options()
	if err != nil {
		return nil, nil, err
	}
	cl, err := kafkaclient.New(o)
	if err != nil {
		return nil, nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(f.timeout / time.Millisecond))
	return adm, cl, nil
}

// requestCtx bounds one admin round trip by --timeout.
func (f *clientFlags) requestCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, f.timeout)
}

// withAdmin runs fn with an admin client and a context that bounds the
// command's requests by --timeout; the client is closed when fn returns.
func (f *clientFlags) withAdmin(parent context.Context, fn func(ctx context.Context, adm *kadm.Client) error) error {
	adm, cl, err := f.admin()
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := f.requestCtx(parent)
	defer cancel()
	return fn(ctx, adm)
}

// explain adds what to do to errors that mean the brokers are unreachable.
func (f *clientFlags) explain(err error) error {
	if err == nil {
		return nil
	}
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (brokers %s: is a broker running there? start one with `weir broker`, or set --brokers / $%s)", err, f.brokers, kafkaclient.BrokersEnv)
	}
	return err
}

// signalContext is cmd's context cancelled on SIGINT or SIGTERM.
func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// kgoLogger adapts zap to kgo.Logger.
type kgoLogger struct{ lg *zap.Logger }

func (l kgoLogger) Level() kgo.LogLevel {
	switch {
	case l.lg.Core().Enabled(zapcore.DebugLevel):
		return kgo.LogLevelDebug
	case l.lg.Core().Enabled(zapcore.InfoLevel):
		return kgo.LogLevelInfo
	case l.lg.Core().Enabled(zapcore.WarnLevel):
		return kgo.LogLevelWarn
	}
	return kgo.LogLevelError
}

func (l kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	fields := make([]zap.Field, 0, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		fields = append(fields, zap.Any(fmt.Sprint(keyvals[i]), keyvals[i+1]))
	}
	switch level {
	case kgo.LogLevelError:
		l.lg.Error(msg, fields...)
	case kgo.LogLevelWarn:
		l.lg.Warn(msg, fields...)
	case kgo.LogLevelInfo:
		l.lg.Info(msg, fields...)
	default:
		l.lg.Debug(msg, fields...)
	}
}
