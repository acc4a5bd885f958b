package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/txncoord"
	"weir/internal/testkit"
)

// End-to-end tests of the transaction coordinator's requests (10 key type
// 1, 22 with a transactional id, 24, 25, 26, 65, 66) against a real
// in-process broker, over raw connections so each version and error code
// is checked exactly.

func findTxnCoordinator(t *testing.T, rc *rawConn, id string) *kmsg.FindCoordinatorResponse {
	t.Helper()
	var resp *kmsg.FindCoordinatorResponse
	testkit.CheckFor(t, 10*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorType = 3, id, 1
		resp = rc.roundTrip(req).(*kmsg.FindCoordinatorResponse)
		if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
			return fmt.Errorf("FindCoordinator(%s): %v", id, e)
		}
		return nil
	})
	return resp
}

func txnInit(rc *rawConn, version int16, id string, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = version, kmsg.StringPtr(id), timeoutMs
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return rc.roundTrip(req).(*kmsg.InitProducerIDResponse)
}

// txnAdd sends AddPartitionsToTxn v0-v3 and returns "topic/p=CODE ..." in
// request order.
func txnAdd(rc *rawConn, version int16, id string, pid int64, epoch int16, topic string, parts ...int32) map[string]int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
	out := map[string]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[fmt.Sprintf("%s/%d", t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

func txnEnd(rc *rawConn, version int16, id string, pid int64, epoch int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, id, pid, epoch, commit
	return rc.roundTrip(req).(*kmsg.EndTxnResponse).ErrorCode
}

func txnDescribe(rc *rawConn, id string) kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return rc.roundTrip(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

func codeName(c int16) string {
	if c == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(c).(*kerr.Error).Message
}

func TestTxnCoordinatorRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, b, "tx-out", 2, nil)
	rc := dialRaw(t, b.addr)

	fc := findTxnCoordinator(t, rc, "tx-a")
	if fc.NodeID != b.srv.cfg.NodeID || fc.Port <= 0 {
		t.Fatalf("FindCoordinator: %+v", fc)
	}
	// The state topic exists now, compacted, internal.
	st, ok := b.meta.Image().Topic("__transaction_state")
	if !ok || len(st.Partitions) != 50 || st.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("__transaction_state: %v %+v", ok, st)
	}
	if r := txnInit(rc, 4, "", 60000, -1, -1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty id: %s", codeName(r.ErrorCode))
	}
	if r := txnInit(rc, 4, "tx-a", 900_001, -1, -1); r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout past transaction.max.timeout.ms: %s", codeName(r.ErrorCode))
	}
	if r := txnInit(rc, 4, "tx-a", 60000, 5, -1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("producer id without epoch: %s", codeName(r.ErrorCode))
	}
	r := txnInit(rc, 4, "tx-a", 60000, -1, -1)
	if r.ErrorCode != 0 || r.ProducerID < 0 || r.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId: %s pid=%d epoch=%d", codeName(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	pid := r.ProducerID

	// Bad input: EndTxn of an unknown id, of an empty transaction, with
	// a fenced epoch.
	if c := txnEnd(rc, 3, "tx-nobody", pid, 0, true); c != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("EndTxn unknown id: %s", codeName(c))
	}
	if c := txnEnd(rc, 3, "tx-a", pid, 0, true); c != kerr.InvalidTxnState.Code {
		t.Errorf("EndTxn with nothing added: %s", codeName(c))
	}
	// A partition that does not exist fails the request; the others are
	// not attempted.
	got := txnAdd(rc, 3, "tx-a", pid, 0, "tx-missing", 0)
	if got["tx-missing/0"] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("AddPartitions unknown topic: %v", got)
	}
	got = txnAdd(rc, 3, "tx-a", pid, 0, "tx-out", 0, 7)
	if got["tx-out/0"] != kerr.OperationNotAttempted.Code || got["tx-out/7"] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("AddPartitions with one unknown partition: %v", got)
	}
	// Internal topics cannot be added by a producer.
	if got := txnAdd(rc, 3, "tx-a", pid, 0, "__transaction_state", 0); got["__transaction_state/0"] != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("AddPartitions internal topic: %v", got)
	}
	if got := txnAdd(rc, 3, "tx-a", pid, 0, "tx-out", 0); got["tx-out/0"] != 0 {
		t.Fatalf("AddPartitions: %v", got)
	}
	if c := txnEnd(rc, 3, "tx-a", pid, 1, true); c != kerr.ProducerFenced.Code {
		t.Errorf("EndTxn other epoch v3: %s", codeName(c))
	}
	if c := txnEnd(rc, 1, "tx-a", pid, 1, true); c != kerr.InvalidProducerEpoch.Code {
		t.Errorf("EndTxn other epoch v1: %s", codeName(c))
	}
	d := txnDescribe(rc, "tx-a")
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.ProducerID != pid || d.TimeoutMillis != 60000 ||
		len(d.Topics) != 1 || d.Topics[0].Topic != "tx-out" || fmt.Sprint(d.Topics[0].Partitions) != "[0]" || d.StartTimestamp <= 0 {
		t.Errorf("DescribeTransactions: %+v", d)
	}
	if d := txnDescribe(rc, "tx-nobody"); d.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("DescribeTransactions unknown: %s", codeName(d.ErrorCode))
	}

	// KIP-890 part 1 verification, the broker-to-broker form (v4+).
	vreq := kmsg.NewPtrAddPartitionsToTxnRequest()
	vreq.Version = 5
	vt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	vt.TransactionalID, vt.ProducerID, vt.ProducerEpoch, vt.VerifyOnly = "tx-a", pid, 0, true
	vtt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	vtt.Topic, vtt.Partitions = "tx-out", []int32{0, 1}
	vt.Topics = append(vt.Topics, vtt)
	vreq.Transactions = append(vreq.Transactions, vt)
	vresp := rc.roundTrip(vreq).(*kmsg.AddPartitionsToTxnResponse)
	if vresp.ErrorCode != 0 || len(vresp.Transactions) != 1 {
		t.Fatalf("verifyOnly: %+v", vresp)
	}
	verified := map[int32]int16{}
	for _, p := range vresp.Transactions[0].Topics[0].Partitions {
		verified[p.Partition] = p.ErrorCode
	}
	if verified[0] != 0 || verified[1] != kerr.TransactionAbortable.Code {
		t.Errorf("verifyOnly: %v", verified)
	}
	// ... and verifyOnly added nothing.
	if d := txnDescribe(rc, "tx-a"); len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 1 {
		t.Errorf("after verifyOnly: %+v", d.Topics)
	}

	// ListTransactions with filters.
	list := func(version int16, states []string, pids []int64, dur int64) *kmsg.ListTransactionsResponse {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis = version, states, pids, dur
		return rc.roundTrip(req).(*kmsg.ListTransactionsResponse)
	}
	if l := list(1, []string{"Ongoing"}, nil, -1); len(l.TransactionStates) != 1 || l.TransactionStates[0].TransactionalID != "tx-a" {
		t.Errorf("list Ongoing: %+v", l)
	}
	if l := list(1, []string{"Empty", "Bogus"}, nil, -1); len(l.TransactionStates) != 0 || fmt.Sprint(l.UnknownStateFilters) != "[Bogus]" {
		t.Errorf("list Empty,Bogus: %+v", l)
	}
	if l := list(1, nil, []int64{pid + 1}, -1); len(l.TransactionStates) != 0 {
		t.Errorf("list other pid: %+v", l)
	}
	if l := list(1, nil, nil, 3_600_000); len(l.TransactionStates) != 0 {
		t.Errorf("list running longer than an hour: %+v", l)
	}

	// A second producer with the same id fences the first: the open
	// transaction is aborted (CONCURRENT_TRANSACTIONS meanwhile) and the
	// old epoch is refused.
	if r := txnInit(rc, 4, "tx-a", 60000, -1, -1); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("InitProducerId during a transaction: %s", codeName(r.ErrorCode))
	}
	if got := txnAdd(rc, 3, "tx-a", pid, 0, "tx-out", 1); got["tx-out/1"] != kerr.ProducerFenced.Code {
		t.Errorf("zombie AddPartitions v3: %v", got)
	}
	if got := txnAdd(rc, 1, "tx-a", pid, 0, "tx-out", 1); got["tx-out/1"] != kerr.InvalidProducerEpoch.Code {
		t.Errorf("zombie AddPartitions v1: %v", got)
	}
	if c := txnEnd(rc, 3, "tx-a", pid, 0, true); c != kerr.ProducerFenced.Code {
		t.Errorf("zombie EndTxn: %s", codeName(c))
	}
	d = txnDescribe(rc, "tx-a")
	if (d.State != "PrepareAbort" && d.State != "CompleteAbort") || d.ProducerEpoch != 1 {
		t.Errorf("after the fence: %+v", d)
	}
	// The abort marker is written (WriteTxnMarkersLocal), the abort
	// completes, and the retry bumps the epoch again.
	testkit.CheckFor(t, 10*time.Second, func() error {
		r = txnInit(rc, 4, "tx-a", 60000, -1, -1)
		if r.ErrorCode != 0 {
			return fmt.Errorf("InitProducerId: %s", codeName(r.ErrorCode))
		}
		return nil
	})
	if r.ProducerID != pid || r.ProducerEpoch != 2 {
		t.Fatalf("after the abort: pid=%d epoch=%d", r.ProducerID, r.ProducerEpoch)
	}
	// KIP-360: the producer's own id and epoch get a bump; an old epoch
	// is fenced (v3: PRODUCER_FENCED is v4+, so INVALID_PRODUCER_EPOCH).
	if r := txnInit(rc, 4, "tx-a", 60000, pid, 2); r.ErrorCode != 0 || r.ProducerEpoch != 3 {
		t.Fatalf("KIP-360 bump: %s epoch=%d", codeName(r.ErrorCode), r.ProducerEpoch)
	}
	if r := txnInit(rc, 3, "tx-a", 60000, pid, 0); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("KIP-360 old epoch v3: %s", codeName(r.ErrorCode))
	}

	// A commit: the marker lands on the partition (its end offset moves)
	// and the transaction completes.
	if got := txnAdd(rc, 3, "tx-a", pid, 3, "tx-out", 1); got["tx-out/1"] != 0 {
		t.Fatalf("AddPartitions: %v", got)
	}
	before := b.logEnd(t, "tx-out", 1)
	if c := txnEnd(rc, 3, "tx-a", pid, 3, true); c != 0 {
		t.Fatalf("EndTxn commit: %s", codeName(c))
	}
	testkit.CheckFor(t, 10*time.Second, func() error {
		if d := txnDescribe(rc, "tx-a"); d.State != "CompleteCommit" || len(d.Topics) != 0 {
			return fmt.Errorf("state %s topics %v", d.State, d.Topics)
		}
		return nil
	})
	if after := b.logEnd(t, "tx-out", 1); after != before+1 {
		t.Errorf("tx-out/1 end offset %d -> %d, want one commit marker", before, after)
	}
	// A retried commit answers NONE; an abort of it INVALID_TXN_STATE.
	if c := txnEnd(rc, 3, "tx-a", pid, 3, true); c != 0 {
		t.Errorf("EndTxn commit retry: %s", codeName(c))
	}
	if c := txnEnd(rc, 3, "tx-a", pid, 3, false); c != kerr.InvalidTxnState.Code {
		t.Errorf("EndTxn abort after commit: %s", codeName(c))
	}
}

