package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzTransactionsReadCommitted: franz-go transactional producers
// against weir. Committed transactions are read by a read_committed
// consumer, aborted ones are not (but are by read_uncommitted), and an
// open transaction holds read_committed back at its first offset until it
// commits; DescribeProducers shows it meanwhile.
func TestFranzTransactionsReadCommitted(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, b, "etx", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := b.client(kgo.TransactionalID("etx-producer"), kgo.DefaultProduceTopic("etx"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(30*time.Second))
	txn := func(commit bool, vals ...string) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: int32(i % 2)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit=%v): %v", commit, err)
		}
	}
	txn(true, "c1", "c2", "c3")
	txn(false, "a1", "a2")
	txn(true, "c4", "c5")

	read := func(level kgo.IsolationLevel, want int) []string {
		t.Helper()
		cl := b.client(kgo.ConsumeTopics("etx"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond))
		defer cl.Close()
		var got []string
		deadline := time.Now().Add(10 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			pcancel()
		}
		// Nothing more arrives.
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		pcancel()
		slices.Sort(got)
		return got
	}
	if got := read(kgo.ReadCommitted(), 5); !slices.Equal(got, []string{"c1", "c2", "c3", "c4", "c5"}) {
		t.Fatalf("read_committed: %v", got)
	}
	if got := read(kgo.ReadUncommitted(), 7); !slices.Equal(got, []string{"a1", "a2", "c1", "c2", "c3", "c4", "c5"}) {
		t.Fatalf("read_uncommitted: %v", got)
	}

	// An open transaction holds read_committed back.
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("o1"), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	plain := b.client(kgo.DefaultProduceTopic("etx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("after-open"), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := read(kgo.ReadCommitted(), 5); !slices.Equal(got, []string{"c1", "c2", "c3", "c4", "c5"}) {
		t.Fatalf("read_committed with a transaction open: %v (the record after it must wait too)", got)
	}
	rc := dialRaw(t, b.addr)
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "etx", []int32{0}
	req.Topics = append(req.Topics, rt)
	open := 0
	for _, ap := range rc.roundTrip(req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ActiveProducers {
		if ap.CurrentTxnStartOffset >= 0 {
			open++
		}
	}
	if open != 1 {
		t.Fatalf("DescribeProducers shows %d open transactions, want 1", open)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	want := []string{"after-open", "c1", "c2", "c3", "c4", "c5", "o1"}
	if got := read(kgo.ReadCommitted(), len(want)); !slices.Equal(got, want) {
		t.Fatalf("read_committed after the commit: %v, want %v", got, want)
	}
}
