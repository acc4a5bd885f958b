package log

import (
	"errors"
	"path"
	"testing"
	"time"

	"weir/broker/log/vfs"
)

const tdir = "/data/topic-0"

// buildBase makes a log with several flushed segments on a MemFS and returns
// the FS (closed uncleanly: no marker) and the appended infos.
func buildBase(t *testing.T, cfg Config, batches int) (*vfs.MemFS, []AppendInfo) {
	t.Helper()
	mem := vfs.NewMem()
	clk := newClock()
	l := mustOpen(t, mem, tdir, cfg, testOpts(clk))
	var infos []AppendInfo
	for i := 0; i < batches; i++ {
		infos = append(infos, mustAppend(t, l, valueBatch(t, 1+i%5, 30, clk.Ms())))
		clk.Add(10 * time.Millisecond)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l.bg.Wait()
	return mem.Crash(vfs.CrashOptions{}), infos
}

// checkLog verifies that every batch reads back with a valid CRC and that
// offsets [0, wantLEO) are covered.
func checkLog(t *testing.T, l *Log, wantLEO int64) {
	t.Helper()
	if got := l.EndOffset(); got != wantLEO {
		t.Fatalf("LEO %d, want %d", got, wantLEO)
	}
	hs := readAll(t, l, l.StartOffset())
	if wantLEO > 0 && (len(hs) == 0 || hs[len(hs)-1].LastOffset() != wantLEO-1) {
		t.Fatalf("read %d batches, last does not end at %d", len(hs), wantLEO-1)
	}
}

func smallCfg() Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 256
	return cfg
}

// TestRecoveryTornWriteEveryByte tears the write of the last batch at every
// byte position (a crash mid-write) and checks recovery truncates it.
func TestRecoveryTornWriteEveryByte(t *testing.T) {
	base, infos := buildBase(t, smallCfg(), 40)
	leo := infos[len(infos)-1].LastOffset + 1
	last := valueBatch(t, 4, 50, 1_700_000_100_000)
	for k := 0; k <= len(last); k++ {
		for _, keep := range []bool{true, false} {
			m := base.Crash(vfs.CrashOptions{})
			ffs := vfs.NewFault(m)
			l := mustOpen(t, ffs, tdir, smallCfg(), Options{})
			ffs.CrashAfter(int64(k))
			_, err := l.Append(append([]byte(nil), last...), 1)
			if k < len(last) && err == nil {
				t.Fatalf("k=%d: append succeeded through a crash", k)
			}
			after := m.Crash(vfs.CrashOptions{KeepUnsynced: func(string, int) int {
				if keep {
					return 1 << 30
				}
				return 0
			}})
			l2, err := Open(after, tdir, smallCfg(), Options{})
			if err != nil {
				t.Fatalf("k=%d keep=%v: reopen: %v", k, keep, err)
			}
			want := leo
			if k == len(last) && keep {
				want = leo + 4 // the whole batch reached the disk
			}
			checkLog(t, l2, want)
			// The log accepts appends at the recovered end.
			info, err := l2.Append(append([]byte(nil), last...), 1)
			if err != nil || info.FirstOffset != want {
				t.Fatalf("k=%d: append after recovery: %+v %v", k, info, err)
			}
			l2.Close()
		}
	}
}

// TestRecoveryCorruptMiddle flips a byte inside an unflushed batch: recovery
// truncates at that batch and never serves it.
func TestRecoveryCorruptMiddle(t *testing.T) {
	mem := vfs.NewMem()
	cfg := DefaultConfig()
	l := mustOpen(t, mem, tdir, cfg, Options{})
	var infos []AppendInfo
	for i := 0; i < 10; i++ {
		infos = append(infos, mustAppend(t, l, valueBatch(t, 3, 20, 1000)))
	}
	disk := mem.Crash(vfs.CrashOptions{KeepUnsynced: func(string, int) int { return 1 << 30 }})
	f, _ := disk.OpenReadWrite(path.Join(tdir, segmentName(0, logSuffix)))
	b := []byte{0}
	pos := int64(5*len(valueBatch(t, 3, 20, 1000)) + 70) // inside batch 5
	f.ReadAt(b, pos)
	b[0] ^= 0x55
	f.WriteAt(b, pos)
	f.Close()
	l2 := mustOpen(t, disk, tdir, cfg, Options{})
	defer l2.Close()
	checkLog(t, l2, infos[4].LastOffset+1)
}