// logEnd is a partition's log end offset on this broker.
func (b *testBroker) logEnd(t *testing.T, topic string, p int32) int64 {
	t.Helper()
	_, part := b.srv.parts.lookup(topic, p)
	if part == nil || part.log == nil {
		t.Fatalf("%s-%d not hosted", topic, p)
	}
	return part.log.EndOffset()
}

// A transaction left open past transaction.timeout.ms is aborted by the
// coordinator at its next check (its epoch fenced): the producer's
// EndTxn is PRODUCER_FENCED, the abort marker is written, and a new
// InitProducerId continues with the next epoch.
func TestTxnTimeoutAborts(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	cfg := txncoord.DefaultConfig()
	cfg.StateLogPartitions = 3
	cfg.AbortTimedOutInterval = 50 * time.Millisecond
	if err := b.srv.SetTxnConfig(cfg); err != nil {
		t.Fatal(err)
	}
	createTopic(t, b, "tx-slow", 1, nil)
	rc := dialRaw(t, b.addr)
	findTxnCoordinator(t, rc, "tx-slow")
	// transaction.timeout.ms 1 s: room for reading the log end below
	// before the abort, on a loaded machine.
	r := txnInit(rc, 4, "tx-slow", 1000, -1, -1)
	if r.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %s", codeName(r.ErrorCode))
	}
	if got := txnAdd(rc, 3, "tx-slow", r.ProducerID, r.ProducerEpoch, "tx-slow", 0); got["tx-slow/0"] != 0 {
		t.Fatalf("AddPartitions: %v", got)
	}
	before := b.logEnd(t, "tx-slow", 0)
	testkit.CheckFor(t, 10*time.Second, func() error {
		if d := txnDescribe(rc, "tx-slow"); d.State != "CompleteAbort" || d.ProducerEpoch != r.ProducerEpoch+1 {
			return fmt.Errorf("state %s epoch %d", d.State, d.ProducerEpoch)
		}
		return nil
	})
	if c := txnEnd(rc, 3, "tx-slow", r.ProducerID, r.ProducerEpoch, true); c != kerr.ProducerFenced.Code {
		t.Errorf("EndTxn after the timeout: %s", codeName(c))
	}
	if after := b.logEnd(t, "tx-slow", 0); after != before+1 {
		t.Errorf("end offset %d -> %d, want one abort marker", before, after)
	}
	if r2 := txnInit(rc, 4, "tx-slow", 1000, r.ProducerID, r.ProducerEpoch+1); r2.ErrorCode != 0 || r2.ProducerEpoch != r.ProducerEpoch+2 {
		t.Errorf("InitProducerId after the timeout: %s epoch %d", codeName(r2.ErrorCode), r2.ProducerEpoch)
	}
}

