package log

import (
	"errors"
	"path"
	"slices"
	"testing"
	"time"

	"weir/broker/log/vfs"
)

func TestRetentionByTime(t *testing.T) {
	clk := newClock()
	cfg := smallCfg()
	cfg.RetentionMs = time.Hour
	mem := vfs.NewMem()
	l := mustOpen(t, mem, tdir, cfg, testOpts(clk))
	defer l.Close()
	for i := 0; i < 40; i++ { // old data
		mustAppend(t, l, valueBatch(t, 2, 60, clk.Ms()))
	}
	clk.Add(30 * time.Minute)
	oldEnd := l.EndOffset()
	l.Roll()
	for i := 0; i < 40; i++ { // newer data
		mustAppend(t, l, valueBatch(t, 2, 60, clk.Ms()))
	}
	segsBefore := l.NumSegments()
	if n, err := l.EnforceRetention(); err != nil || n != 0 {
		t.Fatalf("nothing expired yet: deleted %d, %v", n, err)
	}
	clk.Add(45 * time.Minute) // old data is 75 min old, new 45
	n, err := l.EnforceRetention()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || l.NumSegments() != segsBefore-n {
		t.Fatalf("deleted %d of %d segments", n, segsBefore)
	}
	if l.StartOffset() != oldEnd {
		t.Fatalf("log start %d, want %d", l.StartOffset(), oldEnd)
	}
	if _, err := l.Read(0, 100, l.EndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read of deleted offset: %v", err)
	}
	checkLog(t, l, l.EndOffset())
	// Everything expired: the active segment is rolled and deleted too.
	clk.Add(2 * time.Hour)
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != l.EndOffset() || l.Size() != 0 {
		t.Fatalf("all expired: start %d end %d size %d", l.StartOffset(), l.EndOffset(), l.Size())
	}
	names, _ := mem.List(tdir)
	logs := 0
	for _, n := range names {
		if _, ok := parseSegmentName(n, logSuffix); ok {
			logs++
		}
	}
	if logs != 1 {
		t.Fatalf("%d .log files left: %v", logs, names)
	}
	info := mustAppend(t, l, valueBatch(t, 1, 8, clk.Ms()))
	if info.FirstOffset != l.StartOffset() {
		t.Fatalf("append after full expiry at %d", info.FirstOffset)
	}
	// Delete=false disables retention.
	cfg.Delete, cfg.Compact = false, true
	l.SetConfig(cfg)
	clk.Add(10 * time.Hour)
	if n, _ := l.EnforceRetention(); n != 0 {
		t.Fatalf("retention ran on a compact-only log")
	}
}

func TestRetentionBySize(t *testing.T) {
	cfg := smallCfg()
	cfg.RetentionMs = -1
	cfg.RetentionBytes = 5000
	l := mustOpen(t, vfs.NewMem(), tdir, cfg, Options{})
	defer l.Close()
	for i := 0; i < 200; i++ {
		mustAppend(t, l, valueBatch(t, 2, 60, 1))
	}
	total := l.Size()
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if l.Size() > cfg.RetentionBytes+cfg.SegmentBytes || l.Size() < cfg.RetentionBytes-cfg.SegmentBytes {
		t.Fatalf("size %d after retention.bytes=%d (was %d)", l.Size(), cfg.RetentionBytes, total)
	}
	// The oldest remaining segment is the one whose removal would go below the limit.
	l.mu.RLock()
	first := l.segs[0].size
	l.mu.RUnlock()
	if l.Size()-first >= cfg.RetentionBytes {
		t.Fatalf("could have deleted one more segment: size %d first %d", l.Size(), first)
	}
	checkLog(t, l, l.EndOffset())
}

func TestDeleteRecordsBefore(t *testing.T) {
	cfg := smallCfg()
	mem := vfs.NewMem()
	l := mustOpen(t, mem, tdir, cfg, Options{})
	for i := 0; i < 100; i++ {
		mustAppend(t, l, valueBatch(t, 2, 60, 1))
	}
	if _, err := l.DeleteRecordsBefore(50); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("above HW: %v", err)
	}
	l.SetHighWatermark(150)
	segs := l.NumSegments()
	start, err := l.DeleteRecordsBefore(101) // mid batch [100,101]
	if err != nil || start != 101 {
		t.Fatalf("start %d, %v", start, err)
	}
	if l.NumSegments() >= segs {
		t.Fatalf("no segment deleted (%d)", segs)
	}
	if _, err := l.Read(99, 100, 150); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	s, err := l.Read(101, 1, 150)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Bytes()
	s.Release()
	if h, _ := ParseBatch(b); h.BaseOffset != 100 {
		t.Fatalf("read 101 gave batch %d", h.BaseOffset)
	}
	// Persisted across an unclean stop.
	l2 := mustOpen(t, mem.Crash(vfs.CrashOptions{}), tdir, cfg, Options{})
	if l2.StartOffset() != 101 {
		t.Fatalf("start after crash %d, want 101", l2.StartOffset())
	}
	l2.Close()
	if s, _ := l.DeleteRecordsBefore(-1); s != 150 {
		t.Fatalf("delete to HW: start %d", s)
	}
	l.Close()
}

