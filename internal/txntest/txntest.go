// Package txntest is what the exactly-once source tests share: one real
// Apache Kafka 4.4 per test process (internal/kafkapeer, started on first
// use, stopped by Stop from TestMain), to prove the transactional logic
// against the reference broker; Brokers, the brokers a test runs against
// (Apache Kafka, and weir's test broker once it answers transactional
// requests); EOSBroker, the broker of one exactly-once test (weir, or
// Apache Kafka with WEIR_EOS_TEST_KAFKA=1); and ReadCommitted
// (ReadCommittedSettled: once no transaction is open), a read_committed
// reader of a topic.
package txntest

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/testbroker"
	"weir/broker/tlsconf/tlstest"
	"weir/internal/kafkaclient"
	"weir/internal/kafkapeer"
	"weir/internal/testkit"
)

var (
	once  sync.Once
	kafka *kafkapeer.Kafka
	dir   string
	err   error
)

// Kafka returns the address (PLAINTEXT) of the process's Apache Kafka
// 4.4, starting it on first use; it fails t when Kafka cannot run here.
func Kafka(t testing.TB) string {
	t.Helper()
	if why := kafkapeer.Available(); why != "" {
		t.Fatal(why)
	}
	once.Do(func() {
		dir, err = os.MkdirTemp("", "txntest-kafka-")
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		kafka, err = kafkapeer.Start(ctx, kafkapeer.Options{Dir: dir}) // PLAINTEXT only
	})
	if err != nil {
		t.Fatalf("starting Apache Kafka: %v", err)
	}
	if why := Died(); why != "" {
		t.Fatal(why)
	}
	return kafka.Plaintext
}

var (
	diedOnce sync.Once
	diedWhy  string
)

// Died describes the process's Apache Kafka once it has ended before
// Stop ("" while it runs): how it exited, where its log is kept (copied
// by testkit.Keep, as Stop removes its directory) and the log's last
// lines. A test after its death then fails on that rather than on
// "connection refused".
func Died() string {
	if kafka == nil {
		return ""
	}
	exited, err := kafka.Exited()
	if !exited {
		return ""
	}
	diedOnce.Do(func() {
		diedWhy = fmt.Sprintf("the test process's Apache Kafka (%s) exited before the tests ended: %v; its log is kept in %s; last lines:\n%s",
			kafka.Plaintext, err, testkit.Keep("txntest-kafka-died", kafka.LogPath()), testkit.LastLines(strings.TrimRight(kafka.Log(), "\n"), 40))
	})
	return diedWhy
}

// Stop stops the Apache Kafka started by Kafka, if any (call it from
// TestMain after m.Run).
func Stop() {
	if why := Died(); why != "" {
		fmt.Fprintln(os.Stderr, why)
	}
	if kafka != nil {
		kafka.Stop()
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// EOSBroker starts the broker of one exactly-once test and returns its
// address: a fresh weir test broker (returned too), or, with
// WEIR_EOS_TEST_KAFKA=1 in the environment, a fresh Apache Kafka 4.4 of
// the test's own (JVM heap heap, "" for kafkapeer's default; stopped at
// cleanup; weir nil), as the exactly-once tests were proven against
// before weir's broker had transactions.
func EOSBroker(t *testing.T, heap string) (addr string, weir *testbroker.Broker) {
	t.Helper()
	if os.Getenv("WEIR_EOS_TEST_KAFKA") == "" {
		b := testbroker.Start(t)
		return b.Addr, b
	}
	if why := kafkapeer.Available(); why != "" {
		t.Fatal(why)
	}
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "kafka CA")
	srv := ca.Issue(t, tlstest.Leaf{Subject: pkix.Name{CommonName: "kafka"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k, err := kafkapeer.Start(ctx, kafkapeer.Options{Dir: dir, KeyStore: tlstest.Write(t, dir, "kafka.pem", srv.KeyStore()), Heap: heap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return k.Plaintext, nil
}

// Target is a broker an exactly-once test runs against.
type Target struct {
	Name string
	Addr string
	// Weir is the test broker when Name is "weir" (nil for Kafka).
	Weir *testbroker.Broker
}

// Brokers returns Apache Kafka and, when it supports transactions, a
// fresh weir test broker; weir's absence is logged (t.Log), so a run
// shows which brokers were tested.
func Brokers(t *testing.T, opts ...testbroker.Option) []Target {
	t.Helper()
	out := []Target{{Name: "kafka", Addr: Kafka(t)}}
	b := testbroker.Start(t, opts...)
	if err := SupportsTransactions(b.Addr); err != nil {
		t.Logf("not running against weir: it does not support transactions yet: %v", err)
		return out
	}
	return append(out, Target{Name: "weir", Addr: b.Addr, Weir: b})
}

// SupportsTransactions asks the broker at addr for a transactional
// producer id (InitProducerId with a fresh transactional id, as a
// transactional producer's first request) and returns why it cannot
// have one (nil when it can).
func SupportsTransactions(addr string) error {
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := fmt.Sprintf("txntest-probe-%d", time.Now().UnixNano())
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = 10000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil || !kerr.IsRetriable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ReadCommitted reads topic with read_committed from its start up to its
// last stable offsets at the time of the call: what a read_committed
// consumer sees (no aborted record, no control record).
func ReadCommitted(t testing.TB, addr, topic string) []*kgo.Record {
	t.Helper()
	recs, err := readCommitted(addr, topic)
	if err != nil {
		t.Fatalf("txntest: reading %s read_committed: %v", topic, err)
	}
	return recs
}

// ReadCommittedSettled is ReadCommitted once no transaction is open on
// topic (every partition's last stable offset at its end offset; waited
// for up to 90 s, as a killed producer's transaction lasts until the
// coordinator aborts it): every record of every transaction that
// committed.
func ReadCommittedSettled(t testing.TB, addr, topic string) []*kgo.Record {
	t.Helper()
	testbroker.CheckFor(t, 90*time.Second, func() error { return openTransactions(addr, topic) })
	return ReadCommitted(t, addr, topic)
}

// openTransactions returns an error naming topic's partitions with an
// open transaction (or why it cannot tell); nil when there is none.
func openTransactions(addr, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return err
	}
	var errs []error
	ends.Each(func(o kadm.ListedOffset) {
		s, ok := stable.Lookup(topic, o.Partition)
		switch {
		case o.Err != nil || !ok || s.Err != nil:
			errs = append(errs, fmt.Errorf("partition %d: end offsets: %v %v", o.Partition, o.Err, s.Err))
		case s.Offset < o.Offset:
			errs = append(errs, fmt.Errorf("partition %d: open transaction (last stable offset %d, end %d)", o.Partition, s.Offset, o.Offset))
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", topic, errors.Join(errs...))
	}
	return nil
}

// ReadCommittedErr is ReadCommitted returning its error, for a test
// polling a topic that may not exist yet.
func ReadCommittedErr(addr, topic string) ([]*kgo.Record, error) { return readCommitted(addr, topic) }

func readCommitted(addr, topic string) ([]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	want := map[int32]int64{}
	offs := map[int32]kgo.Offset{}
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			lerr = errors.Join(lerr, fmt.Errorf("partition %d: %w", o.Partition, o.Err))
		} else if o.Offset > 0 {
			want[o.Partition] = o.Offset
			offs[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if lerr != nil || len(want) == 0 {
		return nil, lerr
	}
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}},
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}), kgo.FetchMaxBytes(64<<20),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w (still waiting on partition → end %v)", err, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := want[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out, nil
}
