package brokertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExplicitReplicaAssignment: CreateTopics with a replica assignment
// (kafka-topics --replica-assignment) places each partition's replicas
// as asked, led by the first live one; records are replicated there. An
// assignment naming a fenced broker starts led by the next live replica,
// with the fenced one outside the ISR until it returns; unknown brokers,
// repeats and partitions without a live replica are refused.
func TestExplicitReplicaAssignment(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, Brokers(3))
	create := func(name string, assignment ...[]int32) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for p, reps := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), reps
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, c.Client())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}

	want := [][]int32{{3, 1}, {2, 3}, {3, 2}}
	if r := create("placed", want...); r.ErrorCode != 0 {
		t.Fatalf("create: %v %s", kerr.ErrorForCode(r.ErrorCode), unptr(r.ErrorMessage))
	}
	c.WaitFor(20*time.Second, func() error {
		for p, reps := range want {
			got := c.Partition("placed", int32(p))
			if !slices.Equal(got.Replicas, reps) || got.Leader != reps[0] {
				return fmt.Errorf("partition %d: replicas %v leader %d, want %v led by %d", p, got.Replicas, got.Leader, reps, reps[0])
			}
		}
		return nil
	})
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range want {
		produceSync(t, cl, "placed", int32(p), seq(fmt.Sprint("p", p, "-"), 0, 20)...)
	}
	// The records are on exactly the assigned brokers.
	for p, reps := range want {
		for _, b := range c.Brokers() {
			l := b.Log("placed", int32(p))
			if hosts := slices.Contains(reps, b.ID); hosts != (l != nil) {
				t.Fatalf("partition %d on broker %d: log %v, assigned %v", p, b.ID, l != nil, reps)
			}
		}
		if got := consumeAll(t, c, "placed", int32(p), 20); !slices.Equal(got, seq(fmt.Sprint("p", p, "-"), 0, 20)) {
			t.Fatalf("partition %d: %v", p, got)
		}
	}

	// CreatePartitions with an assignment places the new partition too.
	grow := func(total int32, assignment ...[]int32) kmsg.CreatePartitionsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "placed", total
		for _, reps := range assignment {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			a.Replicas = reps
			rt.Assignment = append(rt.Assignment, a)
		}
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		resp, err := req.RequestWith(context.Background(), c.Client())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}
	for _, bad := range [][][]int32{{{1, 9}}, {{2, 2}}, {{1}}, {{1, 2}, {2, 3}}} {
		if r := grow(4, bad...); r.ErrorCode != kerr.InvalidReplicaAssignment.Code {
			t.Errorf("grow with %v: %v %s, want INVALID_REPLICA_ASSIGNMENT", bad, kerr.ErrorForCode(r.ErrorCode), unptr(r.ErrorMessage))
		}
	}
	if r := grow(4, []int32{1, 2}); r.ErrorCode != 0 {
		t.Fatalf("grow: %v %s", kerr.ErrorForCode(r.ErrorCode), unptr(r.ErrorMessage))
	}
	c.WaitFor(20*time.Second, func() error {
		if got := c.Partition("placed", 3); !slices.Equal(got.Replicas, []int32{1, 2}) || got.Leader != 1 {
			return fmt.Errorf("new partition 3: replicas %v leader %d, want [1 2] led by 1", got.Replicas, got.Leader)
		}
		// Every broker knows it: the producer's metadata may come from any.
		for _, b := range c.Brokers() {
			if tp, ok := b.Image().Topic("placed"); !ok || len(tp.Partitions) != 4 {
				return fmt.Errorf("broker %d does not know partition 3 yet", b.ID)
			}
		}
		return nil
	})
	// A fresh client: cl's metadata still says three partitions.
	produceSync(t, c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner())), "placed", 3, "grown")

	// A fenced broker first in the list: the next live replica leads.
	c.Kill(2)
	c.WaitFor(20*time.Second, func() error {
		if c.Broker(1).Image().Live(2) {
			return fmt.Errorf("broker 2 not fenced yet")
		}
		return nil
	})
	if r := create("around", []int32{2, 1, 3}); r.ErrorCode != 0 {
		t.Fatalf("create with a fenced broker: %v %s", kerr.ErrorForCode(r.ErrorCode), unptr(r.ErrorMessage))
	}
	c.WaitFor(20*time.Second, func() error {
		p := c.Partition("around", 0)
		if len(p.Replicas) == 0 {
			return fmt.Errorf("around-0 not known yet")
		}
		if p.Leader != 1 || !slices.Equal(p.Replicas, []int32{2, 1, 3}) || slices.Contains(p.ISR, 2) {
			t.Fatalf("around-0: leader %d replicas %v ISR %v; want led by 1, 2 outside the ISR", p.Leader, p.Replicas, p.ISR)
		}
		return nil
	})
	produceSync(t, cl, "around", 0, seq("a", 0, 10)...)
	c.Restart(2)
	c.WaitFor(20*time.Second, func() error {
		if isr := c.Partition("around", 0).ISR; !slices.Contains(isr, 2) {
			return fmt.Errorf("ISR %v without the returned broker 2", isr)
		}
		return nil
	})

	for name, a := range map[string][][]int32{
		"unknown": {{1, 9}},
		"repeat":  {{1, 1}},
		"uneven":  {{1, 2}, {3}},
		"gap":     nil, // partition 1 only: filled below
	} {
		var r kmsg.CreateTopicsResponseTopic
		if name == "gap" {
			req := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
			as := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			as.Partition, as.Replicas = 1, []int32{1}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, as)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(context.Background(), c.Client())
			if err != nil {
				t.Fatal(err)
			}
			r = resp.Topics[0]
		} else {
			r = create(name, a...)
		}
		if r.ErrorCode != kerr.InvalidReplicaAssignment.Code {
			t.Errorf("%s: %v %s, want INVALID_REPLICA_ASSIGNMENT", name, kerr.ErrorForCode(r.ErrorCode), unptr(r.ErrorMessage))
		}
	}
}

func unptr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
