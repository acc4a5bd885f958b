package kafkaclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
)

// ListEnds with stable waits while another producer's transaction is
// open below the end and returns the end once it commits. ListEnd waits
// only for its partition's transactions, and for a partition the topic
// lacks until its context ends.
func TestListEndsWaitsForAnOpenTransaction(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	cl := b.Client()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "late"); err != nil {
		t.Fatal(err)
	}
	testkit.CheckFor(t, 10*time.Second, func() error {
		ends, err := kafkaclient.ListEnds(ctx, adm, false, "late")
		if err == nil && len(ends["late"]) != 2 {
			err = fmt.Errorf("ends %v, want 2 partitions", ends)
		}
		return err
	})

	txn, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{b.Addr}}, kgo.TransactionalID("ends-test"), kgo.DefaultProduceTopic("late"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if ends, err := kafkaclient.ListEnds(ctx, adm, false, "late"); err != nil || ends["late"][1].Offset != 1 {
		t.Fatalf("end offset with a transaction open: %v, %v; want 1", ends, err)
	}
	sctx, scancel := context.WithTimeout(ctx, time.Second)
	defer scancel()
	_, err = kafkaclient.ListEnds(sctx, adm, true, "late")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "late/1 has a transaction open below its end offset 1") {
		t.Fatalf("stable end with a transaction open: %v; want it to wait until its context ends and say why", err)
	}
	if end, err := kafkaclient.ListEnd(ctx, adm, true, "late", 0); err != nil || end != 0 {
		t.Fatalf("stable end of late/0 while late/1 has a transaction open: %d, %v; want 0 at once", end, err)
	}
	mctx, mcancel := context.WithTimeout(ctx, time.Second)
	defer mcancel()
	if _, err := kafkaclient.ListEnd(mctx, adm, false, "late", 7); !errors.Is(err, kafkaclient.ErrPartitionMissing) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("end of late/7 (a topic of 2 partitions): %v; want it missing until the context ended", err)
	}
	done := make(chan error, 1)
	var ends kadm.ListedOffsets
	go func() {
		var err error
		ends, err = kafkaclient.ListEnds(ctx, adm, true, "late")
		done <- err
	}()
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The end as of the call (before or after the commit), once no
	// transaction is open below it.
	if o := ends["late"][1]; o.Offset != 1 && o.Offset != 2 {
		t.Fatalf("stable end asked around the commit: %d, want 1 or 2", o.Offset)
	}
	if end, err := kafkaclient.ListEnd(ctx, adm, true, "late", 1); err != nil || end != 2 { // the record and the commit marker
		t.Fatalf("stable end after the commit: %d, %v; want 2", end, err)
	}
}

// A broker nobody listens on (a killed leader) is asked again until ctx
// ends; the error keeps the dial error.
func TestListEndsAsksAnUnreachableBrokerAgain(t *testing.T) {
	t.Parallel()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{testkit.FreeAddr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = kafkaclient.ListEnds(ctx, kadm.NewClient(cl), true, "changelog")
	var op *net.OpError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &op) {
		t.Fatalf("end offsets from a broker nobody listens on: %v; want the dial error, asked again until the context ended", err)
	}
}

func TestRetriable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("end offset of t/3: %w", kafkaclient.ErrPartitionMissing), true},
		{kerr.UnknownTopicOrPartition, true},
		{kerr.NotLeaderForPartition, true},
		{kerr.CoordinatorLoadInProgress, true},
		{kerr.TopicAuthorizationFailed, false},
		{kerr.InvalidRequest, false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{fmt.Errorf("reading the answer: %w", io.EOF), true},
		{errors.New("no such host"), false},
		{context.Canceled, false},
		{errors.Join(kerr.NotLeaderForPartition, context.DeadlineExceeded), false},
	} {
		if got := kafkaclient.Retriable(c.err); got != c.want {
			t.Errorf("Retriable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
