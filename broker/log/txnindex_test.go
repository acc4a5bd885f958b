package log

import (
	"errors"
	"slices"
	"testing"

	"weir/broker/log/vfs"
)

// TestTxnIndexFollowsSegments: entries land in the .txnindex of the
// segment holding their marker, survive a reopen, are cut by truncation,
// removed with their segment by retention, and CollectAborted answers
// Kafka's overlap rule.
func TestTxnIndexFollowsSegments(t *testing.T) {
	cfg := smallCfg()
	mem := vfs.NewMem()
	l := mustOpen(t, mem, tdir, cfg, Options{})
	for i := 0; i < 100; i++ {
		mustAppend(t, l, valueBatch(t, 4, 30, 1))
	}
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}
	es := []AbortedTxn{
		{ProducerID: 1, FirstOffset: 2, LastOffset: 10, LastStableOffset: 5},
		{ProducerID: 2, FirstOffset: 5, LastOffset: 12, LastStableOffset: 13},
		{ProducerID: 3, FirstOffset: 150, LastOffset: 210, LastStableOffset: 211},
		{ProducerID: 4, FirstOffset: 300, LastOffset: 390, LastStableOffset: 391},
	}
	for _, e := range es {
		if err := l.AddAbortedTxn(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AddAbortedTxn(es[1]); err != nil { // replayed: no-op
		t.Fatal(err)
	}
	if err := l.AddAbortedTxn(AbortedTxn{ProducerID: 9, FirstOffset: 400, LastOffset: 400}); err == nil {
		t.Fatal("an entry past the log end was accepted")
	}
	if got := l.AbortedTxns(); !slices.Equal(got, es) {
		t.Fatalf("entries %v", got)
	}
	for _, c := range []struct {
		from, upTo int64
		want       []int64 // producer ids
	}{
		{0, 5, []int64{1}},
		{0, 6, []int64{1, 2}},
		{11, 400, []int64{2, 3, 4}},
		{13, 150, nil},
		{13, 151, []int64{3}},
		{391, 400, nil},
	} {
		var got []int64
		for _, e := range l.CollectAborted(c.from, c.upTo) {
			got = append(got, e.ProducerID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("CollectAborted(%d, %d) = %v, want %v", c.from, c.upTo, got, c.want)
		}
	}
	l.Close()

	l = mustOpen(t, mem, tdir, cfg, Options{})
	if got := l.AbortedTxns(); !slices.Equal(got, es) {
		t.Fatalf("after reopen: %v", got)
	}
	if err := l.TruncateTo(300); err != nil {
		t.Fatal(err)
	}
	if got := l.AbortedTxns(); !slices.Equal(got, es[:3]) {
		t.Fatalf("after truncation to 300: %v", got)
	}
	l.SetHighWatermark(300)
	if _, err := l.DeleteRecordsBefore(200); err != nil {
		t.Fatal(err)
	}
	got := l.AbortedTxns()
	if len(got) != 1 || got[0].ProducerID != 3 {
		t.Fatalf("after deleting the segments below 200: %v", got)
	}
	l.Close()
	l = mustOpen(t, mem.Crash(vfs.CrashOptions{}), tdir, cfg, Options{})
	defer l.Close()
	if got := l.AbortedTxns(); len(got) != 1 || got[0].ProducerID != 3 {
		t.Fatalf("after reopen: %v", got)
	}
	names, _ := mem.List(tdir)
	n := 0
	for _, name := range names {
		if base, ok := parseSegmentName(name, txnIndexSuffix); ok {
			n++
			if base > 210 || base+int64(cfg.SegmentBytes) < 200 {
				t.Errorf("stray %s", name)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d .txnindex files in %v", n, names)
	}
}

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: -1}} {
		b := BuildEndTxnMarker(42, 3, m, 1234)
		h, err := ParseBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != -1 || h.NumRecords != 1 {
			t.Fatalf("header %+v", h)
		}
		got, ok, err := ParseEndTxnMarker(b)
		if err != nil || !ok || got != m {
			t.Fatalf("parsed %+v %v %v, want %+v", got, ok, err, m)
		}
	}
	if _, _, err := ParseEndTxnMarker(valueBatch(t, 1, 8, 1)); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("a data batch as a marker: %v", err)
	}
}

// FuzzDecodeTxnIndex: any bytes decode to entries that re-encode to the
// same bytes, or to ErrCorruptIndex; never a panic.
func FuzzDecodeTxnIndex(f *testing.F) {
	f.Add(EncodeTxnIndex([]AbortedTxn{{1, 2, 10, 11}, {2, 5, 12, 13}}))
	f.Add([]byte{})
	f.Add(make([]byte, 34))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := DecodeTxnIndex(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptIndex) {
				t.Fatalf("error not ErrCorruptIndex: %v", err)
			}
			return
		}
		if got := EncodeTxnIndex(es); string(got) != string(b) {
			t.Fatal("decode/encode not stable")
		}
	})
}

// FuzzParseEndTxnMarker: arbitrary bytes as a control batch give a marker,
// "no marker" or ErrCorruptBatch, never a panic; a marker rebuilt from
// what was parsed parses the same.
func FuzzParseEndTxnMarker(f *testing.F) {
	f.Add(BuildEndTxnMarker(1, 0, EndTxnMarker{Commit: true, CoordinatorEpoch: 3}, 99))
	f.Add(BuildEndTxnMarker(5, 2, EndTxnMarker{}, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok, err := ParseEndTxnMarker(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("error not ErrCorruptBatch: %v", err)
			}
			return
		}
		if !ok {
			return
		}
		m2, ok2, err2 := ParseEndTxnMarker(BuildEndTxnMarker(1, 1, m, 0))
		if err2 != nil || !ok2 || m2 != m {
			t.Fatalf("rebuilt marker parses as %+v %v %v, want %+v", m2, ok2, err2, m)
		}
	})
}
