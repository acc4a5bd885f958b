package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/internal/kafkaclient"
	"weir/internal/txntest"
)

// TestExactlyOnceAcrossRebalance: two exactly-once kafka sink tasks in
// one group copy a topic while the group rebalances under them (the
// second joins mid-copy, the first stops mid-copy): every rebalance
// aborts the open transactions of the tasks losing partitions, whose
// records are then consumed and copied again. Read with read_committed,
// the destination holds every record exactly once.
func TestExactlyOnceAcrossRebalance(t *testing.T) {
	if testing.Short() {
		t.Skip("a broker with transactions, two sink tasks")
	}
	const n, parts = 30_000, 3
	addr, _ := txntest.EOSBroker(t, "")
	opts := kafkaclient.Options{Brokers: []string{addr}}
	admCl, err := kafkaclient.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	ctx := context.Background()
	for _, topic := range []string{"in", "out"} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	prod, err := kafkaclient.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	// The input flows in over about 5s, so the copy is many
	// transactions and the rebalances land in the middle of it.
	prodDone := make(chan error, 1)
	go func() {
		for lo := 0; lo < n; lo += n / 100 {
			var recs []*kgo.Record
			for i := lo; i < lo+n/100; i++ {
				recs = append(recs, &kgo.Record{Topic: "in", Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))})
			}
			if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				prodDone <- err
				return
			}
			time.Sleep(50 * time.Millisecond) // pacing the input, not waiting for a condition
		}
		prodDone <- nil
	}()
	rt := &connectors.Runtime{Client: opts}
	run := func(name string) (stop func() error) {
		s, err := New(Options{Topic: "out", Client: opts})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- rt.RunSink(rctx, name, s, connectors.SinkOptions{Topics: []string{"in"}, Group: "copy", ExactlyOnce: true,
				FlushInterval: 100 * time.Millisecond, MaxPollRecords: 200, Balancer: "cooperative-sticky"})
		}()
		return func() error {
			cancel()
			select {
			case err := <-done:
				return err
			case <-time.After(60 * time.Second):
				return errors.New("did not stop within 60s")
			}
		}
	}
	copied := func() int64 {
		so, err := adm.ListCommittedOffsets(ctx, "out")
		if err != nil {
			return 0
		}
		var sum int64
		so.Each(func(o kadm.ListedOffset) { sum += o.Offset })
		return sum
	}
	stopA := run("copy-a")
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if c := copied(); c < n/10 {
			return fmt.Errorf("%d of %d copied and committed", c, n)
		}
		return nil
	})
	stopB := run("copy-b")
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if c := copied(); c < n/2 {
			return fmt.Errorf("%d of %d copied and committed", c, n)
		}
		return nil
	})
	if err := stopA(); err != nil {
		t.Fatalf("copy-a: %v", err)
	}
	if err := <-prodDone; err != nil {
		t.Fatal(err)
	}
	testbroker.CheckFor(t, 90*time.Second, func() error {
		ends, err := adm.ListEndOffsets(ctx, "in")
		if err != nil {
			return err
		}
		com, err := adm.FetchOffsets(ctx, "copy")
		if err != nil {
			return err
		}
		var behind int64
		ends.Each(func(o kadm.ListedOffset) {
			c, _ := com.Lookup("in", o.Partition)
			behind += o.Offset - c.At
		})
		if behind != 0 {
			return fmt.Errorf("group copy is %d records behind", behind)
		}
		return nil
	})
	if err := stopB(); err != nil {
		t.Fatalf("copy-b: %v", err)
	}
	seen := make([]int, n)
	for _, r := range txntest.ReadCommittedSettled(t, addr, "out") {
		i, err := strconv.Atoi(string(r.Value))
		if err != nil || i < 0 || i >= n {
			t.Fatalf("out: unexpected value %q", r.Value)
		}
		seen[i]++
	}
	var bad int
	for i, c := range seen {
		if c != 1 {
			if bad < 10 {
				t.Errorf("record %d is %d times in out (read_committed), want once", i, c)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d records not exactly once", bad, n)
	}
	ends, _ := adm.ListEndOffsets(ctx, "out")
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	t.Logf("each of %d records once in out read_committed; %d offsets there (aborted copies and transaction markers included)", n, total)
}