// TestRecoveryCrashAtEveryWriteDuringRoll crashes at every byte written by
// an append that rolls a segment (index files, new segment, batch) and
// checks the log reopens consistent with everything flushed before.
func TestRecoveryCrashAtEveryWriteDuringRoll(t *testing.T) {
	cfg := smallCfg()
	base, infos := buildBase(t, cfg, 12)
	leo := infos[len(infos)-1].LastOffset + 1
	// Find how many bytes the rolling append writes.
	probe := vfs.NewFault(base.Crash(vfs.CrashOptions{}))
	l := mustOpen(t, probe, tdir, cfg, Options{})
	big := valueBatch(t, 10, 150, 1_700_000_100_000) // > remaining segment space: rolls
	w0 := probe.Written()
	mustAppend(t, l, append([]byte(nil), big...))
	l.bg.Wait()
	if l.NumSegments() < 2 {
		t.Fatal("append did not roll")
	}
	total := probe.Written() - w0
	l.Close()
	for k := int64(0); k <= total; k++ {
		m := base.Crash(vfs.CrashOptions{})
		ffs := vfs.NewFault(m)
		l := mustOpen(t, ffs, tdir, cfg, Options{})
		ffs.CrashAfter(k)
		l.Append(append([]byte(nil), big...), 1)
		l.bg.Wait()
		after := m.Crash(vfs.CrashOptions{KeepUnsynced: func(_ string, n int) int { return int(k) % (n + 1) }})
		l2, err := Open(after, tdir, cfg, Options{})
		if err != nil {
			t.Fatalf("crash after %d bytes: reopen: %v", k, err)
		}
		got := l2.EndOffset()
		if got != leo && got != leo+10 {
			t.Fatalf("crash after %d bytes: LEO %d, want %d or %d", k, got, leo, leo+10)
		}
		checkLog(t, l2, got)
		if _, err := l2.Append(append([]byte(nil), big...), 1); err != nil {
			t.Fatalf("crash after %d bytes: append: %v", k, err)
		}
		l2.Close()
	}
}

// TestRecoveryCrashMidRollFiles builds the on-disk states a crash during a
// roll leaves: a new empty segment and missing index files of the old one.
func TestRecoveryCrashMidRollFiles(t *testing.T) {
	cfg := smallCfg()
	base, infos := buildBase(t, cfg, 30)
	leo := infos[len(infos)-1].LastOffset + 1
	names, _ := base.List(tdir)
	var lastBase int64
	for _, n := range names {
		if b, ok := parseSegmentName(n, logSuffix); ok {
			lastBase = b
		}
	}
	for _, clean := range []bool{false, true} {
		m := base.Crash(vfs.CrashOptions{})
		m.Remove(path.Join(tdir, segmentName(lastBase, indexSuffix)))
		m.Remove(path.Join(tdir, segmentName(lastBase, timeIndexSuffix)))
		f, _ := m.Create(path.Join(tdir, segmentName(leo, logSuffix)))
		f.Close()
		if clean {
			f, _ := m.Create(path.Join(tdir, cleanMarkerName))
			f.Close()
		}
		l := mustOpen(t, m, tdir, cfg, Options{})
		checkLog(t, l, leo)
		info := mustAppend(t, l, valueBatch(t, 2, 10, 5))
		if info.FirstOffset != leo {
			t.Fatalf("append at %d, want %d", info.FirstOffset, leo)
		}
		checkLog(t, l, leo+2)
		l.Close()
	}
}

