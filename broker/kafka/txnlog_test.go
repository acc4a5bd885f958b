package kafka

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log"
)

// txnBatch is a transactional batch of n records from producer pid at
// epoch, with sequence seq (-1: a coordinator's, no sequence).
func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = []byte{byte(pid), byte(i)}
	}
	b := txnBatchOf(pid, epoch, vals)
	binary.BigEndian.PutUint32(b[log.OffBaseSequence:], uint32(seq))
	fixCRC(b)
	return b
}

// txnBatchOf is a transactional batch of vals from producer pid, without
// sequence (-1).
func txnBatchOf(pid int64, epoch int16, vals [][]byte) []byte {
	b := buildBatch(vals, 0, time.Now().UnixMilli())
	binary.BigEndian.PutUint32(b[log.OffBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint64(b[log.OffProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[log.OffProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint16(b[log.OffAttributes:], binary.BigEndian.Uint16(b[log.OffAttributes:])|log.AttrTransactional)
	fixCRC(b)
	return b
}

// appendCoordinator appends a batch as the group coordinator does
// (produceTo, the call TxnOffsetCommit uses) and returns its base offset.
func appendCoordinator(t *testing.T, b *testBroker, topic string, batch []byte) int64 {
	t.Helper()
	ts, p := b.srv.parts.lookup(topic, 0)
	var sp kmsg.ProduceResponseTopicPartition
	if _, pe := b.srv.produceTo(9, -1, ts, p, batch, time.Now().UnixMilli(), &sp); pe != nil {
		t.Fatalf("coordinator append: %v: %s", pe.err, pe.msg)
	}
	return sp.BaseOffset
}

func markerReq(topic string, pid int64, epoch int16, commit bool, coordEpoch int32) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	return req
}

func markerCode(t *testing.T, rc *rawConn, req *kmsg.WriteTxnMarkersRequest) int16 {
	t.Helper()
	resp := rc.roundTrip(req).(*kmsg.WriteTxnMarkersResponse)
	if len(resp.Markers) != 1 || len(resp.Markers[0].Topics) != 1 || len(resp.Markers[0].Topics[0].Partitions) != 1 {
		t.Fatalf("marker response shape: %+v", resp)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// committedFetch fetches partition 0 from offset with read_committed and
// returns the partition and the offsets of the records returned.
func committedFetch(t *testing.T, rc *rawConn, topic string, offset int64, isolation int8) (kmsg.FetchResponseTopicPartition, []int64) {
	t.Helper()
	req := fetchReq(12, topic, offset, 0)
	req.IsolationLevel = isolation
	resp := rc.roundTrip(req).(*kmsg.FetchResponse)
	fp := resp.Topics[0].Partitions[0]
	var offs []int64
	for rest := fp.RecordBatches; len(rest) > 0; {
		h, err := log.ParseBatch(rest)
		if err != nil {
			t.Fatalf("fetched batches: %v", err)
		}
		for o := h.BaseOffset; o <= h.LastOffset(); o++ {
			offs = append(offs, o)
		}
		rest = rest[h.Size():]
	}
	return fp, offs
}

func listLatest(t *testing.T, rc *rawConn, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = 7, -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	sp := rc.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		t.Fatalf("list offsets: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	return sp.Offset
}

// TestTransactionsOnThePartition drives the partition side of
// transactions with real requests: transactional appends (the
// coordinators' path) hold the last stable offset back; read_committed
// Fetch and ListOffsets stop there; WriteTxnMarkers ends transactions,
// fences an old epoch, records aborted ones in the .txnindex; franz-go's
// read_committed consumer drops the aborted records; all of it survives a
// restart, an ongoing transaction included.
func TestTransactionsOnThePartition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBrokerIn(t, dir)
	createTopic(t, b, "tx", 1, nil)
	rc := dialRaw(t, b.addr)
	produce := func(batch []byte) int64 {
		p := rc.roundTrip(produceReq(9, "tx", batch)).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		return p.BaseOffset
	}
	produce(buildBatch([][]byte{{1}, {2}, {3}}, 0, time.Now().UnixMilli())) // 0-2
	if off := appendCoordinator(t, b, "tx", txnBatch(100, 0, -1, 2)); off != 3 {
		t.Fatalf("producer 100 at %d, want 3", off)
	}
	appendCoordinator(t, b, "tx", txnBatch(200, 0, -1, 2))        // 5-6
	produce(buildBatch([][]byte{{4}}, 0, time.Now().UnixMilli())) // 7

	fp, offs := committedFetch(t, rc, "tx", 0, 1)
	if fp.HighWatermark != 8 || fp.LastStableOffset != 3 || !slices.Equal(offs, []int64{0, 1, 2}) || len(fp.AbortedTransactions) != 0 {
		t.Fatalf("read_committed with two open transactions: hw %d lso %d offsets %v aborted %v", fp.HighWatermark, fp.LastStableOffset, offs, fp.AbortedTransactions)
	}
	if fp, offs := committedFetch(t, rc, "tx", 0, 0); fp.LastStableOffset != 3 || len(offs) != 8 || fp.AbortedTransactions != nil {
		t.Fatalf("read_uncommitted: lso %d offsets %v aborted %v", fp.LastStableOffset, offs, fp.AbortedTransactions)
	}
	if c, u := listLatest(t, rc, "tx", 1), listLatest(t, rc, "tx", 0); c != 3 || u != 8 {
		t.Fatalf("ListOffsets latest: read_committed %d (want 3), read_uncommitted %d (want 8)", c, u)
	}

	// A non-transactional write from a producer inside a transaction.
	if p := rc.roundTrip(produceReq(9, "tx", idemBatchFrom(100, 0, 0, 1))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("idempotent batch of a producer in a transaction: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// Transactional batches in a request without a transactional id.
	if p := rc.roundTrip(produceReq(9, "tx", txnBatch(300, 0, 0, 1))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("transactional batch without transactional id: %v", kerr.ErrorForCode(p.ErrorCode))
	}

	if code := markerCode(t, rc, markerReq("tx", 100, 0, false, 4)); code != 0 {
		t.Fatalf("abort marker: %v", kerr.ErrorForCode(code))
	}
	if fp, _ := committedFetch(t, rc, "tx", 0, 1); fp.LastStableOffset != 5 {
		t.Fatalf("after aborting 100: lso %d, want 5", fp.LastStableOffset)
	}
	if code := markerCode(t, rc, markerReq("tx", 200, 0, true, 4)); code != 0 {
		t.Fatalf("commit marker: %v", kerr.ErrorForCode(code))
	}
	// A zombie coordinator (older epoch) and a fenced producer epoch.
	appendCoordinator(t, b, "tx", txnBatch(300, 5, -1, 1)) // 10, still open
	if code := markerCode(t, rc, markerReq("tx", 200, 0, true, 3)); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker from an older coordinator epoch: %v", kerr.ErrorForCode(code))
	}
	if code := markerCode(t, rc, markerReq("tx", 300, 4, false, 4)); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("marker with a fenced producer epoch: %v", kerr.ErrorForCode(code))
	}
	if code := markerCode(t, rc, markerReq("nope", 300, 5, false, 4)); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("marker for an unknown topic: %v", kerr.ErrorForCode(code))
	}

	check := func(when string) {
		t.Helper()
		fp, offs := committedFetch(t, rc, "tx", 0, 1)
		want := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
		if fp.HighWatermark != 11 || fp.LastStableOffset != 10 || !slices.Equal(offs, want) {
			t.Fatalf("%s: hw %d lso %d offsets %v, want 11, 10, %v", when, fp.HighWatermark, fp.LastStableOffset, offs, want)
		}
		if len(fp.AbortedTransactions) != 1 || fp.AbortedTransactions[0].ProducerID != 100 || fp.AbortedTransactions[0].FirstOffset != 3 {
			t.Fatalf("%s: aborted transactions %+v, want producer 100 from 3", when, fp.AbortedTransactions)
		}
		// A fetch that returns only the first batch (0-2) is told of no
		// aborted transaction (Kafka bounds them by the data returned).
		small := fetchReq(12, "tx", 0, 0)
		small.IsolationLevel, small.Topics[0].Partitions[0].PartitionMaxBytes = 1, 1
		if sp := rc.roundTrip(small).(*kmsg.FetchResponse).Topics[0].Partitions[0]; len(sp.RecordBatches) == 0 || len(sp.AbortedTransactions) != 0 {
			t.Fatalf("%s: one-batch fetch: %d bytes, aborted %+v", when, len(sp.RecordBatches), sp.AbortedTransactions)
		}
		if fp, _ := committedFetch(t, rc, "tx", 9, 1); len(fp.AbortedTransactions) != 0 {
			t.Fatalf("%s: fetch after the abort marker still lists %+v", when, fp.AbortedTransactions)
		}
		// franz-go's read_committed consumer drops the aborted records
		// and the markers, and stops at the open transaction.
		cl := b.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"tx": {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(100*time.Millisecond))
		var got []int64
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for len(got) < 6 && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, r.Offset) })
		}
		if !slices.Equal(got, []int64{0, 1, 2, 5, 6, 7}) {
			t.Fatalf("%s: franz-go read_committed got offsets %v, want [0 1 2 5 6 7]", when, got)
		}
		cl.Close()
	}
	check("before restart")

	ents, err := os.ReadDir(filepath.Join(dir, "tx-0"))
	if err != nil {
		t.Fatal(err)
	}
	var idx []byte
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".txnindex" {
			idx, _ = os.ReadFile(filepath.Join(dir, "tx-0", e.Name()))
		}
	}
	want := log.EncodeTxnIndex([]log.AbortedTxn{{ProducerID: 100, FirstOffset: 3, LastOffset: 8, LastStableOffset: 5}})
	if string(idx) != string(want) {
		t.Fatalf(".txnindex holds %x, want %x", idx, want)
	}

	b.stop()
	b = startBrokerIn(t, dir)
	rc = dialRaw(t, b.addr)
	check("after restart")
	describeProducers(t, rc, "tx", map[int64][3]int64{ // epoch, coordinator epoch, txn start
		100: {0, 4, -1},
		200: {0, 4, -1},
		300: {5, -1, 10},
	})
	if code := markerCode(t, rc, markerReq("tx", 300, 5, true, 4)); code != 0 {
		t.Fatalf("commit marker after restart: %v", kerr.ErrorForCode(code))
	}
	if fp, _ := committedFetch(t, rc, "tx", 0, 1); fp.LastStableOffset != 12 {
		t.Fatalf("after committing the transaction left open across the restart: lso %d, want 12", fp.LastStableOffset)
	}
}

