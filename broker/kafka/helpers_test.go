package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/metadata"
)

// testBroker is a real in-process server on 127.0.0.1:0 over a real data
// directory.
type testBroker struct {
	t    testing.TB
	dir  string
	srv  *Server
	meta *metadata.FileStore
	logs *log.Manager
	reg  *prometheus.Registry
	addr string
}

type brokerOpt func(*Config)

func startBroker(t testing.TB, opts ...brokerOpt) *testBroker {
	t.Helper()
	return startBrokerIn(t, t.TempDir(), opts...)
}

func startBrokerIn(t testing.TB, dir string, opts ...brokerOpt) *testBroker {
	t.Helper()
	lg := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	if _, fuzz := t.(*testing.F); fuzz {
		// Logging through F from inside the fuzz function panics
		// ("use t.Logf instead"): a fuzzed server logs nowhere.
		lg = zap.NewNop()
	}
	meta, err := metadata.OpenFile(dir, lg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := meta.InitCluster(context.Background(), "test-cluster"); err != nil {
		t.Fatal(err)
	}
	logs, err := log.NewManager(vfs.OS, dir, log.ManagerOptions{Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Logs = logs
	cfg.Addr = "127.0.0.1:0"
	cfg.Metadata = meta
	cfg.Logger = lg
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		logs.Close()
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	b := &testBroker{t: t, dir: dir, srv: srv, meta: meta, logs: logs, reg: reg, addr: srv.Addr().String()}
	t.Cleanup(b.stop)
	return b
}

func (b *testBroker) stop() {
	if b.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		b.t.Errorf("shutdown: %v", err)
	}
	if err := b.logs.Close(); err != nil {
		b.t.Errorf("closing logs: %v", err)
	}
	b.meta.Close()
	b.srv = nil
}

func (b *testBroker) client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr)}, opts...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(cl.Close)
	return cl
}

var _ = fmt.Sprintf
