package brokertest

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/group"
)

// The group coordinator is the leader of the group's __consumer_offsets
// partition: when that broker is lost, the new leader loads the
// partition and serves the group with its committed offsets.
func TestGroupCoordinatorFollowsLeadership(t *testing.T) {
	if testing.Short() {
		t.Skip("group coordinator moves across a three-node cluster")
	}
	t.Parallel()
	c := NewCluster(t, Brokers(3))
	c.CreateTopic("gt", 3, 3, nil)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	var recs []*kgo.Record
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Topic: "gt", Value: []byte(fmt.Sprintf("v%d", i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consume := func(n int) []string {
		t.Helper()
		cons := c.Client(kgo.ConsumerGroup("grp"), kgo.ConsumeTopics("gt"), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer cons.Close()
		var got []string
		for len(got) < n {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d", len(got), n)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		return got
	}
	if got := consume(30); len(got) != 30 {
		t.Fatalf("consumed %d", len(got))
	}
	if tp, ok := c.Brokers()[0].Image().Topic(group.OffsetsTopic); !ok || len(tp.Partitions[0].Replicas) != 3 {
		t.Fatalf("offsets topic %+v: want replication factor 3", tp)
	}
	killGroupCoordinator(t, c, "grp", 20*time.Second)
	// The committed offsets are served by the new coordinator.
	adm := kadm.NewClient(c.Client())
	c.WaitFor(20*time.Second, func() error {
		offs, err := adm.FetchOffsets(ctx, "grp")
		if err != nil {
			return err
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		if sum != 30 {
			return fmt.Errorf("committed offsets sum to %d, want 30", sum)
		}
		return nil
	})
	// A member rejoining resumes after them.
	var more []*kgo.Record
	for i := 30; i < 40; i++ {
		more = append(more, &kgo.Record{Topic: "gt", Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctx, more...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := consume(10)
	sort.Strings(got)
	for _, v := range got {
		var i int
		fmt.Sscanf(v, "v%d", &i)
		if i < 30 {
			t.Fatalf("re-consumed committed record %s after the coordinator moved: %v", v, got)
		}
	}
}

// killGroupCoordinator kills the coordinator of group grp (the leader of
// its __consumer_offsets partition) and waits, at most d, until another
// broker leads that partition; it returns the killed broker.
func killGroupCoordinator(t *testing.T, c *Cluster, grp string, d time.Duration) int32 {
	t.Helper()
	tp, ok := c.Brokers()[0].Image().Topic(group.OffsetsTopic)
	if !ok {
		t.Fatal("no offsets topic")
	}
	p := group.PartitionFor(grp, int32(len(tp.Partitions)))
	coord, err := c.LeaderOf(group.OffsetsTopic, p)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(coord)
	c.WaitFor(d, func() error {
		l, err := c.LeaderOf(group.OffsetsTopic, p)
		if err != nil {
			return err
		}
		if l == coord {
			return fmt.Errorf("coordinator did not move")
		}
		return nil
	})
	return coord
}
