package brokertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/kafkatools"
)

// reassignJSON is kafka-reassign-partitions' reassignment file.
type reassignJSON struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Replicas  []int32  `json:"replicas"`
		LogDirs   []string `json:"log_dirs,omitempty"`
	} `json:"partitions"`
}

// TestReassignPartitionsCommand runs Kafka 4.4's kafka-reassign-partitions
// against a 3-broker cluster: --generate proposes moving a topic onto
// brokers 2 and 3, --execute starts it, --verify reports it completed
// (and the data moved with it), a reassignment onto a stopped broker is
// reported in progress by --verify and --list and reverted by --cancel,
// and bad input (an unknown broker, a broker twice) is refused with
// Kafka's errors and changes nothing. The output is Kafka's.
func TestReassignPartitionsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	kafkatools.Require(t)
	c := NewCluster(t)
	c.CreateTopic("ra", 2, 2, nil) // ra-0 [1 2], ra-1 [2 3]
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	produceSync(t, cl, "ra", 0, seq("r", 0, 50)...)
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kt := kafkaTool{t: t, ctx: ctx, class: kafkatools.ReassignPartitionsCommand, name: "kafka-reassign-partitions", bootstrap: []string{"--bootstrap-server", c.Broker(2).Addr()}}
	tool, mustTool := kt.run, kt.must

	// --generate: the current assignment and a proposal on brokers 2, 3.
	out := mustTool("--generate", "--topics-to-move-json-file", file("move.json", `{"topics":[{"topic":"ra"}],"version":1}`), "--broker-list", "2,3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	i := slices.Index(lines, "Proposed partition reassignment configuration")
	if i < 0 || i+1 >= len(lines) || lines[0] != "Current partition replica assignment" {
		t.Fatalf("--generate output:\n%s", out)
	}
	var cur, proposed reassignJSON
	if err := json.Unmarshal([]byte(lines[1]), &cur); err != nil {
		t.Fatalf("current assignment %q: %v", lines[1], err)
	}
	if err := json.Unmarshal([]byte(lines[i+1]), &proposed); err != nil {
		t.Fatalf("proposed assignment %q: %v", lines[i+1], err)
	}
	if len(cur.Partitions) != 2 || !slices.Equal(cur.Partitions[0].Replicas, []int32{1, 2}) {
		t.Fatalf("current assignment %+v", cur)
	}
	for _, p := range proposed.Partitions {
		if s := slices.Sorted(slices.Values(p.Replicas)); !slices.Equal(s, []int32{2, 3}) {
			t.Fatalf("proposed %s-%d on %v, want brokers 2 and 3", p.Topic, p.Partition, p.Replicas)
		}
	}

	// --execute the proposal, --verify until complete.
	plan := file("plan.json", lines[i+1])
	out = mustTool("--execute", "--reassignment-json-file", plan)
	hasLine(t, out, "Current partition replica assignment")
	hasLine(t, out, "Successfully started partition reassignments for ra-0,ra-1")
	c.WaitFor(60*time.Second, func() error {
		out, err := tool("--verify", "--reassignment-json-file", plan)
		if err != nil {
			return err
		}
		for _, p := range []string{"ra-0", "ra-1"} {
			if !strings.Contains(out, "Reassignment of partition "+p+" is completed.") {
				return fmt.Errorf("%s not completed:\n%s", p, out)
			}
		}
		hasLine(t, out, "Clearing broker-level throttles on brokers 1,2,3")
		hasLine(t, out, "Clearing topic-level throttles on topic ra")
		return nil
	})
	for _, p := range proposed.Partitions {
		c.WaitFor(20*time.Second, func() error {
			if got := c.Partition("ra", p.Partition).Replicas; !slices.Equal(got, p.Replicas) {
				return fmt.Errorf("ra-%d replicas %v, want %v", p.Partition, got, p.Replicas)
			}
			return nil
		})
	}
	if got := consumeAll(t, c, "ra", 0, 50); !slices.Equal(got, seq("r", 0, 50)) {
		t.Fatalf("ra-0 after the move holds %v", got)
	}

	// Bad input: the tool's own checks and the broker's codes.
	out, err := tool("--execute", "--reassignment-json-file", file("bad1.json", `{"version":1,"partitions":[{"topic":"ra","partition":0,"replicas":[2,9]}]}`))
	if err == nil {
		t.Fatal("reassignment to an unknown broker succeeded")
	}
	hasLine(t, out, "Error: Unknown broker id 9")
	out, err = tool("--execute", "--reassignment-json-file", file("bad2.json", `{"version":1,"partitions":[{"topic":"ra","partition":0,"replicas":[2,2]}]}`))
	if err == nil {
		t.Fatal("reassignment with a duplicate replica succeeded")
	}
	if !strings.Contains(out, "duplicate") && !strings.Contains(out, "more than once") {
		t.Fatalf("duplicate replica refused without saying so:\n%s", out)
	}

	// Onto a broker that cannot reach the leader: in progress, listed,
	// then cancelled (the tool cancels a reassignment that removes a
	// replica).
	r0 := c.Partition("ra", 0).Replicas // [3 2] or [2 3]: broker 1 is free
	leader, err := c.LeaderOf("ra", 0)
	if err != nil {
		t.Fatal(err)
	}
	keep, drop := leader, r0[0]
	if drop == leader {
		drop = r0[1]
	}
	c.Network().Cut(1, leader, Kafka)
	defer c.Network().Heal(1, leader, Kafka)
	stuck := file("stuck.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"ra","partition":0,"replicas":[%d,1]}]}`, keep))
	out = mustTool("--execute", "--reassignment-json-file", stuck)
	hasLine(t, out, "Successfully started partition reassignment for ra-0")
	out = mustTool("--verify", "--preserve-throttles", "--reassignment-json-file", stuck)
	hasLine(t, out, "Reassignment of partition ra-0 is still in progress.")
	out = mustTool("--list")
	hasLine(t, out, "Current partition reassignments:")
	hasLine(t, out, fmt.Sprintf("ra-0: replicas: %d,1,%d. adding: 1. removing: %d.", keep, drop, drop))
	out = mustTool("--cancel", "--preserve-throttles", "--reassignment-json-file", stuck)
	hasLine(t, out, "Successfully cancelled partition reassignment for: ra-0")
	c.WaitFor(20*time.Second, func() error {
		if p := c.Partition("ra", 0); !slices.Equal(p.Replicas, r0) || p.Reassigning() {
			return fmt.Errorf("ra-0 after cancel %+v, want replicas %v", p, r0)
		}
		return nil
	})
	out = mustTool("--list")
	hasLine(t, out, "No partition reassignments found.")
}
