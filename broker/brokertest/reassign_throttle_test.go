package brokertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/kafkatools"
	"weir/broker/metadata"
)

// produceBytes writes n records of size bytes to topic-p.
func produceBytes(t testing.TB, cl *kgo.Client, topic string, p int32, n, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	val := make([]byte, size)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	var firstErr error
	done := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: val}, func(_ *kgo.Record, err error) {
			if err != nil && firstErr == nil {
				firstErr = err
			}
			done <- struct{}{}
		})
	}
	for i := 0; i < n; i++ {
		<-done
	}
	if firstErr != nil {
		t.Fatalf("producing to %s-%d: %v", topic, p, firstErr)
	}
}

// TestReassignThrottleCommand: kafka-reassign-partitions --execute
// --throttle sets the rates on the brokers and the throttled replicas on
// the topic; the move of a 24 MiB partition is held to the throttle
// (1 MiB/s: after the first window's allowance, Kafka's quota measures
// over 11 one-second windows, it takes at least ~10 s where an unthrottled
// copy takes under 2 s), and --verify, once it completes, clears the
// broker and topic throttles. The output is Kafka's.
func TestReassignThrottleCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	kafkatools.Require(t)
	c := NewCluster(t, Brokers(2))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c.CreateTopicSpec(ctx, 1, metadata.TopicSpec{Name: "big", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{1}}})
	c.WaitFor(20*time.Second, func() error { _, err := c.LeaderOf("big", 0); return err })
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	defer cl.Close()
	const mib = 1 << 20
	produceBytes(t, cl, "big", 0, 24*1024, 1024)

	tool := kafkaTool{t: t, ctx: ctx, class: kafkatools.ReassignPartitionsCommand, name: "kafka-reassign-partitions",
		bootstrap: []string{"--bootstrap-server", c.Broker(1).Addr()}}.run
	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"big","partition":0,"replicas":[2]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := tool("--execute", "--reassignment-json-file", plan, "--throttle", fmt.Sprint(mib))
	if err != nil {
		t.Fatal(err)
	}
	hasLine(t, out, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
	hasLine(t, out, fmt.Sprintf("The inter-broker throttle limit was set to %d B/s", mib))
	hasLine(t, out, "Successfully started partition reassignment for big-0")
	topic, _ := c.Broker(2).Image().Topic("big")
	if got := topic.Configs["leader.replication.throttled.replicas"]; got != "0:1" {
		t.Fatalf("leader.replication.throttled.replicas = %q, want 0:1", got)
	}
	if got := topic.Configs["follower.replication.throttled.replicas"]; got != "0:2" {
		t.Fatalf("follower.replication.throttled.replicas = %q, want 0:2", got)
	}
	if got := c.Broker(2).Image().BrokerConfigs("2")["follower.replication.throttled.rate"]; got != fmt.Sprint(mib) {
		t.Fatalf("broker 2 follower.replication.throttled.rate = %q", got)
	}
	c.WaitFor(2*time.Minute, func() error {
		if p := c.Partition("big", 0); p.Reassigning() || !slices.Equal(p.Replicas, []int32{2}) {
			l := c.Broker(2).Log("big", 0)
			if l == nil { // broker 2 has not created its replica yet
				return fmt.Errorf("big-0 still moving (no log on broker 2 yet)")
			}
			return fmt.Errorf("big-0 still moving (broker 2 has %d bytes)", l.Size())
		}
		return nil
	})
	took := time.Since(start)
	t.Logf("24 MiB moved in %v at a 1 MiB/s throttle", took)
	if took < 9*time.Second {
		t.Fatalf("24 MiB moved in %v: not held to 1 MiB/s (expected at least ~13 s)", took)
	}

	out, err = tool("--verify", "--reassignment-json-file", plan)
	if err != nil {
		t.Fatal(err)
	}
	hasLine(t, out, "Reassignment of partition big-0 is completed.")
	hasLine(t, out, "Clearing broker-level throttles on brokers 1,2")
	hasLine(t, out, "Clearing topic-level throttles on topic big")
	c.WaitFor(10*time.Second, func() error {
		im := c.Broker(2).Image()
		topic, _ := im.Topic("big")
		for _, k := range []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"} {
			if v, ok := topic.Configs[k]; ok {
				return fmt.Errorf("topic big still has %s=%s", k, v)
			}
		}
		for _, b := range []string{"1", "2"} {
			if cfg := im.BrokerConfigs(b); len(cfg) != 0 {
				return fmt.Errorf("broker %s still has dynamic configs %v", b, cfg)
			}
		}
		if got := c.Partition("big", 0).Replicas; !slices.Equal(got, []int32{2}) {
			return fmt.Errorf("big-0 replicas %v", got)
		}
		return nil
	})
}
