package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"weir/ingest/client"
)

// clientFlags are the flags every command that talks to brokers takes.
type clientFlags struct {
	brokers string
	timeout time.Duration
	g       *globalFlags
}

// addClientFlags adds --brokers (default $WEIR_BROKERS or 127.0.0.1:9092)
// and --timeout to cmd.
func addClientFlags(cmd *cobra.Command, g *globalFlags) *clientFlags {
	f := &clientFlags{g: g}
	cmd.Flags().StringVar(&f.brokers, "brokers", client.BrokersDefault(),
		"bootstrap brokers, comma-separated host:port (default from $"+client.BrokersEnv+")")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to keep retrying an unreachable or unready broker")
	return f
}

// seeds returns the parsed --brokers list.
func (f *clientFlags) seeds() ([]string, error) { return client.SplitBrokers(f.brokers) }

// baseOpts returns the options every client starts from: seeds, retry
// bound, and kgo's own logs when --log-level is debug. (kgo's logs stay
// off otherwise: the process logger writes to stdout, which consume uses
// for records.)
func (f *clientFlags) baseOpts() ([]kgo.Opt, error) {
	seeds, err := f.seeds()
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RetryTimeout(f.timeout)}
	if lg := f.g.Logger(); lg.Core().Enabled(zapcore.DebugLevel) {
		opts = append(opts, kgo.WithLogger(kgoLogger{lg.Named("kgo")}))
	}
	return opts, nil
}

// admin returns a kadm client over a fresh kgo client; close the kgo one.
func (f *clientFlags) admin() (*kadm.Client, *kgo.Client, error) {
	opts, err := f.baseOpts()
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(opts...)
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
		return fmt.Errorf("%w (brokers %s: is a broker running there? start one with `weir broker`, or set --brokers / $%s)", err, f.brokers, client.BrokersEnv)
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
