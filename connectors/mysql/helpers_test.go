package mysql

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/internal/txntest"
	"weir/internal/weirbin"
	"weir/schemas"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		childMain()
		return
	}
	code := m.Run()
	searchtest.StopShared() // TestEndToEnd's search server
	mysqltest.Stop()
	weirbin.Cleanup() // TestWeirRunFidelity's weir binary
	txntest.Stop()    // TestExactlyOnceKillDashNine's Apache Kafka
	os.Exit(code)
}

// env is one test's MariaDB database, broker and registry.
type env struct {
	t     testing.TB
	db    *mysqltest.Server
	name  string // database name
	b     *testbroker.Broker
	kafka string // the broker's address, when b is nil (a `weir run` process's)
	// committed reads topics with read_committed (from kafka; an
	// exactly-once source's topics).
	committed bool
	reg       string
	serde     *schemas.Serde
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvOn(t, mysqltest.Shared(t))
}

// newEnvOn is newEnv on server srv.
func newEnvOn(t testing.TB, srv *mysqltest.Server) *env {
	t.Helper()
	b := testbroker.Start(t)
	reg := b.Registry(t)
	cl, err := sr.NewClient(sr.URLs(reg))
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: srv, name: srv.NewDatabase(t), b: b, reg: reg, serde: schemas.NewSerde(srclient.Source(cl))}
}

func (e *env) exec(stmts ...string) { e.t.Helper(); e.db.Exec(e.t, e.name, stmts...) }

// config is a source config capturing only e's database.
func (e *env) config(name string) Config {
	return Config{Name: name, Host: e.db.Host, Port: e.db.Port, User: mysqltest.CDCUser, Password: mysqltest.CDCPassword,
		ServerName: "srv", IncludeDatabases: []string{e.name}, RegistryURL: e.reg, HeartbeatInterval: time.Second,
		SchemaChangeTopic: "{server}.schema-changes", HeartbeatTopic: "__weir-heartbeat.{server}", Tombstones: true}
}

func (e *env) topic(table string) string { return "srv." + e.name + "." + table }

// running is a source task running in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
	src    *Source
	once   sync.Once
	err    error
}

func (e *env) run(cfg Config) *running {
	e.t.Helper()
	src := New(cfg)
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, Logger: zap.NewNop()}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1), src: src}
	go func() {
		r.done <- rt.RunSource(ctx, cfg.Name, src, connectors.SourceOptions{Topic: "unused-" + cfg.Name})
	}()
	e.t.Cleanup(func() { r.stop() })
	return r
}

// stop stops the task and returns its result (nil after a clean stop).
func (r *running) stop() error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(30 * time.Second):
			r.err = fmt.Errorf("source task did not stop within 30s")
		}
	})
	return r.err
}

// change as read back from a topic.
type rec struct {
	key    map[string]any
	op     string
	before map[string]any
	after  map[string]any
	source map[string]any
	tomb   bool
	ver    string
	r      *kgo.Record
}

func (e *env) decode(r *kgo.Record) rec {
	e.t.Helper()
	ctx := context.Background()
	out := rec{r: r}
	for _, h := range r.Headers {
		if h.Key == HeaderVersion {
			out.ver = string(h.Value)
		}
	}
	_, k, err := e.serde.Decode(ctx, r.Key)
	if err != nil {
		e.t.Fatalf("key at %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
	}
	out.key = k.(map[string]any)
	if r.Value == nil {
		out.tomb = true
		return out
	}
	_, v, err := e.serde.Decode(ctx, r.Value)
	if err != nil {
		e.t.Fatalf("value at %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
	}
	m := v.(map[string]any)
	out.op = m["op"].(string)
	out.before = unwrap(m["before"])
	out.after = unwrap(m["after"])
	out.source = m["source"].(map[string]any)
	return out
}

// unwrap turns a decoded union value into its branch value.
func unwrap(v any) map[string]any {
	if v == nil {
		return nil
	}
	m := v.(map[string]any)
	if len(m) == 1 {
		for k, x := range m {
			if strings.HasSuffix(k, ".Value") {
				return x.(map[string]any)
			}
		}
	}
	return m
}

// plain renders a decoded Avro value as a string comparable with what
// SELECT ... returns as text.
func plain(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case map[string]any:
		for _, y := range x {
			return plain(y)
		}
	case *big.Rat:
		return x.FloatString(2)
	case []byte:
		return string(x)
	case float32:
		return fmt.Sprint(x)
	}
	return fmt.Sprint(v)
}

// readAll reads topic from its start to its end offsets.
func (e *env) readAll(topic string) []*kgo.Record {
	e.t.Helper()
	if e.committed {
		return txntest.ReadCommitted(e.t, e.kafka, topic)
	}
	if e.b == nil {
		return testbroker.ReadAllAt(e.t, e.kafka, topic)
	}
	return e.b.ReadAll(topic)
}

// waitRecords polls topic until n records are there.
func (e *env) waitRecords(topic string, n int, timeout time.Duration) []*kgo.Record {
	e.t.Helper()
	var rs []*kgo.Record
	testbroker.CheckFor(e.t, timeout, func() error {
		rs = e.readAll(topic)
		if len(rs) < n {
			return fmt.Errorf("%s has %d records, want %d", topic, len(rs), n)
		}
		return nil
	})
	return rs
}

// testContext is a SourceContext for driving a Source directly.
type testContext struct {
	name string
	m    *connectors.Metrics
	once sync.Once
}

func (c *testContext) Name() string        { return c.name }
func (c *testContext) Logger() *zap.Logger { return zap.NewNop() }
func (c *testContext) Metrics() *connectors.Metrics {
	c.once.Do(func() { c.m = connectors.NewTestMetrics(c.name) })
	return c.m
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