func TestTruncateTo(t *testing.T) {
	cfg := smallCfg()
	mem := vfs.NewMem()
	l := mustOpen(t, mem, tdir, cfg, Options{})
	for i := 0; i < 100; i++ {
		mustAppend(t, l, valueBatch(t, 4, 30, 1))
	}
	l.SetHighWatermark(400)
	if err := l.TruncateTo(202); err != nil { // mid batch [200,203]
		t.Fatal(err)
	}
	checkLog(t, l, 200)
	if l.HighWatermark() != 200 {
		t.Fatalf("HW %d", l.HighWatermark())
	}
	if info := mustAppend(t, l, valueBatch(t, 4, 30, 1)); info.FirstOffset != 200 {
		t.Fatalf("append after truncate at %d", info.FirstOffset)
	}
	if err := l.TruncateTo(0); err != nil {
		t.Fatal(err)
	}
	checkLog(t, l, 0)
	mustAppend(t, l, valueBatch(t, 4, 30, 1))
	l.Close()
	l = mustOpen(t, mem.Crash(vfs.CrashOptions{}), tdir, cfg, Options{})
	checkLog(t, l, 4)
	names, _ := mem.List(tdir)
	names = slices.DeleteFunc(names, func(n string) bool { return n == epochFileName })
	if len(names) > 5 {
		t.Fatalf("files left after truncation: %v", names)
	}
	l.Close()
	_ = path.Join
}

// TestIndexAndTimeLookupsAtBoundaries checks offset reads at every batch
// boundary and segment edge, and timestamp lookups before, at, between and
// after batches.
func TestIndexAndTimeLookupsAtBoundaries(t *testing.T) {
	clk := newClock()
	cfg := smallCfg()
	l := mustOpen(t, vfs.NewMem(), tdir, cfg, testOpts(clk))
	defer l.Close()
	type b struct {
		first, last, ts int64
	}
	var bs []b
	for i := 0; i < 120; i++ {
		n := 1 + i%4
		ts := clk.Ms()
		info := mustAppend(t, l, valueBatch(t, n, 25+i%50, ts))
		bs = append(bs, b{info.FirstOffset, info.LastOffset, ts})
		clk.Add(time.Second)
	}
	l.mu.RLock()
	var bases []int64
	for _, s := range l.segs {
		bases = append(bases, s.base)
	}
	l.mu.RUnlock()
	if len(bases) < 5 {
		t.Fatalf("want several segments: %v", bases)
	}
	for _, x := range bs {
		for _, off := range []int64{x.first, x.last} {
			s, err := l.Read(off, 1, l.EndOffset())
			if err != nil {
				t.Fatal(err)
			}
			data, _ := s.Bytes()
			s.Release()
			h, err := ParseBatch(data)
			if err != nil || h.BaseOffset != x.first {
				t.Fatalf("offset %d: batch %d (%v), want %d", off, h.BaseOffset, err, x.first)
			}
		}
		// Timestamps: exact first record, inside the batch, just after the
		// previous batch.
		for _, q := range []struct{ ts, off int64 }{{x.ts, x.first}, {x.ts + (x.last - x.first), x.last}, {x.ts - 500, x.first}} {
			off, ts, ok, err := l.OffsetForTimestamp(q.ts)
			if err != nil || !ok || off != q.off {
				t.Fatalf("timestamp %d: offset %d ts %d ok %v err %v, want %d", q.ts, off, ts, ok, err, q.off)
			}
		}
	}
	if off, _, ok, _ := l.OffsetForTimestamp(0); !ok || off != 0 {
		t.Fatalf("ts before all: %d %v", off, ok)
	}
	if _, _, ok, _ := l.OffsetForTimestamp(clk.Ms() + 1000); ok {
		t.Fatal("ts after all found something")
	}
	// Segment edges.
	for _, base := range bases[1:] {
		s, err := l.Read(base-1, 1, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		data, _ := s.Bytes()
		s.Release()
		if h, _ := ParseBatch(data); h.LastOffset() != base-1 {
			t.Fatalf("read %d (end of segment) gave batch ending %d", base-1, h.LastOffset())
		}
	}
}
