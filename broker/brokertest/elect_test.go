package brokertest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/kafkatools"
)

// TestLeaderElectionCommand runs Kafka 4.4's kafka-leader-election
// against a 3-broker cluster: with the preferred leader of elect-0 killed
// a preferred election is refused, an unclean one makes the live
// out-of-ISR replica of u-0 leader (and cannot help solo-0, whose only
// replica is down); once the broker is back in the ISRs a preferred
// election over all partitions gives it its partitions back. The output
// is Kafka's.
func TestLeaderElectionCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	kafkatools.Require(t)
	c := NewCluster(t)
	c.CreateTopic("elect", 3, 3, nil) // elect-0 replicas [1 2 3]
	c.CreateTopic("u", 1, 2, nil)     // [1 2]
	c.CreateTopic("solo", 1, 1, nil)  // [1]
	for _, tp := range []struct {
		topic string
		reps  []int32
	}{{"elect", []int32{1, 2, 3}}, {"u", []int32{1, 2}}, {"solo", []int32{1}}} {
		if got := c.Partition(tp.topic, 0).Replicas; !slices.Equal(got, tp.reps) {
			t.Fatalf("%s-0 replicas %v, want %v", tp.topic, got, tp.reps)
		}
	}
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	produceSync(t, cl, "elect", 0, "a", "b", "c")
	produceSync(t, cl, "u", 0, "x")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kt := kafkaTool{t: t, ctx: ctx, class: kafkatools.LeaderElectionCommand, name: "kafka-leader-election", bootstrap: []string{"--bootstrap-server", c.Broker(2).Addr()}}
	tool, mustTool := kt.run, kt.must

	// Broker 2 stops fetching from 1: it leaves u-0's ISR.
	c.Network().Cut(2, 1, Kafka)
	c.WaitFor(20*time.Second, func() error {
		if isr := c.Partition("u", 0).ISR; !slices.Equal(isr, []int32{1}) {
			return fmt.Errorf("u-0 ISR %v, want [1]", isr)
		}
		return nil
	})
	c.Kill(1)
	c.Network().Heal(2, 1, Kafka)
	c.WaitFor(20*time.Second, func() error {
		if l, err := c.LeaderOf("elect", 0); err != nil || l == 1 {
			return fmt.Errorf("elect-0 leader %d: %v", l, err)
		}
		if p := c.Partition("u", 0); p.Leader != -1 {
			return fmt.Errorf("u-0 leader %d, want offline", p.Leader)
		}
		return nil
	})

	out, err := tool("--election-type", "preferred", "--topic", "elect", "--partition", "0")
	if err == nil {
		t.Fatal("preferred election with the preferred replica down succeeded")
	}
	hasLine(t, out, "Error completing leader election (PREFERRED) for partition: elect-0: org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: The preferred leader was not available.")

	out, err = tool("--election-type", "unclean", "--all-topic-partitions")
	if err == nil {
		t.Fatal("unclean election of every partition succeeded though solo-0 has no live replica")
	}
	hasLine(t, out, "Successfully completed leader election (UNCLEAN) for partitions u-0")
	hasLine(t, out, "Error completing leader election (UNCLEAN) for partition: solo-0: org.apache.kafka.common.errors.EligibleLeadersNotAvailableException: Eligible topic partition leaders are not available.")
	c.WaitFor(20*time.Second, func() error {
		if l, err := c.LeaderOf("u", 0); err != nil || l != 2 {
			return fmt.Errorf("u-0 leader %d: %v", l, err)
		}
		if isr := c.Partition("u", 0).ISR; !slices.Equal(isr, []int32{2}) {
			return fmt.Errorf("u-0 ISR %v, want [2]", isr)
		}
		return nil
	})
	out = mustTool("--election-type", "unclean", "--topic", "u", "--partition", "0")
	hasLine(t, out, "Valid replica already elected for partitions u-0")
	produceSync(t, cl, "u", 0, "y") // the unclean leader takes writes

	c.Restart(1)
	c.WaitFor(30*time.Second, func() error {
		for _, topic := range []string{"elect", "u"} {
			if isr := c.Partition(topic, 0).ISR; !slices.Contains(isr, 1) {
				return fmt.Errorf("%s-0 ISR %v lacks 1", topic, isr)
			}
		}
		if l, err := c.LeaderOf("solo", 0); err != nil || l != 1 {
			return fmt.Errorf("solo-0 leader %d: %v", l, err)
		}
		return nil
	})
	// Leadership stays on the survivors until an election moves it.
	if l, _ := c.LeaderOf("elect", 0); l == 1 {
		t.Fatal("elect-0 went back to broker 1 without an election")
	}
	out = mustTool("--election-type", "preferred", "--all-topic-partitions")
	const prefix = "Successfully completed leader election (PREFERRED) for partitions "
	var elected []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), prefix); ok {
			elected = strings.Split(rest, ", ")
		}
	}
	sort.Strings(elected)
	if !slices.Equal(elected, []string{"elect-0", "u-0"}) {
		t.Fatalf("preferred election elected %v, want [elect-0 u-0]:\n%s", elected, out)
	}
	c.WaitFor(20*time.Second, func() error {
		for _, topic := range []string{"elect", "u"} {
			if l, err := c.LeaderOf(topic, 0); err != nil || l != 1 {
				return fmt.Errorf("%s-0 leader %d: %v", topic, l, err)
			}
		}
		return nil
	})
	out = mustTool("--election-type", "preferred", "--topic", "elect", "--partition", "0")
	hasLine(t, out, "Valid replica already elected for partitions elect-0")

	// The preferred leader serves what was written before.
	produceSync(t, cl, "elect", 0, "d")
	got := consumeAll(t, c, "elect", 0, 4)
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("elect-0 holds %v, want %v", got, want)
	}
}