// TestRecoveryBadIndexes truncates, garbles and removes index files; the log
// rebuilds them and reads (by offset and timestamp) stay correct.
func TestRecoveryBadIndexes(t *testing.T) {
	cfg := smallCfg()
	mem := vfs.NewMem()
	clk := newClock()
	l := mustOpen(t, mem, tdir, cfg, testOpts(clk))
	var infos []AppendInfo
	var tss []int64
	for i := 0; i < 60; i++ {
		tss = append(tss, clk.Ms())
		infos = append(infos, mustAppend(t, l, valueBatch(t, 3, 40, clk.Ms())))
		clk.Add(100 * time.Millisecond)
	}
	leo := l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := mem.List(tdir)
	var idxs []string
	for _, n := range names {
		if _, ok := parseSegmentName(n, indexSuffix); ok {
			idxs = append(idxs, n)
		}
		if _, ok := parseSegmentName(n, timeIndexSuffix); ok {
			idxs = append(idxs, n)
		}
	}
	if len(idxs) < 8 {
		t.Fatalf("want several index files, have %v", idxs)
	}
	damage := []func(name string){
		func(n string) { // truncated to a non-multiple
			f, _ := mem.OpenReadWrite(path.Join(tdir, n))
			sz, _ := f.Size()
			f.Truncate(sz - 3)
			f.Close()
		},
		func(n string) { // garbage
			f, _ := mem.OpenReadWrite(path.Join(tdir, n))
			sz, _ := f.Size()
			g := make([]byte, sz)
			for i := range g {
				g[i] = byte(i*131 + 7)
			}
			f.WriteAt(g, 0)
			f.Close()
		},
		func(n string) { mem.Remove(path.Join(tdir, n)) },
		func(n string) { // plausible but pointing at wrong positions
			f, _ := mem.OpenReadWrite(path.Join(tdir, n))
			g := make([]byte, 16)
			copy(g, []byte{0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0, 9})
			f.Truncate(0)
			f.WriteAt(g, 0)
			f.Close()
		},
	}
	for i, n := range idxs {
		damage[i%len(damage)](n)
	}
	l = mustOpen(t, mem, tdir, cfg, testOpts(clk))
	defer l.Close()
	checkLog(t, l, leo)
	for i, w := range infos {
		s, err := l.Read(w.FirstOffset+1, 1, leo)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.Bytes()
		s.Release()
		h, err := ParseBatch(b)
		if err != nil || h.BaseOffset != w.FirstOffset {
			t.Fatalf("batch %d: got %d, %v", i, h.BaseOffset, err)
		}
		off, _, ok, err := l.OffsetForTimestamp(tss[i])
		if err != nil || !ok || off != w.FirstOffset {
			t.Fatalf("timestamp %d: offset %d ok=%v err=%v, want %d", tss[i], off, ok, err, w.FirstOffset)
		}
	}
}

// TestFullDisk: a full disk fails appends with ErrDiskFull, the log stays
// readable, and appends work again once space frees.
func TestFullDisk(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem)
	cfg := smallCfg()
	l := mustOpen(t, ffs, tdir, cfg, Options{})
	defer l.Close()
	for i := 0; i < 20; i++ {
		mustAppend(t, l, valueBatch(t, 2, 30, 1))
	}
	leo := l.EndOffset()
	ffs.SetWriteBudget(50, vfs.ErrNoSpace)
	for i := 0; i < 5; i++ {
		if _, err := l.Append(valueBatch(t, 2, 30, 1), 1); !errors.Is(err, ErrDiskFull) {
			t.Fatalf("append on a full disk: %v", err)
		}
		checkLog(t, l, leo)
	}
	ffs.ClearWriteBudget()
	for i := 0; i < 40; i++ {
		mustAppend(t, l, valueBatch(t, 2, 30, 1))
	}
	checkLog(t, l, leo+80)
	// Full disk during a roll (index write / segment create) too.
	ffs.SetWriteBudget(0, vfs.ErrNoSpace)
	ffs.SetCreateError(vfs.ErrNoSpace)
	for i := 0; i < 30; i++ {
		l.Append(valueBatch(t, 2, 30, 1), 1)
	}
	checkLog(t, l, leo+80)
	ffs.ClearWriteBudget()
	ffs.SetCreateError(nil)
	mustAppend(t, l, valueBatch(t, 2, 30, 1))
	checkLog(t, l, leo+82)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := mustOpen(t, mem, tdir, cfg, Options{})
	checkLog(t, l2, leo+82)
	l2.Close()
}

// TestUncleanLosesOnlyUnflushed: with flush.messages=1 every acknowledged
// append survives a crash that drops all unsynced data.
func TestUncleanLosesOnlyUnflushed(t *testing.T) {
	mem := vfs.NewMem()
	cfg := smallCfg()
	cfg.FlushMessages = 1
	l := mustOpen(t, mem, tdir, cfg, Options{})
	for i := 0; i < 50; i++ {
		mustAppend(t, l, valueBatch(t, 2, 30, 1))
	}
	leo := l.EndOffset()
	l.bg.Wait()
	disk := mem.Crash(vfs.CrashOptions{})
	l2 := mustOpen(t, disk, tdir, cfg, Options{})
	defer l2.Close()
	checkLog(t, l2, leo)
	if rp := l2.RecoveryPoint(); rp < l2.active().base || rp > leo {
		t.Fatalf("recovery point %d not within the active segment [%d, %d]", rp, l2.active().base, leo)
	}
}
