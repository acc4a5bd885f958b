package log

import (
	"encoding/binary"
	"testing"
	"time"

	"weir/broker/log/vfs"
)

// txnKeyBatch is keyBatch from a transactional producer.
func txnKeyBatch(t *testing.T, pid int64, kv ...string) []byte {
	b := keyBatch(t, 1, kv...)
	binary.BigEndian.PutUint16(b[OffAttributes:], binary.BigEndian.Uint16(b[OffAttributes:])|AttrTransactional)
	binary.BigEndian.PutUint64(b[OffProducerID:], uint64(pid))
	binary.BigEndian.PutUint16(b[OffProducerEpoch:], 0)
	binary.BigEndian.PutUint32(b[OffBaseSequence:], 0)
	setCRC(b)
	return b
}

// dataByKey reads the latest value per key of the non-control batches and
// counts the control batches.
func dataByKey(t *testing.T, l *Log) (map[string]string, int) {
	t.Helper()
	vals := map[string]string{}
	markers := 0
	for _, h := range readAll(t, l, l.StartOffset()) {
		if h.IsControl() {
			markers++
			continue
		}
		s, err := l.Read(h.BaseOffset, 1, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.Bytes()
		s.Release()
		h, err := ParseBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := batchRecords(b, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			vals[string(r.rec.Key)] = string(r.rec.Value)
		}
	}
	return vals, markers
}

// TestCompactionWithTransactions: an aborted transaction's records are
// dropped and do not shadow the committed value of their key, markers
// stay, committed transactional records compact as any, and nothing at or
// past the first unstable offset (an open transaction) is cleaned.
func TestCompactionWithTransactions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.SegmentBytes = 400
	cfg.DeleteRetentionMs = time.Hour
	l := mustOpen(t, vfs.NewMem(), tdir, cfg, testOpts(newClock()))
	defer l.Close()

	mustAppend(t, l, keyBatch(t, 1, "a", "a-committed", "b", "b-1"))
	first := mustAppend(t, l, txnKeyBatch(t, 7, "a", "a-aborted", "c", "c-aborted")).FirstOffset
	mark := mustAppend(t, l, BuildEndTxnMarker(7, 0, EndTxnMarker{Commit: false}, 1)).FirstOffset
	if err := l.AddAbortedTxn(AbortedTxn{ProducerID: 7, FirstOffset: first, LastOffset: mark, LastStableOffset: mark + 1}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnKeyBatch(t, 8, "b", "b-committed"))
	mustAppend(t, l, BuildEndTxnMarker(8, 0, EndTxnMarker{Commit: true}, 1))
	for i := 0; i < 20; i++ {
		mustAppend(t, l, keyBatch(t, 1, "filler", "x"))
	}
	open := mustAppend(t, l, txnKeyBatch(t, 9, "b", "b-open")).FirstOffset
	for i := 0; i < 20; i++ {
		mustAppend(t, l, keyBatch(t, 1, "filler", "y"))
	}
	l.SetFirstUnstableOffset(open)
	if l.NumSegments() < 4 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}
	if _, err := l.Compact(); err != nil {
		t.Fatal(err)
	}
	vals, markers := dataByKey(t, l)
	if vals["a"] != "a-committed" || vals["c"] != "" || markers != 2 {
		t.Fatalf("after compaction: %v, %d markers; want a=a-committed, no c, 2 markers", vals, markers)
	}
	if vals["b"] != "b-open" {
		t.Fatalf("the open transaction's record was compacted away: %v", vals)
	}
	// Nothing at or past the open transaction was cleaned: its segment
	// still holds the y fillers before and after it.
	for _, h := range readAll(t, l, open) {
		if h.BaseOffset >= open && h.BaseOffset < l.EndOffset()-1 && h.NumRecords != 1 {
			t.Fatalf("batch at %d changed", h.BaseOffset)
		}
	}
	n := 0
	for _, h := range readAll(t, l, l.StartOffset()) {
		if !h.IsControl() && h.BaseOffset >= open {
			n++
		}
	}
	if n != 21 {
		t.Fatalf("%d data batches from the open transaction on, want 21 (none cleaned)", n)
	}
	// Once the transaction is no longer open, the older b values go.
	l.SetFirstUnstableOffset(-1)
	mustAppend(t, l, keyBatch(t, 1, "z", "z"))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(); err != nil {
		t.Fatal(err)
	}
	vals, markers = dataByKey(t, l)
	if vals["a"] != "a-committed" || vals["b"] != "b-open" || markers != 2 {
		t.Fatalf("second pass: %v, %d markers", vals, markers)
	}
}
