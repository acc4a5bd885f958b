package group_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testkit"
)

// TestProcessTxnOffsetsSurviveKill: a consume-transform-produce loop with
// franz-go's GroupTransactSession (input offsets committed in the
// transaction that writes the output) runs against a `weir broker`
// process that is killed with SIGKILL twice mid-stream and restarted over
// its data directory. The loop starts a new session whenever one fails.
// At the end the group's committed offsets are the input's end and the
// output, read with read_committed, holds every input record exactly
// once: offsets and output moved together.
func TestProcessTxnOffsetsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the weir binary")
	}
	dataDir := t.TempDir()
	b, addr := startBrokerProcOnFreeAddr(t, dataDir)

	const (
		in, out, grp = "txk-in", "txk-out", "txk"
		parts        = 3
		n            = 3000
	)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, topic := range []string{in, out} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: in, Partition: int32(i % parts), Value: []byte("v-" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var (
		committedRecs atomic.Int64
		wg            sync.WaitGroup
	)
	etlCtx, stopETL := context.WithCancel(ctx)
	defer func() { stopETL(); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for etlCtx.Err() == nil {
			runSession(etlCtx, t, addr, in, out, grp, &committedRecs)
		}
	}()

	for _, at := range []int64{n / 4, n / 2} {
		testkit.CheckFor(t, 90*time.Second, func() error {
			if c := committedRecs.Load(); c < at {
				return fmt.Errorf("%d input records processed in committed transactions, want %d before the kill", c, at)
			}
			return nil
		})
		t.Logf("%d records processed: killing the broker (SIGKILL)", committedRecs.Load())
		b.kill()
		b = startBrokerProc(t, dataDir, addr)
		t.Logf("broker restarted")
	}

	want := map[int32]int64{0: n / parts, 1: n / parts, 2: n / parts}
	testkit.CheckFor(t, 120*time.Second, func() error {
		fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
		defer fcancel()
		offs, err := adm.FetchOffsets(fctx, grp)
		if err != nil {
			return err // the restarted broker: not yet
		}
		got := map[int32]int64{}
		for p, o := range offs[in] {
			got[p] = o.At
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("committed offsets %v, want %v", got, want)
		}
		return nil
	})
	stopETL()
	wg.Wait()

	// The output, read_committed: each input value exactly once.
	rc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	seen := map[string]int{}
	total := 0
	testkit.CheckFor(t, 60*time.Second, func() error {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		defer pcancel()
		rc.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			total++
		})
		if len(seen) < n {
			return fmt.Errorf("read_committed output holds %d distinct of %d input values", len(seen), n)
		}
		return nil
	})
	for v, c := range seen {
		if c != 1 {
			t.Errorf("output holds %s %d times", v, c)
		}
	}
	// Nothing beyond what was read: the committed end of the output is
	// the number of records seen plus the control records.
	ends, err := adm.ListCommittedOffsets(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	var dataEnd int64
	ends.Each(func(o kadm.ListedOffset) { dataEnd += o.Offset })
	if int64(total) > dataEnd {
		t.Errorf("read %d records, more than the output's last stable offsets %d", total, dataEnd)
	}
}

// runSession runs one GroupTransactSession until it fails or ctx ends,
// adding the input records of each committed transaction to done.
func runSession(ctx context.Context, t *testing.T, addr, in, out, grp string, done *atomic.Int64) {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(addr),
		kgo.TransactionalID("txk-etl"),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(grp),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		t.Errorf("session: %v", err)
		return
	}
	defer sess.Close()
	for ctx.Err() == nil {
		fs := sess.PollRecords(ctx, 10) // small transactions: the kills land mid-stream
		if ctx.Err() != nil {
			return
		}
		if err := sess.Begin(); err != nil {
			t.Logf("begin: %v (new session)", err)
			return
		}
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			got++
			sess.Produce(ctx, &kgo.Record{Topic: out, Partition: r.Partition, Value: r.Value}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Logf("end: %v (new session)", err)
			}
			return
		}
		if committed {
			done.Add(int64(got))
		} else if got > 0 {
			t.Logf("transaction of %d records aborted", got)
		}
	}
}
