package brokertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsetsEarliestEpoch: after a leader change, ListOffsets
// earliest (-2) and earliest-local (-4) answer the log start offset with
// the leader epoch its records were written in (Kafka's earliest
// leader-epoch cache entry), latest (-1) with the current leader epoch,
// and latest-tiered (-5) -1 with epoch -1.
func TestListOffsetsEarliestEpoch(t *testing.T) {
	if testing.Short() {
		t.Skip("3-broker cluster")
	}
	c := NewCluster(t, Brokers(3))
	c.CreateTopic("loepoch", 1, 3, nil)
	cl := c.Client(kgo.DefaultProduceTopic("loepoch"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	first := c.Partition("loepoch", 0)
	c.Kill(first.Leader)
	c.WaitFor(30*time.Second, func() error {
		p := c.Partition("loepoch", 0)
		if p.Leader < 0 || p.Leader == first.Leader {
			return fmt.Errorf("leader still %d", p.Leader)
		}
		return nil
	})
	c.WaitFor(30*time.Second, func() error {
		return cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte{9}}).FirstErr()
	})
	now := c.Partition("loepoch", 0)
	if now.LeaderEpoch <= first.LeaderEpoch {
		t.Fatalf("leader epoch %d after the change, was %d", now.LeaderEpoch, first.LeaderEpoch)
	}
	query := func(ts int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		var out kmsg.ListOffsetsResponseTopicPartition
		c.WaitFor(30*time.Second, func() error {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "loepoch"
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(context.Background(), cl)
			if err != nil {
				return err
			}
			if resp.Version < 9 {
				return fmt.Errorf("ListOffsets v%d", resp.Version)
			}
			out = resp.Topics[0].Partitions[0]
			if out.ErrorCode != 0 {
				return fmt.Errorf("error %d", out.ErrorCode)
			}
			return nil
		})
		return out
	}
	for _, ts := range []int64{-2, -4} {
		if p := query(ts); p.Offset != 0 || p.LeaderEpoch != first.LeaderEpoch || p.Timestamp != -1 {
			t.Errorf("timestamp %d: %+v, want offset 0 epoch %d", ts, p, first.LeaderEpoch)
		}
	}
	if p := query(-1); p.Offset != 6 || p.LeaderEpoch != now.LeaderEpoch {
		t.Errorf("latest: %+v, want offset 6 epoch %d", p, now.LeaderEpoch)
	}
	if p := query(-5); p.Offset != -1 || p.LeaderEpoch != -1 || p.Timestamp != -1 {
		t.Errorf("latest-tiered: %+v", p)
	}
}
