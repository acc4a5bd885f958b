package streams

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/testkit"
)

// A restore may ask for the end of a changelog another worker has just
// created: a partition missing from the answer (or an unknown topic) is
// asked again, not a failed restore (a worker-group test saw "end offset
// of ...-changelog/1: <nil>" fail its stream once).
func TestChangelogEndWaitsForANewTopic(t *testing.T) {
	b := testbroker.Start(t)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, stable := range []bool{false, true} {
		topic := "late-changelog"
		if stable {
			topic = "late-changelog-eos"
		}
		done := make(chan error, 1)
		var end int64
		go func() {
			var err error
			end, err = changelogEnd(ctx, adm, topic, 1, stable)
			done <- err
		}()
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("a")},
			&kgo.Record{Topic: topic, Partition: 1, Value: []byte("b")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("stable=%v: %v", stable, err)
		}
		if end != 0 && end != 2 {
			t.Fatalf("stable=%v: end %d, want 0 (asked before the produce) or 2", stable, end)
		}
		if end, err := changelogEnd(ctx, adm, topic, 1, stable); err != nil || end != 2 {
			t.Fatalf("stable=%v: end %d, %v; want 2", stable, end, err)
		}
	}
	// A partition the topic does not have is waited for until ctx ends,
	// and the error says what was missing.
	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	if _, err := changelogEnd(sctx, adm, "late-changelog", 7, false); err == nil {
		t.Fatal("partition 7 of a 2-partition topic: no error")
	} else {
		t.Log(err)
	}
}

// A restore asking for a changelog's end while the partition's leader is
// down (killed, its partitions not moved yet) waits for it instead of
// failing: a worker-group test saw a stream stop on "unable to dial ...
// connection refused" from ListOffsets.
func TestChangelogEndWaitsForAnUnreachableBroker(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(testkit.FreeAddr(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	sctx, scancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer scancel()
	_, err = changelogEnd(sctx, adm, "changelog", 0, true)
	var op *net.OpError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &op) {
		t.Fatalf("changelogEnd: %v, want it to ask again until its context ends", err)
	}
}
