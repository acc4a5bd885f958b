package conformance

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
)

// SinkDef is how the suite drives one sink kind.
type SinkDef struct {
	// Kind is the registry name.
	Kind string
	// New prepares one case against the peer: a connector called name.
	// It runs once per subtest.
	New func(t *testing.T, env *Env, name string) *SinkCase
	// BadConfigs are the kind's own bad configs, beyond the generic ones
	// the suite derives from its spec.
	BadConfigs []BadConfig
}

// SinkCase is one connector of a sink kind and its peer.
type SinkCase struct {
	// Config is the connector's raw config, as a pipeline block gives it.
	Config map[string]any
	// Delivered returns the ids of the records the peer holds so far, as
	// often as each was written (an error means "not yet readable"). The
	// suite writes records with key and value the id, the value as the
	// JSON object {"id":N}; ids of other cases may be among them.
	Delivered func() ([]int, error)
	// Bad is a record value the sink cannot handle (dead-lettered).
	Bad []byte
}

// Record is the record the suite writes for id.
func Record(topic string, id int) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(id)), Value: fmt.Appendf(nil, `{"id":%d}`, id)}
}

// TestSink runs the suite on a sink kind. Each case uses ids of its own
// (case n: n*1000+1...), so peers shared by the cases (standard output)
// can be read by all.
func TestSink(t *testing.T, d SinkDef) {
	env := newEnv(t)
	k := lookup(t, d.Kind)
	if k.IsSource() {
		t.Fatalf("kind %q is not a sink", d.Kind)
	}
	t.Run("open_close", func(t *testing.T) {
		c, topic := d.New(t, env, connectorName(t)), connectorName(t)
		env.produce(t, topic, ids(1001, 1005))
		run := startSink(t, env, k, c, topic)
		waitIDs(t, run, ids(1001, 1005), c.Delivered)
		run.stopClean(t)
	})
	t.Run("restart", func(t *testing.T) {
		c, topic := d.New(t, env, connectorName(t)), connectorName(t)
		env.produce(t, topic, ids(2001, 2020))
		run := startSink(t, env, k, c, topic)
		waitIDs(t, run, ids(2001, 2020), c.Delivered)
		run.stopClean(t)
		env.produce(t, topic, ids(2021, 2040)) // while the connector is down
		run = startSink(t, env, k, c, topic)
		env.produce(t, topic, ids(2041, 2060))
		noDuplicates(t, waitIDs(t, run, ids(2001, 2060), c.Delivered))
		run.stopClean(t)
	})
	t.Run("dead_letter", func(t *testing.T) {
		name := connectorName(t)
		c, topic := d.New(t, env, name), name
		env.produce(t, topic, []int{3001})
		bad := &kgo.Record{Topic: topic, Key: []byte("3002"), Value: c.Bad}
		env.produceRecords(t, bad)
		env.produce(t, topic, []int{3003, 3004})
		run := startSink(t, env, k, c, topic)
		waitIDs(t, run, []int{3001, 3003, 3004}, c.Delivered)
		r := deadLetter(t, env, run, name, map[string]string{
			deadletter.HeaderTopic:     topic,
			deadletter.HeaderPartition: strconv.Itoa(int(bad.Partition)),
			deadletter.HeaderOffset:    strconv.FormatInt(bad.Offset, 10),
		}, func(m string) bool { return m != "" })
		if string(r.Key) != "3002" || string(r.Value) != string(c.Bad) {
			t.Errorf("dead letter %q=%q, want the bad record 3002", r.Key, r.Value)
		}
		run.stopClean(t)
	})
	t.Run("bad_config", func(t *testing.T) {
		good := d.New(t, env, connectorName(t))
		topic := connectorName(t)
		for _, bc := range append(badConfigs(k, good.Config), d.BadConfigs...) {
			t.Run(bc.Name, func(t *testing.T) {
				raw := copyConfig(good.Config)
				bc.Change(raw)
				checkBadConfig(t, env, k, raw, bc.Setting, topic)
			})
		}
	})
}

func (e *Env) produce(t *testing.T, topic string, ids []int) {
	t.Helper()
	rs := make([]*kgo.Record, len(ids))
	for i, id := range ids {
		rs[i] = Record(topic, id)
	}
	e.produceRecords(t, rs...)
}

// produceRecords writes rs (setting their partitions and offsets).
func (e *Env) produceRecords(t *testing.T, rs ...*kgo.Record) {
	t.Helper()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{e.Broker.Addr}}, kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// startSink builds c's connector as weir run does and runs it on topic.
func startSink(t *testing.T, env *Env, k *connectors.Kind, c *SinkCase, topic string) *task {
	t.Helper()
	cfg, err := k.Spec.Decode(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	name := connectorName(t)
	s, err := k.NewSink(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &sink{Sink: s}
	return startTask(t, &w.opens, &w.closes, func(ctx context.Context) error {
		return env.rt.RunSink(ctx, name, w, connectors.SinkOptions{Topics: []string{topic}, FlushInterval: 100 * time.Millisecond})
	})
}