// idemBatchFrom is a non-transactional idempotent batch.
func idemBatchFrom(pid int64, epoch int16, seq int32, n int) []byte {
	b := txnBatch(pid, epoch, seq, n)
	binary.BigEndian.PutUint16(b[log.OffAttributes:], binary.BigEndian.Uint16(b[log.OffAttributes:])&^log.AttrTransactional)
	fixCRC(b)
	return b
}

// describeProducers checks DescribeProducers for partition 0 of topic.
func describeProducers(t *testing.T, rc *rawConn, topic string, want map[int64][3]int64) {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0, 7}
	req.Topics = append(req.Topics, rt)
	resp := rc.roundTrip(req).(*kmsg.DescribeProducersResponse)
	ps := resp.Topics[0].Partitions
	if len(ps) != 2 || ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("DescribeProducers: %+v", ps)
	}
	got := map[int64][3]int64{}
	for _, ap := range ps[0].ActiveProducers {
		got[ap.ProducerID] = [3]int64{int64(ap.ProducerEpoch), int64(ap.CoordinatorEpoch), ap.CurrentTxnStartOffset}
		if ap.LastTimestamp <= 0 || ap.LastSequence != -1 {
			t.Errorf("producer %d: last timestamp %d, last sequence %d (coordinator batches have none)", ap.ProducerID, ap.LastTimestamp, ap.LastSequence)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("DescribeProducers: %v, want %v", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Fatalf("DescribeProducers producer %d: %v, want %v", id, got[id], w)
		}
	}
}

