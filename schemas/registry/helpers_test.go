package registry

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/kafka"
	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/metadata"
	"weir/internal/kafkaclient"
)

// testBroker is a real weir broker in-process on 127.0.0.1:0 over a temp
// data directory.
type testBroker struct {
	addr string
	meta *metadata.FileStore
}

func startBroker(t testing.TB) *testBroker {
	t.Helper()
	dir := t.TempDir()
	lg := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	meta, err := metadata.OpenFile(dir, lg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	if _, err := meta.InitCluster(context.Background(), "registry-test"); err != nil {
		t.Fatal(err)
	}
	logs, err := log.NewManager(vfs.OS, dir, log.ManagerOptions{Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	cfg := kafka.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Metadata = meta
	cfg.Logs = logs
	cfg.Logger = lg
	cfg.Registerer = prometheus.NewRegistry()
	srv, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return &testBroker{addr: srv.Addr().String(), meta: meta}
}

// createTopic creates topics through the broker's metadata, for brokers
// that do not serve CreateTopics yet.
func (b *testBroker) createTopic(ctx context.Context, topic string, configs map[string]string) error {
	_, err := b.meta.CreateTopic(ctx, metadata.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 1, Configs: configs})
	if errors.Is(err, metadata.ErrTopicExists) {
		return nil
	}
	return err
}

// testRegistry is a Registry on the broker's _schemas topic, served over
// real HTTP, with a franz-go sr client.
type testRegistry struct {
	reg *Registry
	srv *httptest.Server
	cl  *sr.Client
}

func startRegistry(t testing.TB, b *testBroker) *testRegistry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lg := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	kl, err := OpenKafka(ctx, KafkaConfig{Client: kafkaclient.Options{Brokers: []string{b.addr}}, CreateTopic: b.createTopic, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := New(ctx, Config{Log: kl, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	tr := &testRegistry{reg: reg, srv: srv, cl: cl}
	t.Cleanup(tr.stop)
	return tr
}

func (tr *testRegistry) stop() {
	if tr.srv == nil {
		return
	}
	tr.srv.Close()
	tr.reg.Close()
	tr.srv = nil
}

// endOffset returns the end offset of the _schemas topic.
func endOffset(t testing.TB, b *testBroker) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, DefaultTopic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(DefaultTopic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s: %v", DefaultTopic, o.Err)
	}
	return o.Offset
}
