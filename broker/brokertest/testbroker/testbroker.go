package testbroker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/group"
	"weir/broker/node"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
)

// Broker is a running single-node broker over a temp data directory,
// assembled by broker/node as `weir broker` is (no admin listener, no
// schema registry).
type Broker struct {
	t    testing.TB
	Dir  string
	Addr string
	n    *node.Node
}

// Option adjusts a test broker's configuration.
type Option func(*node.Config)

// Config sets a broker-level config with Kafka's name (for example
// group.initial.rebalance.delay.ms or num.partitions).
func Config(name, value string) Option {
	return func(c *node.Config) {
		if c.BrokerConfigs == nil {
			c.BrokerConfigs = map[string]string{}
		}
		c.BrokerConfigs[name] = value
	}
}

// Listeners gives the broker Kafka's listeners setting (for example
// "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0") instead of one PLAINTEXT
// listener; configs are the listeners' ssl.* settings. Addr stays the
// PLAINTEXT listener's, if any; ListenerAddr has each one's.
func Listeners(spec string, configs map[string]string) Option {
	return func(c *node.Config) {
		c.KafkaAddr = ""
		Config("listeners", spec)(c)
		for k, v := range configs {
			Config(k, v)(c)
		}
	}
}

// ListenerAddr is the bound address of the named listener.
func (b *Broker) ListenerAddr(name string) string { return b.n.ListenerAddrs()[name] }

// Start starts a broker in t.TempDir(); it stops at cleanup. Its groups
// have no initial rebalance delay (see StartIn).
func Start(t testing.TB, opts ...Option) *Broker { return StartIn(t, t.TempDir(), opts...) }

// StartIn starts a broker over dir (which may hold a previous broker's
// data, to test restarts).
func StartIn(t testing.TB, dir string, opts ...Option) *Broker {
	t.Helper()
	// group.initial.rebalance.delay.ms is 0, as Kafka's own
	// config/server.properties ships it for development and testing: with
	// the default 3 s every consumer group a test starts would first wait
	// 3 s for more members. Tests of the delay set it with Config.
	cfg := node.Config{DataDir: dir, KafkaAddr: "127.0.0.1:0",
		BrokerConfigs: map[string]string{group.SettingInitialRebalanceDelayMs: "0"}}
	for _, o := range opts {
		o(&cfg)
	}
	n, err := node.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{t: t, Dir: dir, n: n, Addr: n.KafkaAddr()}
	t.Cleanup(b.Stop)
	return b
}

// Stop shuts the broker down (idempotent).
func (b *Broker) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.n.Shutdown(ctx); err != nil {
		b.t.Errorf("testbroker: shutdown: %v", err)
	}
}

// Client returns a franz-go client seeded with the broker (built by
// internal/kafkaclient, so it partitions like every weir client), closed at
// cleanup.
func (b *Broker) Client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{b.Addr}}, opts...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(cl.Close)
	return cl
}

// CreateTopic creates topic with the given partitions and configs.
func (b *Broker) CreateTopic(topic string, partitions int32, configs map[string]*string) {
	b.t.Helper()
	adm := kadm.NewClient(b.Client())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.t.Fatalf("testbroker: creating topic %s: %v", topic, err)
	}
}

// ReadAll consumes topic from the start up to its end offsets at the time
// of the call and returns the records.
func (b *Broker) ReadAll(topic string) []*kgo.Record {
	b.t.Helper()
	return ReadAllAt(b.t, b.Addr, topic)
}

// ReadAllAt is ReadAll on the broker at addr (any Kafka-compatible
// broker, e.g. the one of a `weir run` process).
func ReadAllAt(t testing.TB, addr, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admCl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("testbroker: end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	offs := map[int32]kgo.Offset{}
	for p := range want {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}}, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("testbroker: reading %s: %v (still waiting on %v)", topic, err, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Logf("testbroker: fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok && r.Offset < end {
				out = append(out, r)
				if r.Offset+1 >= end {
					delete(want, r.Partition)
				}
			}
		})
	}
	return out
}

// CheckFor is testkit.CheckFor, here so that a test starting a broker
// needs one import: it polls fn until it returns nil, failing t with fn's
// last error after timeout.
func CheckFor(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	testkit.CheckFor(t, timeout, fn)
}
