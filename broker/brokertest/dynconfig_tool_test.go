package brokertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/kafkatools"
)

// TestKafkaConfigsDynamicBrokerConfigs: Apache Kafka 4.4's kafka-configs
// alters and describes dynamic broker configs on a 3-broker weir cluster
// and prints what it prints against Kafka (the lines below are Kafka
// 4.4's for the same commands). The changes take effect without a
// restart — a cluster default log.segment.bytes rolls the segments of an
// existing topic, then a default log.retention.ms deletes them — and a
// per-broker value survives that broker's restart. A static-only config
// is refused with Kafka's error and nothing is applied.
func TestKafkaConfigsDynamicBrokerConfigs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	kafkatools.Require(t)
	c := NewCluster(t, BrokerConfig(map[string]string{"log.retention.check.interval.ms": "200"}))
	c.CreateTopic("dyn", 1, 3, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tool := func(via int32, args ...string) (string, error) {
		t.Helper()
		out, err := kafkatools.Run(ctx, kafkatools.ConfigCommand, append([]string{"--bootstrap-server", c.Broker(via).Addr()}, args...)...)
		t.Logf("kafka-configs %s:\n%s", strings.Join(args, " "), out)
		return out, err
	}
	want := func(via int32, expect string, args ...string) {
		t.Helper()
		out, err := tool(via, args...)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out) != strings.TrimSpace(expect) {
			t.Fatalf("kafka-configs %s:\n%s\nwant:\n%s", strings.Join(args, " "), out, expect)
		}
	}
	def := []string{"--entity-type", "brokers", "--entity-default"}
	two := []string{"--entity-type", "brokers", "--entity-name", "2"}
	args := func(a ...[]string) []string {
		var out []string
		for _, x := range a {
			out = append(out, x...)
		}
		return out
	}

	// Rolling: 1 MiB segments for every topic without an override.
	want(1, "Completed updating default config for brokers in the cluster.",
		args([]string{"--alter", "--add-config", "log.segment.bytes=1048576"}, def)...)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(0))
	defer cl.Close()
	val := strings.Repeat("x", 64<<10)
	for i := 0; i < 48; i++ { // 3 MiB
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dyn", Value: []byte(val)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := c.Admin()
	start := func() (int64, error) {
		so, err := adm.ListStartOffsets(ctx, "dyn")
		if err != nil {
			return 0, err
		}
		o, _ := so.Lookup("dyn", 0)
		return o.Offset, o.Err
	}
	if s, err := start(); err != nil || s != 0 {
		t.Fatalf("log start %d %v before retention", s, err)
	}

	// Retention: the cluster default of 1 s deletes the rolled segments.
	want(2, "Completed updating default config for brokers in the cluster.",
		args([]string{"--alter", "--add-config", "log.retention.ms=1000"}, def)...)
	c.WaitFor(30*time.Second, func() error {
		s, err := start()
		if err != nil {
			return err
		}
		if s < 16 { // at least the first 1 MiB segment
			return fmt.Errorf("log start offset %d: old segments not deleted yet", s)
		}
		return nil
	})
	want(3, `Default configs for brokers in the cluster are:
  log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000}
  log.segment.bytes=1048576 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=1048576}`,
		args([]string{"--describe"}, def)...)

	// A topic without overrides shows the defaults as its values, with
	// Kafka's synonyms.
	out, err := tool(3, "--describe", "--all", "--entity-type", "topics", "--entity-name", "dyn")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"  retention.ms=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000, DEFAULT_CONFIG:log.retention.hours=168}",
		"  segment.bytes=1048576 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=1048576, DEFAULT_CONFIG:log.segment.bytes=1073741824}",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Fatalf("topic describe lacks the line %q", line)
		}
	}

	// Per broker: broker 2's own value, over the default.
	want(1, "Completed updating config for broker 2.",
		args([]string{"--alter", "--add-config", "log.retention.ms=5000,leader.replication.throttled.rate=1000000"}, two)...)
	broker2 := `Dynamic configs for broker 2 are:
  leader.replication.throttled.rate=1000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=1000000}
  log.retention.ms=5000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=5000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000, DEFAULT_CONFIG:log.retention.hours=168}`
	want(1, broker2, args([]string{"--describe"}, two)...)
	want(1, "Dynamic configs for broker 1 are:", "--describe", "--entity-type", "brokers", "--entity-name", "1")

	// Bad input: Kafka's error; nothing of the request applied.
	out, err = tool(1, args([]string{"--alter", "--add-config", "log.retention.ms=7,log.retention.hours=1"}, two)...)
	if err == nil || !strings.Contains(out, "org.apache.kafka.common.errors.InvalidRequestException: Cannot update these configs dynamically: [log.retention.hours]") {
		t.Fatalf("static-only config: err %v, output:\n%s", err, out)
	}
	out, err = tool(1, args([]string{"--alter", "--add-config", "log.retention.ms=abc"}, def)...)
	if err == nil || !strings.Contains(out, "org.apache.kafka.common.errors.InvalidRequestException: Invalid value abc for configuration log.retention.ms: Not a number of type LONG") {
		t.Fatalf("bad value: err %v, output:\n%s", err, out)
	}
	want(1, broker2, args([]string{"--describe"}, two)...)

	// Restart broker 2: it finds its dynamic configs in the metadata.
	c.Kill(2)
	c.Restart(2)
	c.WaitFor(30*time.Second, func() error {
		v, _ := c.Broker(2).Server().BrokerConfig().Get("log.retention.ms")
		if v != "5000" {
			return fmt.Errorf("broker 2 log.retention.ms %q after restart", v)
		}
		return nil
	})
	want(2, broker2, args([]string{"--describe"}, two)...)
	if v, _ := c.Broker(3).Server().BrokerConfig().Get("log.retention.ms"); v != "1000" {
		t.Fatalf("broker 3 log.retention.ms %q, want the cluster default", v)
	}

	// Deleting returns to the static value.
	want(1, "Completed updating default config for brokers in the cluster.",
		args([]string{"--alter", "--delete-config", "log.retention.ms,log.segment.bytes"}, def)...)
	c.WaitFor(10*time.Second, func() error {
		if v, _ := c.Broker(3).Server().BrokerConfig().Get("log.segment.bytes"); v != "1073741824" {
			return fmt.Errorf("broker 3 log.segment.bytes %q", v)
		}
		return nil
	})
	want(1, "Default configs for brokers in the cluster are:", args([]string{"--describe"}, def)...)
}
