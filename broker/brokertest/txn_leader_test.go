package brokertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOpenTransactionSurvivesLeaderLoss: a franz-go transaction is open on
// a partition of a replication-factor-3 topic when its leader is killed.
// The new leader knows the open transaction (its producer state is rebuilt
// from its copy of the log): read_committed stays before it, a record
// written after it waits too, DescribeProducers shows it; the commit's
// marker reaches the new leader and everything becomes visible; the old
// leader returns and the partition moves back to it without losing that.
func TestOpenTransactionSurvivesLeaderLoss(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("3-broker cluster")
	}
	c := NewCluster(t, Brokers(3))
	const topic = "txleader"
	c.CreateTopic(topic, 3, 3, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := c.Admin()
	const txnID = "txleader-producer"
	prod := c.Client(kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(60*time.Second))
	defer prod.Close()
	produce := func(p int32, vals ...string) {
		t.Helper()
		for _, v := range vals {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
	}
	coord := warmTransaction(ctx, t, c, prod, txnID, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("warm")})
	// A partition not led by the transaction coordinator's broker: this
	// test is about the partition side.
	p, old := int32(-1), int32(-1)
	for i := int32(0); i < 3; i++ {
		if l, err := c.LeaderOf(topic, i); err == nil && l != coord {
			p, old = i, l
			break
		}
	}
	if p < 0 {
		t.Skip("every partition is led by the coordinator's broker")
	}

	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(p, "open-1", "open-2")
	plain := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer plain.Close()
	produceSync(t, plain, topic, p, "after-open")

	c.Kill(old)
	c.WaitFor(30*time.Second, func() error {
		l, err := c.LeaderOf(topic, p)
		if err != nil {
			return err
		}
		if l == old {
			return fmt.Errorf("still led by %d", old)
		}
		return nil
	})
	var before []string // the warm-up transaction's record, if it went to p
	first := int64(0)
	if p == 0 {
		before, first = []string{"warm"}, 2 // warm and its marker
	}
	want := append(slices.Clone(before), "open-1", "open-2", "after-open")
	if got := readValues(ctx, c, topic, p, kgo.ReadUncommitted(), len(want), 100*time.Millisecond); !slices.Equal(got, want) {
		t.Fatalf("read_uncommitted on the new leader: %v, want %v", got, want)
	}
	if got := readValues(ctx, c, topic, p, kgo.ReadCommitted(), len(before), 2*time.Second); !slices.Equal(got, before) {
		t.Fatalf("read_committed on the new leader sees %v while the transaction is open (want %v)", got, before)
	}
	c.WaitFor(20*time.Second, func() error {
		ds, err := adm.DescribeProducers(ctx, map[string]map[int32]struct{}{topic: {p: {}}})
		if err != nil {
			return err
		}
		for _, t := range ds {
			for _, dp := range t.Partitions {
				if dp.Err != nil {
					return dp.Err
				}
				for _, ap := range dp.ActiveProducers {
					if ap.CurrentTxnStartOffset == first {
						return nil
					}
				}
				return fmt.Errorf("no open transaction from offset %d in %+v", first, dp.ActiveProducers)
			}
		}
		return fmt.Errorf("no answer for %s-%d", topic, p)
	})

	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the leader change: %v", err)
	}
	if got := readValues(ctx, c, topic, p, kgo.ReadCommitted(), len(want), 100*time.Millisecond); !slices.Equal(got, want) {
		t.Fatalf("read_committed after the commit: %v, want %v", got, want)
	}
	c.Restart(old)
	c.WaitFor(30*time.Second, func() error {
		if isr := c.Partition(topic, p).ISR; !slices.Contains(isr, old) {
			return fmt.Errorf("ISR %v without %d", isr, old)
		}
		return nil
	})
}

// warmTransaction commits a first transaction of prod (transactional id
// txnID) holding rec, so that its coordinator is known, and returns the
// coordinator's broker.
func warmTransaction(ctx context.Context, t *testing.T, c *Cluster, prod *kgo.Client, txnID string, rec *kgo.Record) int32 {
	t.Helper()
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", rec.Value, err)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	coords := c.Admin().FindTxnCoordinators(ctx, txnID)
	if err := coords.Error(); err != nil {
		t.Fatal(err)
	}
	return coords[txnID].NodeID
}

// readValues reads topic/p from its start at isolation level until it
// has want values or 20 s have passed, then for settle more (what should
// not arrive), and returns the values read.
func readValues(ctx context.Context, c *Cluster, topic string, p int32, level kgo.IsolationLevel, want int, settle time.Duration) []string {
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		pcancel()
	}
	pctx, pcancel := context.WithTimeout(ctx, settle)
	cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	pcancel()
	return got
}
