package brokertest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/testbroker"
)

// Consumer offsets inside transactions (KIP-98, KIP-447) with franz-go's
// GroupTransactSession and raw TxnOffsetCommit requests: offsets a
// transaction commits move only when it commits, an aborted transaction's
// offsets are never visible, an open one's make require_stable fetches
// answer UNSTABLE_OFFSET_COMMIT, and all of it survives the coordinator
// restarting (single broker) and failing over (three brokers).

// produceInput writes n records "v0".."v<n-1>" to topic.
func produceInput(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing input: %v", err)
	}
}

// etl runs a GroupTransactSession copying in to out, one transaction per
// poll, until n input records were consumed in committed transactions.
func etl(ctx context.Context, t *testing.T, seeds []string, grp, txnID, in, out string, n int) {
	t.Helper()
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(30*time.Second),
		kgo.ConsumerGroup(grp),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	done := 0
	for done < n {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("etl %s: %d of %d records committed: %v", grp, done, n, ctx.Err())
		}
		if err := fs.Err0(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("etl %s: poll: %v", grp, err)
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			got++
			sess.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Logf("etl %s: produce: %v", grp, err)
				}
			})
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("etl %s: end: %v", grp, err)
		}
		if committed {
			done += got
		}
	}
}

// fetchOffsets answers OffsetFetch for grp's partitions of topic, with or
// without require_stable: partition -> offset, or the error's name.
func fetchOffsets(ctx context.Context, cl *kgo.Client, grp, topic string, parts []int32, stable bool) (map[int32]string, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = grp, stable
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: parts}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	if len(resp.Groups) > 0 { // v8+
		g := resp.Groups[0]
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, err
		}
		out := map[int32]string{}
		for _, rt := range g.Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = offsetOrError(rp.Offset, rp.ErrorCode)
			}
		}
		return out, nil
	}
	out := map[int32]string{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rp.Partition] = offsetOrError(rp.Offset, rp.ErrorCode)
		}
	}
	return out, nil
}

func offsetOrError(off int64, code int16) string {
	if code != 0 {
		return kerr.ErrorForCode(code).(*kerr.Error).Message
	}
	return strconv.FormatInt(off, 10)
}

func sameOffsets(got, want map[int32]string) error {
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("offsets %v, want %v", got, want)
	}
	return nil
}

// txnOffsets is a transactional producer that commits offsets of a group
// in its transactions with raw AddOffsetsToTxn and TxnOffsetCommit, as
// a client's sendOffsetsToTransaction does, so that a test can abort them
// or leave them open.
type txnOffsets struct {
	cl  *kgo.Client
	grp string
}

func newTxnOffsets(t *testing.T, seeds []string, txnID, grp string) *txnOffsets {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(60*time.Second), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &txnOffsets{cl: cl, grp: grp}
}