// franz-go's transactional producer end to end: a committed transaction
// is read by a read_committed consumer, an aborted one is not, and a
// zombie producer with the same transactional id is fenced.
func TestTxnFranzProducer(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, b, "tx-franz", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(cl *kgo.Client, commit bool, vals ...string) error {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		for _, v := range vals {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tx-franz", Value: []byte(v)}).FirstErr(); err != nil {
				return err
			}
		}
		return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
	}
	p1 := b.client(kgo.TransactionalID("tx-franz-1"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err := produce(p1, true, "c1", "c2", "c3"); err != nil {
		t.Fatal(err)
	}
	if err := produce(p1, false, "a1", "a2"); err != nil {
		t.Fatal(err)
	}
	if err := produce(p1, true, "c4"); err != nil {
		t.Fatal(err)
	}
	// A second producer with the same id fences p1.
	p2 := b.client(kgo.TransactionalID("tx-franz-1"))
	if err := produce(p2, true, "c5"); err != nil {
		t.Fatal(err)
	}
	err := produce(p1, true, "zombie")
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("fenced producer: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	cons := b.client(kgo.ConsumeTopics("tx-franz"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 5 && ctx.Err() == nil {
		fs := cons.PollRecords(ctx, 100)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[c1 c2 c3 c4 c5]" {
		t.Fatalf("read_committed: %v", got)
	}
	// Nothing else arrives (the aborted and the zombie's records).
	short, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	if fs := cons.PollFetches(short); fs.NumRecords() > 0 {
		var more []string
		fs.EachRecord(func(r *kgo.Record) { more = append(more, string(r.Value)) })
		t.Fatalf("read_committed returned more: %v", more)
	}
}

// transactional.id.expiration.ms: an idle transactional id is removed (a
// tombstone in __transaction_state); the id then starts over with a new
// producer id.
func TestTxnIDExpiration(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	cfg := txncoord.DefaultConfig()
	cfg.StateLogPartitions = 3
	cfg.IDExpiration = 2 * time.Second // room for the first Describe on a loaded machine
	cfg.RemoveExpiredInterval = 50 * time.Millisecond
	if err := b.srv.SetTxnConfig(cfg); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b.addr)
	findTxnCoordinator(t, rc, "tx-idle")
	r := txnInit(rc, 4, "tx-idle", 1000, -1, -1)
	if r.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %s", codeName(r.ErrorCode))
	}
	if d := txnDescribe(rc, "tx-idle"); d.ErrorCode != 0 || d.State != "Empty" {
		t.Fatalf("DescribeTransactions: %s %s", codeName(d.ErrorCode), d.State)
	}
	testkit.CheckFor(t, 10*time.Second, func() error {
		if d := txnDescribe(rc, "tx-idle"); d.ErrorCode != kerr.TransactionalIDNotFound.Code {
			return fmt.Errorf("still there: %s %s", codeName(d.ErrorCode), d.State)
		}
		return nil
	})
	if c := txnEnd(rc, 3, "tx-idle", r.ProducerID, r.ProducerEpoch, true); c != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("EndTxn of an expired id: %s", codeName(c))
	}
	if r2 := txnInit(rc, 4, "tx-idle", 1000, -1, -1); r2.ErrorCode != 0 || r2.ProducerID == r.ProducerID || r2.ProducerEpoch != 0 {
		t.Errorf("InitProducerId after expiry: %s pid %d epoch %d (was %d)", codeName(r2.ErrorCode), r2.ProducerID, r2.ProducerEpoch, r.ProducerID)
	}
}

