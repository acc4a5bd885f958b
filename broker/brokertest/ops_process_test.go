package brokertest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/internal/testkit"
)

// TestProcessGrowDrainDecommission is issue 18's operations test on
// `weir broker` processes, under a steady acks=all load: broker 4 is
// added (an observer of the controller quorum), partitions are
// reassigned onto it with a throttle (weir cluster rebalance), broker 1
// is drained (rebalance over 2,3,4) and decommissioned, and controller
// voter 1 is replaced by 4 (add-voter, remove-voter). Every acknowledged
// record is there exactly once and in order at the end, and no partition
// is without a leader for more than 3 s at any time.
func TestProcessGrowDrainDecommission(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test")
	}
	const (
		topic = "ops"
		parts = 6
	)
	c := newProcCluster(t, 3)
	id4 := c.AddNode()
	tryWeir := func(args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, c.Bin(), append(args, "--brokers", c.Addr(2)+","+c.Addr(3))...).CombinedOutput()
		t.Logf("weir %s:\n%s", strings.Join(args, " "), out)
		if err != nil {
			return string(out), fmt.Errorf("weir %v: %v\n%s", args, err, out)
		}
		return string(out), nil
	}
	weir := func(args ...string) string {
		t.Helper()
		out, err := tryWeir(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	c.createTopic(topic, parts, nil, map[string]string{"min.insync.replicas": "2"})
	ld := startSeqLoad(t, c.Seeds(), topic, parts, 100, 5*time.Millisecond)

	// Offline watch: the longest time any partition had no live leader.
	var (
		offMu      sync.Mutex
		maxOffline time.Duration
		worst      string
	)
	stopWatch, watchDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watchDone)
		since := map[int32]time.Time{}
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(100 * time.Millisecond):
			}
			md, err := c.metadata(topic)
			if err != nil || len(md.Topics) == 0 {
				continue
			}
			live := map[int32]bool{}
			for _, b := range md.Brokers {
				live[b.NodeID] = true
			}
			now := time.Now()
			for _, p := range md.Topics[0].Partitions {
				if p.Leader >= 0 && live[p.Leader] {
					delete(since, p.Partition)
					continue
				}
				if _, ok := since[p.Partition]; !ok {
					since[p.Partition] = now
				}
				if d := now.Sub(since[p.Partition]); d > maxOffline {
					offMu.Lock()
					maxOffline, worst = d, fmt.Sprintf("%s-%d", topic, p.Partition)
					offMu.Unlock()
				}
			}
		}
	}()
	time.Sleep(time.Second)

	// Broker 4 joins; replicas move onto it, throttled.
	c.Start(id4)
	testkit.CheckFor(t, 30*time.Second, func() error {
		md, err := c.metadata(topic)
		if err != nil {
			return err
		}
		for _, b := range md.Brokers {
			if b.NodeID == 4 {
				return nil
			}
		}
		return fmt.Errorf("broker 4 not registered")
	})
	// Until every broker the command asks lists broker 4 live.
	var out string
	testkit.CheckFor(t, 3*time.Minute, func() error {
		var err error
		out, err = tryWeir("cluster", "rebalance", "--topics", topic, "--broker-ids", "1,2,3,4", "--execute", "--throttle", "5000000", "--wait")
		return err
	})
	if !strings.Contains(out, "Reassignment complete.") {
		t.Fatalf("rebalance onto broker 4:\n%s", out)
	}
	on := func(id int32) int {
		md, err := c.metadata(topic)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range md.Topics[0].Partitions {
			if slices.Contains(p.Replicas, id) {
				n++
			}
		}
		return n
	}
	if n := on(4); n < 3 {
		t.Fatalf("broker 4 holds %d replicas after the rebalance", n)
	}

	// Drain broker 1.
	out = weir("cluster", "rebalance", "--topics", topic, "--broker-ids", "2,3,4", "--execute", "--throttle", "5000000", "--wait")
	if !strings.Contains(out, "Reassignment complete.") {
		t.Fatalf("draining broker 1:\n%s", out)
	}
	if n := on(1); n != 0 {
		t.Fatalf("broker 1 still holds %d replicas", n)
	}

	// Replace controller voter 1 by 4, then decommission broker 1.
	out = weir("cluster", "add-voter", "--node-id", "4", "--controller-addr", c.ControllerAddr(id4))
	if !strings.Contains(out, "voters [1,2,3,4]") {
		t.Fatalf("add-voter:\n%s", out)
	}
	out = weir("cluster", "remove-voter", "--node-id", "1")
	if !strings.Contains(out, "voters [2,3,4]") {
		t.Fatalf("remove-voter:\n%s", out)
	}
	c.Kill(1)
	testkit.CheckFor(t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b, err := exec.CommandContext(ctx, c.Bin(), "cluster", "decommission", "--node-id", "1", "--force", "--brokers", c.Addr(2)).CombinedOutput()
		if err != nil || !strings.Contains(string(b), "broker 1 decommissioned") {
			return fmt.Errorf("decommission: %v\n%s", err, b)
		}
		return nil
	})
	time.Sleep(time.Second) // load after the changes
	ld.finish(t)
	close(stopWatch)
	<-watchDone

	total := ld.check(t, readAllPartitions(t, c.Seeds()[1:], topic, parts))
	failed, firstErrs := ld.failures()
	offMu.Lock()
	defer offMu.Unlock()
	t.Logf("%d records acknowledged, %d failed (first errors %v); longest partition without a leader: %v (%s)", total, failed, firstErrs, maxOffline, worst)
	if total < 1000 {
		t.Fatalf("only %d records acknowledged", total)
	}
	if maxOffline > 3*time.Second {
		t.Fatalf("%s had no leader for %v (> 3 s)", worst, maxOffline)
	}
}
