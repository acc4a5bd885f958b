package streams

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/txntest"
)

// TestExactlyOnceRestoreOutlastsTransactionTimeout: a rebalance hands a
// busy exactly-once instance a task whose restore lasts well past the
// instance's transaction timeout, because the task's changelog holds
// another producer's open transaction, which the restore waits out (as
// it waits out a killed owner's). Had the instance's own transaction
// been open with writes across that restore, the coordinator would
// abort it and fence the producer (a new epoch), and the instance would
// stop on INVALID_TXN_STATE or PRODUCER_FENCED; instead the rebalance
// runs between two transactions, the instance goes on, and every count
// is exact.
func TestExactlyOnceRestoreOutlastsTransactionTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("a restore that waits out a 12 s transaction")
	}
	const (
		n      = 60_000
		keys   = 500
		txnTTL = 3 * time.Second  // the instances' transaction timeout
		hangTT = 12 * time.Second // the open transaction in the changelog
		app    = "rx"
	)
	b := testbroker.Start(t, testbroker.Config("transaction.abort.timed.out.transaction.cleanup.interval.ms", "100"))
	b.CreateTopic("rxevents", 2, nil)
	b.CreateTopic("rxcounts", 2, nil)
	bld := NewBuilder()
	Count(GroupByKey(From(bld, "rxevents", String(), Bytes()), String(), Bytes()), "counts").
		ToStream().To("rxcounts", String(), Int64())
	tp, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	// CacheMaxBytes 1: every update is written to the changelog as it
	// happens (Kafka Streams' cache.max.bytes.buffering=0), so the
	// transactions have writes between commits, as a GroupBy's
	// repartition records do; with a cache they would write only at the
	// commit.
	// CommitInterval 1 s, ten heartbeats: a rebalance is mostly seen
	// by a heartbeat in the middle of a transaction, not by the one each
	// commit forces.
	eos := func(c *Config) {
		c.ExactlyOnce, c.TransactionTimeout, c.CacheMaxBytes, c.CommitInterval = true, txnTTL, 1, time.Second
	}
	recs, want := countInput("rxevents", n, keys, 5)
	cl := b.Client()
	produceAll(t, cl, recs[:n/4])

	inA := startInstance(t, tp, []string{b.Addr}, app, eos)
	inB := startInstance(t, tp, []string{b.Addr}, app, eos)
	alive := func(in *instance, name string) {
		select {
		case err := <-in.errc:
			t.Fatalf("instance %s stopped: %v", name, err)
		default:
		}
	}
	// Both own a task and have processed some of it.
	var taskB *task
	testbroker.CheckFor(t, 2*time.Minute, func() error {
		alive(inA, "A")
		alive(inB, "B")
		ta, tb := inA.app.taskList(), inB.app.taskList()
		if len(ta) != 1 || len(tb) != 1 {
			return fmt.Errorf("A owns %d tasks, B %d; want one each", len(ta), len(tb))
		}
		if inA.app.txns.Load() == 0 || inB.app.txns.Load() == 0 {
			return errors.New("no transaction committed yet")
		}
		taskB = tb[0]
		return nil
	})

	// A stays busy: the rest of the input arrives steadily.
	feedDone := make(chan error, 1)
	go func() {
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		rest := recs[n/4:]
		for len(rest) > 0 {
			<-tick.C
			k := min(len(rest), 100)
			if err := produceErr(context.Background(), cl, rest[:k]); err != nil {
				feedDone <- err
				return
			}
			rest = rest[k:]
		}
		feedDone <- nil
	}()

	// An open transaction in B's task's changelog, never ended: the next
	// owner's restore waits until the coordinator aborts it.
	changelog := app + "-counts-changelog"
	hang := b.Client(kgo.TransactionalID("rx-hang"), kgo.TransactionTimeout(hangTT), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := hang.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := hang.ProduceSync(context.Background(), &kgo.Record{Topic: changelog, Partition: taskB.partition, Key: []byte("hang"), Value: []byte("never committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	hung := time.Now()

	inB.stop(t)
	stopped := time.Since(hung)
	testbroker.CheckFor(t, 2*time.Minute, func() error {
		alive(inA, "A")
		for _, m := range inA.app.Metrics() {
			if m.Task == taskB.id && m.Processed > 0 {
				return nil
			}
		}
		return fmt.Errorf("A has not processed records of %s yet", taskB.id)
	})
	took := time.Since(hung)
	if err := <-feedDone; err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	testbroker.CheckFor(t, 2*time.Minute, func() error {
		alive(inA, "A")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return groupCaughtUpTxn(ctx, adm, b.Addr, app, "rxevents", false)
	})
	inA.stop(t)
	checkUpdatesOnce(t, txntest.ReadCommittedSettled(t, b.Addr, "rxcounts"), want)
	t.Logf("B stopped %s after the changelog's transaction opened; A processed %s's records %s after it (its transaction timeout %s); %d transactions committed, %d aborted; exact counts for %d keys",
		stopped.Round(time.Millisecond), taskB.id, took.Round(time.Millisecond), txnTTL, inA.app.txns.Load(), inA.app.aborts.Load(), len(want))
	if took < txnTTL {
		t.Fatalf("A processed %s's records %s after the changelog's transaction opened, within its own transaction timeout %s: the test proved nothing", taskB.id, took, txnTTL)
	}
}