// TestTxnProduceToPartitionNotAdded: a transactional producer that sends
// to a partition it never added to its transaction is refused (KIP-890
// part 1 verification; weir serves Produce up to v9, where Kafka answers
// INVALID_TXN_STATE) and nothing of it is appended; the partition it did
// add takes the same batch.
func TestTxnProduceToPartitionNotAdded(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, b, "tx-np", 2, nil)
	rc := dialRaw(t, b.addr)
	findTxnCoordinator(t, rc, "tx-np-id")
	r := txnInit(rc, 4, "tx-np-id", 60000, -1, -1)
	if r.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %s", codeName(r.ErrorCode))
	}
	pid := r.ProducerID
	if got := txnAdd(rc, 3, "tx-np-id", pid, 0, "tx-np", 0); got["tx-np/0"] != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", got)
	}
	produce := func(version int16, partition int32, seq int32) int16 {
		req := produceReq(version, "tx-np", txnBatch(pid, 0, seq, 2))
		req.TransactionID = kmsg.StringPtr("tx-np-id")
		req.Topics[0].Partitions[0].Partition = partition
		return rc.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if c := produce(9, 1, 0); c != kerr.InvalidTxnState.Code {
		t.Errorf("Produce v9 to a partition not in the transaction: %s, want INVALID_TXN_STATE", codeName(c))
	}
	req := fetchReq(12, "tx-np", 0, 0)
	req.Topics[0].Partitions[0].Partition = 1
	if fp := rc.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]; fp.HighWatermark != 0 || len(fp.RecordBatches) != 0 {
		t.Fatalf("the refused partition holds data: hw %d, %d bytes", fp.HighWatermark, len(fp.RecordBatches))
	}
	if c := produce(9, 0, 0); c != 0 {
		t.Fatalf("Produce to the added partition: %s", codeName(c))
	}
	// Later produces of the transaction continue it without asking the
	// coordinator (Kafka's VerificationGuard sentinel).
	if c := produce(9, 0, 2); c != 0 {
		t.Fatalf("second Produce of the transaction: %s", codeName(c))
	}
	// Once the transaction is over, the partition is no longer in one:
	// the next produce without AddPartitionsToTxn is verified again and
	// refused, nothing appended.
	if c := txnEnd(rc, 3, "tx-np-id", pid, 0, false); c != 0 {
		t.Fatalf("EndTxn: %s", codeName(c))
	}
	testkit.CheckFor(t, 10*time.Second, func() error {
		if d := txnDescribe(rc, "tx-np-id"); d.State != "CompleteAbort" {
			return fmt.Errorf("transaction %s, want CompleteAbort", d.State)
		}
		return nil
	})
	hw := func() int64 {
		return rc.roundTrip(fetchReq(12, "tx-np", 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0].HighWatermark
	}
	before := hw()
	if c := produce(9, 0, 4); c != kerr.InvalidTxnState.Code {
		t.Errorf("Produce after the transaction ended, partition not added again: %s, want INVALID_TXN_STATE", codeName(c))
	}
	if after := hw(); after != before {
		t.Errorf("the refused produce moved the high watermark from %d to %d", before, after)
	}
}
