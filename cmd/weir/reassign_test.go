package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest"
	"weir/internal/rebalance"
)

// TestClusterReassignAndRebalance: on 3 brokers with every replica on
// brokers 1 and 2, weir cluster rebalance plans spreading them over all
// three and, with --execute --throttle --wait, moves them, removes the
// throttles and leaves replicas and preferred leaders even; then
// weir cluster reassign plan/execute/status drains broker 1 of one
// topic; bad plans are refused naming the entry.
func TestClusterReassignAndRebalance(t *testing.T) {
	if testing.Short() {
		t.Skip("3-broker cluster")
	}
	c := brokertest.NewCluster(t, brokertest.Brokers(3))
	c.Kill(3)
	c.WaitFor(20*time.Second, func() error {
		if c.Broker(1).Image().Live(3) {
			return fmt.Errorf("broker 3 still live")
		}
		return nil
	})
	c.CreateTopic("a", 4, 2, nil)
	c.CreateTopic("b", 2, 1, nil)
	c.Restart(3)
	c.WaitFor(20*time.Second, func() error {
		for _, b := range c.Brokers() {
			if !b.Image().Live(3) {
				return fmt.Errorf("broker %d does not see broker 3 live", b.ID)
			}
		}
		return nil
	})
	addr := c.Addrs()[0]
	dir := t.TempDir()

	// Plan only: nothing moves.
	out, errOut, err := runWeir(t, "", "cluster", "rebalance", "--brokers", addr)
	if err != nil {
		t.Fatalf("rebalance: %v\n%s", err, errOut)
	}
	plan, err := rebalance.Decode([]byte(out))
	if err != nil || len(plan) == 0 {
		t.Fatalf("rebalance plan %q: %v (stderr %s)", out, err, errOut)
	}
	if !strings.Contains(errOut, "BROKER") || !strings.Contains(errOut, "partitions change") {
		t.Fatalf("rebalance table:\n%s", errOut)
	}
	if got := c.Partition("a", 0).Replicas; slices.Contains(got, 3) {
		t.Fatal("a plan-only rebalance moved replicas")
	}

	out = mustWeir(t, "", "cluster", "rebalance", "--brokers", addr, "--execute", "--throttle", "100000000", "--wait", "--out", filepath.Join(dir, "r.json"))
	for _, want := range []string{"The inter-broker throttle limit was set to 100000000 B/s", "Reassignment complete.", "Throttles removed.", "Preferred leaders elected"} {
		if !strings.Contains(out, want) {
			t.Fatalf("rebalance --execute output lacks %q:\n%s", want, out)
		}
	}
	reps, leaders := map[int32]int{}, map[int32]int{}
	for _, tp := range []struct {
		t string
		n int32
	}{{"a", 4}, {"b", 2}} {
		for p := int32(0); p < tp.n; p++ {
			mp := c.Partition(tp.t, p)
			for _, r := range mp.Replicas {
				reps[r]++
			}
			leaders[mp.Replicas[0]]++
		}
	}
	for id := int32(1); id <= 3; id++ {
		if reps[id] < 3 || reps[id] > 4 || leaders[id] < 1 || leaders[id] > 3 {
			t.Fatalf("after rebalance replicas %v preferred leaders %v", reps, leaders)
		}
	}
	im := c.Broker(1).Image()
	for _, id := range []string{"1", "2", "3"} {
		if cfg := im.BrokerConfigs(id); len(cfg) != 0 {
			t.Fatalf("broker %s keeps %v", id, cfg)
		}
	}

	// Drain broker 1 of topic a.
	planFile := filepath.Join(dir, "drain.json")
	mustWeir(t, "", "cluster", "reassign", "plan", "--brokers", addr, "--topics", "a", "--broker-ids", "2,3", "--out", planFile)
	out = mustWeir(t, "", "cluster", "reassign", "execute", planFile, "--brokers", addr)
	if !strings.Contains(out, "Started reassigning") {
		t.Fatalf("execute output:\n%s", out)
	}
	c.WaitFor(30*time.Second, func() error {
		out, _, err := runWeir(t, "", "cluster", "reassign", "status", planFile, "--brokers", addr)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "0 of ") || !strings.Contains(out, "Throttles removed.") {
			return fmt.Errorf("status:\n%s", out)
		}
		return nil
	})
	for p := int32(0); p < 4; p++ {
		if got := c.Partition("a", p).Replicas; slices.Contains(got, 1) {
			t.Fatalf("a-%d still on broker 1: %v", p, got)
		}
	}

	// Bad plans.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,2]}]}`), 0o644)
	if _, _, err := runWeir(t, "", "cluster", "reassign", "execute", bad, "--brokers", addr); err == nil || !strings.Contains(err.Error(), "a-0 lists broker 2 twice") {
		t.Fatalf("duplicate replica: %v", err)
	}
	os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,9]}]}`), 0o644)
	if _, _, err := runWeir(t, "", "cluster", "reassign", "execute", bad, "--brokers", addr); err == nil || !strings.Contains(err.Error(), "broker 9 is not a live broker") {
		t.Fatalf("unknown broker: %v", err)
	}
}
