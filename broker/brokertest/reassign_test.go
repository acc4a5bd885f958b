package brokertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/metadata"
	"weir/internal/testkit"
)

// alterReassignments sends one AlterPartitionReassignments request (nil
// replicas cancel) and returns each partition's error code by
// "topic-partition".
func alterReassignments(t *testing.T, cl *kgo.Client, topic string, targets map[int32][]int32) map[int32]int16 {
	t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = 20000
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for p, reps := range targets {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, reps
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	// Right after a broker is killed there may be no controller for a
	// moment (the client's "controller not available"): not yet.
	var resp *kmsg.AlterPartitionAssignmentsResponse
	testkit.CheckFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		resp, err = req.RequestWith(ctx, cl)
		return err
	})
	if resp.ErrorCode != 0 {
		t.Fatalf("AlterPartitionReassignments: top-level %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	out := map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rp.Partition] = rp.ErrorCode
			if rp.ErrorCode != 0 {
				t.Logf("%s-%d: %v: %s", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), deref(rp.ErrorMessage))
			}
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// listReassignments returns the ongoing reassignments by
// "topic-partition" as [replicas, adding, removing].
func listReassignments(t *testing.T, cl *kgo.Client) map[string][3][]int32 {
	t.Helper()
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	var resp *kmsg.ListPartitionReassignmentsResponse
	testkit.CheckFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		resp, err = req.RequestWith(ctx, cl)
		return err
	})
	out := map[string][3][]int32{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)] = [3][]int32{rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas}
		}
	}
	return out
}

// TestReassignPartitions moves partitions between brokers of a 3-broker
// cluster: a replica moves off its broker (the data follows, the old log
// is deleted), the leader is reassigned away (a new leader is elected
// from the target), a reassignment onto a stopped broker stays in
// progress, is listed, and is cancelled (reverted); bad input gets
// Kafka's error codes and changes nothing.
func TestReassignPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("3-broker cluster")
	}
	c := NewCluster(t)
	c.CreateTopic("mv", 2, 1, nil) // mv-0 on [1], mv-1 on [2]
	if got := c.Partition("mv", 0).Replicas; !slices.Equal(got, []int32{1}) {
		t.Fatalf("mv-0 replicas %v, want [1]", got)
	}
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	produceSync(t, cl, "mv", 0, seq("a", 0, 100)...)
	dir := filepath.Join(c.Broker(1).DataDir())

	// Bad input: nothing changes.
	codes := alterReassignments(t, cl, "mv", map[int32][]int32{0: {1, 1}, 1: {2, 9}, 7: {1}})
	if codes[0] != kerr.InvalidReplicaAssignment.Code || codes[1] != kerr.InvalidReplicaAssignment.Code || codes[7] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("bad reassignments answered %v", codes)
	}
	codes = alterReassignments(t, cl, "nope", map[int32][]int32{0: {1}})
	if codes[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("reassigning an unknown topic answered %v", codes)
	}
	codes = alterReassignments(t, cl, "mv", map[int32][]int32{0: nil})
	if codes[0] != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("cancelling with nothing in progress answered %v", codes)
	}
	if p := c.Partition("mv", 0); !slices.Equal(p.Replicas, []int32{1}) || p.Reassigning() {
		t.Fatalf("refused reassignments changed mv-0: %+v", p)
	}

	// mv-0 from [1] to [2 3]: the leader (1) is removed.
	codes = alterReassignments(t, cl, "mv", map[int32][]int32{0: {2, 3}})
	if codes[0] != 0 {
		t.Fatalf("reassigning mv-0 answered %v", codes)
	}
	c.WaitFor(30*time.Second, func() error {
		p := c.Partition("mv", 0)
		if !slices.Equal(p.Replicas, []int32{2, 3}) || p.Reassigning() || len(p.ISR) != 2 {
			return fmt.Errorf("mv-0 %+v", p)
		}
		if l, err := c.LeaderOf("mv", 0); err != nil || l != 2 {
			return fmt.Errorf("mv-0 leader %d: %v", l, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "mv-0")); err == nil {
			return fmt.Errorf("broker 1 still has mv-0's log")
		}
		return nil
	})
	if l := listReassignments(t, cl); len(l) != 0 {
		t.Fatalf("reassignments listed after completion: %v", l)
	}
	produceSync(t, cl, "mv", 0, seq("a", 100, 110)...)
	if got := consumeAll(t, c, "mv", 0, 110); !slices.Equal(got, seq("a", 0, 110)) {
		t.Fatalf("mv-0 after the move holds %d records, want a0..a109", len(got))
	}

	// Onto a stopped broker: stays in progress until cancelled.
	c.Kill(3)
	codes = alterReassignments(t, cl, "mv", map[int32][]int32{1: {2, 3}})
	if codes[1] != 0 {
		t.Fatalf("reassigning mv-1 answered %v", codes)
	}
	l := listReassignments(t, cl)
	if got, ok := l["mv-1"]; !ok || !slices.Equal(got[0], []int32{2, 3}) || !slices.Equal(got[1], []int32{3}) || len(got[2]) != 0 {
		t.Fatalf("listed reassignments %v, want mv-1 replicas [2 3] adding [3]", l)
	}
	produceSync(t, cl, "mv", 1, "b0") // the partition keeps working
	codes = alterReassignments(t, cl, "mv", map[int32][]int32{1: nil})
	if codes[1] != 0 {
		t.Fatalf("cancelling mv-1 answered %v", codes)
	}
	c.WaitFor(10*time.Second, func() error {
		if p := c.Partition("mv", 1); !slices.Equal(p.Replicas, []int32{2}) || p.Reassigning() || !slices.Equal(p.ISR, []int32{2}) {
			return fmt.Errorf("mv-1 after cancel %+v, want replicas [2]", p)
		}
		return nil
	})
	if l := listReassignments(t, cl); len(l) != 0 {
		t.Fatalf("reassignments listed after cancel: %v", l)
	}
}