// begin starts a transaction that writes one record to out and commits
// offset off of topic's partition p for the group (pending until the
// transaction ends).
func (x *txnOffsets) begin(ctx context.Context, t *testing.T, out, topic string, p int32, off int64) {
	t.Helper()
	if err := x.cl.BeginTransaction(); err != nil {
		t.Fatalf("begin: %v", err)
	}
	if err := x.cl.ProduceSync(ctx, &kgo.Record{Topic: out, Value: []byte("txn")}).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	pid, epoch, err := x.cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = *txnIDOf(x.cl), pid, epoch, x.grp
	ar, err := add.RequestWith(ctx, x.cl)
	if err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = add.TransactionalID, x.grp, pid, epoch
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, off
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
	var resp *kmsg.TxnOffsetCommitResponse
	for deadline := time.Now().Add(20 * time.Second); ; {
		resp, err = req.RequestWith(ctx, x.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		}
		if err == nil {
			return
		}
		if !kerr.IsRetriable(err) || time.Now().After(deadline) {
			t.Fatalf("TxnOffsetCommit: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // a retriable error: the coordinator is moving or loading
	}
}

func (x *txnOffsets) end(ctx context.Context, t *testing.T, commit bool) {
	t.Helper()
	if err := x.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

func txnIDOf(cl *kgo.Client) *string {
	id, _ := cl.OptValue(kgo.TransactionalID).(string)
	return &id
}

// TestTxnOffsetsGroupTransactSession: an ETL with GroupTransactSession,
// then transactions that commit, abort and stay open, across a restart of
// the (single) broker.
func TestTxnOffsetsGroupTransactSession(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := testbroker.Start(t)
	b.CreateTopic("in", 2, nil)
	b.CreateTopic("out", 1, nil)
	cl := b.Client()
	produceInput(ctx, t, cl, "in", 40)

	etl(ctx, t, []string{b.Addr}, "etl", "etl-1", "in", "out", 40)
	want := map[int32]string{}
	for p, n := range inputCounts(ctx, t, b.Addr, "in") {
		want[p] = strconv.FormatInt(n, 10)
	}
	if len(want) != 2 {
		t.Fatalf("input spread over partitions %v, want both", want)
	}
	CheckForOffsets(t, cl, "etl", "in", want, true)
	seen := map[string]int{}
	for _, r := range readCommitted(ctx, t, b.Addr, "out", 40) {
		seen[string(r.Value)]++
	}
	for i := 0; i < 40; i++ {
		if v := "v" + strconv.Itoa(i); seen[v] != 1 {
			t.Errorf("out holds %s %d times (read_committed)", v, seen[v])
		}
	}

	// An aborted transaction's offsets: pending (UNSTABLE with
	// require_stable, the old offset without), then never visible.
	x := newTxnOffsets(t, []string{b.Addr}, "raw-1", "etl")
	x.begin(ctx, t, "out", "in", 0, 999)
	unstable := copyOffsets(want)
	unstable[0] = "UNSTABLE_OFFSET_COMMIT"
	CheckForOffsets(t, cl, "etl", "in", unstable, true)
	CheckForOffsets(t, cl, "etl", "in", want, false)
	x.end(ctx, t, false)
	CheckForOffsets(t, cl, "etl", "in", want, true)

	// A committed one moves the offset.
	x.begin(ctx, t, "out", "in", 1, 777)
	x.end(ctx, t, true)
	want[1] = "777"
	CheckForOffsets(t, cl, "etl", "in", want, true)

	// One left open across a restart stays pending, then commits.
	x.begin(ctx, t, "out", "in", 0, 555)
	b.Stop()
	b = testbroker.StartIn(t, b.Dir)
	cl = b.Client()
	pending := copyOffsets(want)
	pending[0] = "UNSTABLE_OFFSET_COMMIT"
	CheckForOffsets(t, cl, "etl", "in", pending, true)
	CheckForOffsets(t, cl, "etl", "in", want, false)
	x2 := newTxnOffsets(t, []string{b.Addr}, "raw-1", "etl") // fences x: its open transaction is aborted
	x2.begin(ctx, t, "out", "in", 1, 888)
	x2.end(ctx, t, true)
	want[1] = "888"
	CheckForOffsets(t, cl, "etl", "in", want, true)

	// After another restart everything replays the same.
	b.Stop()
	b = testbroker.StartIn(t, b.Dir)
	CheckForOffsets(t, b.Client(), "etl", "in", want, true)
}

// TestTxnOffsetsCoordinatorFailover: the group coordinator's broker is
// killed with a committed, an aborted and an open transaction in its
// __consumer_offsets partition; the new leader serves exactly the
// committed offsets and keeps the open one pending until it ends.
func TestTxnOffsetsCoordinatorFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("coordinator failover in a three-node cluster")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := NewCluster(t, Brokers(3))
	c.CreateTopic("fin", 2, 3, nil)
	c.CreateTopic("fout", 1, 3, nil)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	produceInput(ctx, t, cl, "fin", 30)
	etl(ctx, t, c.Addrs(), "fetl", "fetl-1", "fin", "fout", 30)
	want := map[int32]string{}
	for p, n := range inputCounts(ctx, t, c.Addrs()[0], "fin") {
		want[p] = strconv.FormatInt(n, 10)
	}
	CheckForOffsets(t, cl, "fetl", "fin", want, true)

	x := newTxnOffsets(t, c.Addrs(), "fraw-1", "fetl")
	x.begin(ctx, t, "fout", "fin", 0, 999)
	x.end(ctx, t, false)
	x.begin(ctx, t, "fout", "fin", 1, 777)
	x.end(ctx, t, true)
	want[1] = "777"
	x.begin(ctx, t, "fout", "fin", 0, 555) // left open
	pending := copyOffsets(want)
	pending[0] = "UNSTABLE_OFFSET_COMMIT"
	CheckForOffsets(t, cl, "fetl", "fin", pending, true)

	coord := killGroupCoordinator(t, c, "fetl", 30*time.Second)
	CheckForOffsets(t, cl, "fetl", "fin", pending, true)
	CheckForOffsets(t, cl, "fetl", "fin", want, false)
	x.end(ctx, t, true)
	want[0] = "555"
	CheckForOffsets(t, cl, "fetl", "fin", want, true)
	c.Restart(coord)
	CheckForOffsets(t, cl, "fetl", "fin", want, true)
}

// CheckForOffsets waits until OffsetFetch answers want for grp's
// partitions of topic (retriable errors are "not yet").
func CheckForOffsets(t *testing.T, cl *kgo.Client, grp, topic string, want map[int32]string, stable bool) {
	t.Helper()
	parts := make([]int32, 0, len(want))
	for p := range want {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	testbroker.CheckFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := fetchOffsets(ctx, cl, grp, topic, parts, stable)
		if err != nil {
			return err
		}
		return sameOffsets(got, want)
	})
}

func copyOffsets(m map[int32]string) map[int32]string {
	out := make(map[int32]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// inputCounts is the number of records of each partition of topic.
func inputCounts(ctx context.Context, t *testing.T, addr, topic string) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for _, r := range testbroker.ReadAllAt(t, addr, topic) {
		out[r.Partition]++
	}
	return out
}

// readCommitted reads topic from the start with read_committed until it
// has n records (or the deadline) and returns them.
func readCommitted(ctx context.Context, t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(out) < n && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}
