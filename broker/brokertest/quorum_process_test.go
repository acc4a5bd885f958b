package brokertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/controller"
	"weir/internal/testkit"
)

// procQuorum is DescribeQuorum through the first broker of seeds that
// answers: voter ids, observer ids, leader.
func procQuorum(seeds []string) (voters, observers []int32, leader int32, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		return nil, nil, -1, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil, -1, err
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return nil, nil, -1, fmt.Errorf("DescribeQuorum: error %d", p.ErrorCode)
	}
	for _, v := range p.CurrentVoters {
		voters = append(voters, v.ReplicaID)
	}
	for _, o := range p.Observers {
		observers = append(observers, o.ReplicaID)
	}
	return voters, observers, p.LeaderID, nil
}

// TestProcessReplaceVoter: `weir broker` processes; a fourth broker is
// started with an id outside --controller-voters (it joins as an
// observer), `weir cluster add-voter` makes it a voter, `remove-voter`
// removes voter 1, which is then killed (SIGKILL) and decommissioned.
// The new quorum {2,3,4} keeps a majority when broker 4 restarts and
// when voter 2 is killed, and the records written before, during and
// after are all there.
func TestProcessReplaceVoter(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	c := newProcCluster(t, 3)
	id4 := c.AddNode()
	weir := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, c.Bin(), append(args, "--brokers", c.Addr(2)+","+c.Addr(3))...).CombinedOutput()
		if err != nil {
			t.Fatalf("weir %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	testkit.CheckFor(t, 30*time.Second, func() error { // until all three registered
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, c.Bin(), "topic", "create", "replaced", "--partitions", "3", "--replication-factor", "3", "--if-not-exists", "--brokers", c.Addr(2)).CombinedOutput()
		if err != nil {
			return fmt.Errorf("topic create: %v\n%s", err, out)
		}
		return nil
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.DefaultProduceTopic("replaced"), kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var sent int
	produce := func(n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r%d", sent))).FirstErr(); err != nil {
				t.Fatalf("producing r%d: %v", sent, err)
			}
			sent++
		}
	}
	produce(50)

	c.Start(id4) // not in --controller-voters: an observer
	testkit.CheckFor(t, 30*time.Second, func() error {
		v, o, _, err := procQuorum(c.Seeds())
		if err != nil || fmt.Sprint(v, o) != "[1 2 3] [4]" {
			return fmt.Errorf("quorum %v %v: %v", v, o, err)
		}
		return nil
	})
	out := weir("cluster", "add-voter", "--node-id", "4", "--controller-addr", c.ControllerAddr(id4))
	if !strings.Contains(out, "voters [1,2,3,4]") {
		t.Fatalf("add-voter:\n%s", out)
	}
	produce(50)
	out = weir("cluster", "remove-voter", "--node-id", "1")
	if !strings.Contains(out, "voters [2,3,4], observers [1]") {
		t.Fatalf("remove-voter:\n%s", out)
	}
	c.Kill(1)
	produce(50)
	testkit.CheckFor(t, 30*time.Second, func() error {
		v, o, _, err := procQuorum(c.Seeds()[1:])
		if err != nil || fmt.Sprint(v) != "[2 3 4]" {
			return fmt.Errorf("quorum %v %v: %v", v, o, err)
		}
		return nil
	})
	var dec string
	testkit.CheckFor(t, 30*time.Second, func() error {
		// Until the controller fences the killed broker it counts as running.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b, err := exec.CommandContext(ctx, c.Bin(), "cluster", "decommission", "--node-id", "1", "--force", "--brokers", c.Addr(2)).CombinedOutput()
		dec = string(b)
		if err != nil {
			return fmt.Errorf("decommission: %v\n%s", err, b)
		}
		return nil
	})
	if !strings.Contains(dec, "broker 1 decommissioned") {
		t.Fatalf("decommission:\n%s", dec)
	}
	testkit.CheckFor(t, 30*time.Second, func() error {
		v, o, _, err := procQuorum(c.Seeds()[1:])
		if err != nil || fmt.Sprint(v, o) != "[2 3 4] []" {
			return fmt.Errorf("quorum %v %v: %v", v, o, err)
		}
		return nil
	})

	// Broker 4 restarts as a voter (its Raft state says so), though
	// --controller-voters does not name it; its meta.properties is
	// Kafka's.
	c.Kill(id4)
	c.Start(id4)
	props, err := readPropsFile(filepath.Join(c.DataDir(id4), "controller", controller.MetaPropertiesFile))
	if err != nil || props["node.id"] != "4" || props["version"] != "1" || props["cluster.id"] == "" || props["directory.id"] == "" {
		t.Fatalf("meta.properties of broker 4: %v %v", props, err)
	}
	produce(50)
	// Voter 2 killed: 3 and 4 are a majority of {2,3,4}.
	c.Kill(2)
	testkit.CheckFor(t, 30*time.Second, func() error {
		v, _, leader, err := procQuorum(c.Seeds()[2:])
		if err != nil || fmt.Sprint(v) != "[2 3 4]" || (leader != 3 && leader != 4) {
			return fmt.Errorf("quorum %v leader %d: %v", v, leader, err)
		}
		return nil
	})
	produce(50)

	// Every record is there once.
	content := readAllPartitions(t, c.Seeds()[2:], "replaced", 3)
	seen := map[string]int{}
	for _, pc := range content {
		for _, v := range pc.values {
			seen[v]++
		}
	}
	for i := 0; i < sent; i++ {
		if n := seen[fmt.Sprintf("r%d", i)]; n != 1 {
			t.Errorf("record r%d is there %d times", i, n)
		}
	}
	if len(seen) != sent {
		t.Errorf("%d distinct records read, %d sent", len(seen), sent)
	}
}

func readPropsFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out, nil
}
