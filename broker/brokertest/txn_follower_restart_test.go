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

	"weir/broker/metadata"
)

// TestOpenTransactionSurvivesFollowerRestartThenLeaderLoss: a transaction
// is open on a partition when one of its followers restarts (it reopens
// its log and rebuilds the producer state from it), and more of the
// transaction is written after it is back; then the leader is lost and
// the restarted follower takes over. It must still know the transaction
// is open: read_committed shows none of it until it ends, an abort keeps
// all of it hidden, and a later committed transaction becomes visible. (A
// new leader that lost track of an open transaction would hand its
// records to read_committed consumers before the abort.) Three ways: the
// follower restarts while the transaction is open; it restarts so,
// without the producer-state snapshots its close wrote (as after kill -9:
// the state is rebuilt from the log alone); it is down when the
// transaction begins.
func TestOpenTransactionSurvivesFollowerRestartThenLeaderLoss(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("3-broker clusters")
	}
	for _, mode := range []string{"restart", "no_snapshot", "down_at_begin"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			followerRestartThenLeaderLoss(t, mode)
		})
	}
}

func followerRestartThenLeaderLoss(t *testing.T, mode string) {
	downAtBegin := mode == "down_at_begin"
	c := NewCluster(t, Brokers(3))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const txnID = "txfollower-producer"
	prod := c.Client(kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(60*time.Second))
	defer prod.Close()
	c.CreateTopic("warm", 1, 3, nil)
	coord := warmTransaction(ctx, t, c, prod, txnID, &kgo.Record{Topic: "warm", Value: []byte("warm")})
	// The partition's replicas in election order: its leader, the
	// follower that restarts (next in line), then the coordinator's
	// broker, which stays up.
	var others []int32
	for _, b := range c.Brokers() {
		if b.ID != coord {
			others = append(others, b.ID)
		}
	}
	leader, follower := others[0], others[1]
	const topic = "txfollower"
	c.CreateTopicSpec(ctx, coord, metadata.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}, Assignment: [][]int32{{leader, follower, coord}}})
	c.WaitFor(30*time.Second, func() error {
		l, err := c.LeaderOf(topic, 0)
		if err == nil && l != leader {
			err = fmt.Errorf("led by %d, want %d", l, leader)
		}
		return err
	})
	produce := func(vals ...string) {
		t.Helper()
		for _, v := range vals {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
	}
	inISR := func() {
		t.Helper()
		c.WaitFor(30*time.Second, func() error {
			if isr := c.Partition(topic, 0).ISR; !slices.Contains(isr, follower) {
				return fmt.Errorf("ISR %v without %d", isr, follower)
			}
			return nil
		})
	}
	if downAtBegin {
		c.Kill(follower)
	}
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce("open-1", "open-2")
	if !downAtBegin {
		dir := filepath.Join(c.Broker(follower).LogDirOf(topic, 0), topic+"-0")
		c.Kill(follower)
		if mode == "no_snapshot" {
			snaps, _ := filepath.Glob(filepath.Join(dir, "*.snapshot"))
			if len(snaps) == 0 {
				t.Fatalf("no producer-state snapshot in %s", dir)
			}
			for _, f := range snaps {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	c.Restart(follower)
	inISR()
	produce("open-3")
	inISR()

	c.Kill(leader)
	c.WaitFor(30*time.Second, func() error {
		l, err := c.LeaderOf(topic, 0)
		if err == nil && l != follower {
			err = fmt.Errorf("led by %d, want %d", l, follower)
		}
		return err
	})
	open := []string{"open-1", "open-2", "open-3"}
	if got := readValues(ctx, c, topic, 0, kgo.ReadUncommitted(), 3, 100*time.Millisecond); !slices.Equal(got, open) {
		t.Fatalf("read_uncommitted on the new leader: %v, want %v", got, open)
	}
	if got := readValues(ctx, c, topic, 0, kgo.ReadCommitted(), 0, 2*time.Second); len(got) != 0 {
		t.Fatalf("read_committed on the new leader (broker %d, restarted while the transaction was open) sees %v", follower, got)
	}
	if err := prod.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort after the leader change: %v", err)
	}
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce("committed")
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := readValues(ctx, c, topic, 0, kgo.ReadCommitted(), 1, 500*time.Millisecond); !slices.Equal(got, []string{"committed"}) {
		t.Fatalf("read_committed after the abort and a commit: %v, want [committed]", got)
	}
}