// TestReadCommittedWhileProducerStateLoads: a leader without its producer
// state yet (right after taking over, while it loads) does not know the
// open transactions: read_committed Fetch gets no records and ListOffsets
// OFFSET_NOT_AVAILABLE, read_uncommitted is served; once loaded, both
// answer again.
func TestReadCommittedWhileProducerStateLoads(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, b, "ld", 1, nil)
	rc := dialRaw(t, b.addr)
	appendCoordinator(t, b, "ld", txnBatch(5, 0, -1, 2)) // 0-1, open
	p := rc.roundTrip(produceReq(9, "ld", buildBatch([][]byte{{1}}, 0, time.Now().UnixMilli()))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(p.ErrorCode))
	}
	_, part := b.srv.parts.lookup("ld", 0)
	part.prodMu.Lock()
	prod := part.prod
	part.prod = nil // as between taking over and loading
	part.prodMu.Unlock()
	if _, offs := committedFetch(t, rc, "ld", 0, 1); len(offs) != 0 {
		t.Fatalf("read_committed while loading: %v", offs)
	}
	if _, offs := committedFetch(t, rc, "ld", 0, 0); len(offs) != 3 {
		t.Fatalf("read_uncommitted while loading: %v", offs)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = 7, -1, 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "ld"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if code := rc.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetNotAvailable.Code {
		t.Fatalf("ListOffsets read_committed while loading: %v", kerr.ErrorForCode(code))
	}
	part.prodMu.Lock()
	part.prod = prod
	part.prodMu.Unlock()
	if fp, offs := committedFetch(t, rc, "ld", 0, 1); len(offs) != 0 || fp.LastStableOffset != 0 {
		t.Fatalf("read_committed after loading: lso %d offsets %v (the transaction is open)", fp.LastStableOffset, offs)
	}
	if off := listLatest(t, rc, "ld", 1); off != 0 {
		t.Fatalf("ListOffsets read_committed after loading: %d, want 0", off)
	}
}