// TestReassignSurvivesControllerFailover: a reassignment in progress when
// the controller leader dies completes under the next controller (the
// reassignment lives in the replicated metadata; the new leader completes
// it at the partition leader's ISR change).
func TestReassignSurvivesControllerFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("3-broker cluster")
	}
	c := NewCluster(t)
	var ctrl int32 = -1
	c.WaitFor(10*time.Second, func() error {
		for _, b := range c.Brokers() {
			if b.Node().IsLeader() {
				ctrl = b.ID
				return nil
			}
		}
		return fmt.Errorf("no controller leader")
	})
	var others []int32
	for _, b := range c.Brokers() {
		if b.ID != ctrl {
			others = append(others, b.ID)
		}
	}
	lead, add := others[0], others[1]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.CreateTopicSpec(ctx, lead, metadata.TopicSpec{Name: "fo", Partitions: 1, ReplicationFactor: 1, Assignment: [][]int32{{lead}}})
	c.WaitFor(20*time.Second, func() error { _, err := c.LeaderOf("fo", 0); return err })
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	produceSync(t, cl, "fo", 0, seq("f", 0, 20)...)

	// The adding replica cannot fetch: the reassignment stays in progress.
	c.Network().Cut(add, lead, Kafka)
	if codes := alterReassignments(t, cl, "fo", map[int32][]int32{0: {add}}); codes[0] != 0 {
		t.Fatalf("reassigning fo-0 answered %v", codes)
	}
	c.WaitFor(10*time.Second, func() error {
		if p := c.Partition("fo", 0); !p.Reassigning() {
			return fmt.Errorf("fo-0 not reassigning: %+v", p)
		}
		return nil
	})
	c.Kill(ctrl)
	// The new controller's metadata holds the reassignment (the adding
	// replica still cannot fetch, so it cannot have completed). Asked of
	// the new leader and polled: c.Partition reads the first running
	// broker's image, which may not have applied the latest records yet
	// (a one-shot read failed twice on loaded machines, showing fo-0
	// before the reassignment).
	c.WaitFor(20*time.Second, func() error {
		for _, id := range others {
			if !c.Broker(id).Node().IsLeader() {
				continue
			}
			p, _ := c.Broker(id).Image().Partition("fo", 0)
			if !p.Reassigning() || !slices.Equal(p.AddingReplicas, []int32{add}) {
				return fmt.Errorf("after failover the new controller %d has fo-0 as %+v, want adding [%d]", id, p, add)
			}
			return nil
		}
		return fmt.Errorf("no new controller leader")
	})
	produceSync(t, cl, "fo", 0, seq("f", 20, 30)...)
	c.Network().Heal(add, lead, Kafka)
	c.WaitFor(30*time.Second, func() error {
		p := c.Partition("fo", 0)
		if !slices.Equal(p.Replicas, []int32{add}) || p.Reassigning() {
			return fmt.Errorf("fo-0 %+v", p)
		}
		if l, err := c.LeaderOf("fo", 0); err != nil || l != add {
			return fmt.Errorf("fo-0 leader %d: %v", l, err)
		}
		return nil
	})
	if got := consumeAll(t, c, "fo", 0, 30); !slices.Equal(got, seq("f", 0, 30)) {
		t.Fatalf("fo-0 after the move holds %v", got)
	}
}

// TestReassignAwayFromStoppedBroker: a partition reassigned away from a
// stopped broker completes without it (a removing replica need not catch
// up), and the broker deletes its stray log when it restarts.
func TestReassignAwayFromStoppedBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("3-broker cluster")
	}
	c := NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.CreateTopicSpec(ctx, 1, metadata.TopicSpec{Name: "st", Partitions: 1, ReplicationFactor: 2, Assignment: [][]int32{{1, 3}}})
	c.WaitFor(20*time.Second, func() error { _, err := c.LeaderOf("st", 0); return err })
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	produceSync(t, cl, "st", 0, seq("s", 0, 20)...)
	dir := filepath.Join(c.Broker(3).DataDir(), "st-0")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("broker 3 has no st-0 log: %v", err)
	}
	c.Kill(3)
	if codes := alterReassignments(t, cl, "st", map[int32][]int32{0: {1, 2}}); codes[0] != 0 {
		t.Fatalf("reassigning st-0 answered %v", codes)
	}
	c.WaitFor(30*time.Second, func() error {
		if p := c.Partition("st", 0); !slices.Equal(p.Replicas, []int32{1, 2}) || p.Reassigning() {
			return fmt.Errorf("st-0 %+v", p)
		}
		return nil
	})
	c.Restart(3)
	c.WaitFor(20*time.Second, func() error {
		if _, err := os.Stat(dir); err == nil {
			return fmt.Errorf("broker 3 still has %s", dir)
		}
		return nil
	})
	if got := consumeAll(t, c, "st", 0, 20); !slices.Equal(got, seq("s", 0, 20)) {
		t.Fatalf("st-0 holds %v", got)
	}
}
