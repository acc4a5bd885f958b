package log

import (
	"errors"
	"path"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"weir/broker/log/vfs"
)

// TestRecoveryCutsTornTailOfSealedSegment reproduces issue 14's disk: a
// failed write left half a batch at the end of a segment that was then
// sealed, and the recovery point is in a later segment. Recovery must cut
// that tail (keeping the later segments), say so in one line, and leave
// every segment valid.
func TestRecoveryCutsTornTailOfSealedSegment(t *testing.T) {
	mem := vfs.NewMem()
	cfg := smallCfg()
	cfg.FlushMessages = 1
	l := mustOpen(t, mem, tdir, cfg, Options{})
	for i := 0; i < 60; i++ {
		mustAppend(t, l, valueBatch(t, 2, 30, 1))
	}
	leo := l.EndOffset()
	l.bg.Wait()
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}
	first := l.segs[0]
	f, err := mem.OpenReadWrite(first.path(logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	torn := valueBatch(t, 2, 30, 1)[:40]
	if _, err := f.WriteAt(torn, first.size); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	disk := mem.Crash(vfs.CrashOptions{})
	if _, err := Verify(disk, tdir); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("Verify before recovery: %v, want the torn tail reported", err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	l2 := mustOpen(t, disk, tdir, cfg, Options{Logger: zap.New(core)})
	defer l2.Close()
	checkLog(t, l2, leo)
	if rp := l2.RecoveryPoint(); rp <= l2.segs[0].base+1 {
		t.Fatalf("recovery point %d: the test needs it past the first segment", rp)
	}
	if rep, err := Verify(disk, tdir); err != nil || rep.End != leo {
		t.Fatalf("after recovery: %+v %v", rep, err)
	}
	var lines []observer.LoggedEntry
	for _, e := range logs.All() {
		if strings.HasPrefix(e.Message, "recover") || strings.Contains(e.Message, "truncat") || strings.Contains(e.Message, "deleting") {
			lines = append(lines, e)
		}
	}
	if len(lines) != 1 || lines[0].Level != zapcore.WarnLevel {
		t.Fatalf("recovery logged %d lines, want one warning: %v", len(lines), lines)
	}
	if got := lines[0].ContextMap()["bytes_cut"]; got != int64(len(torn)) {
		t.Fatalf("log line says %v bytes cut, want %d: %v", got, len(torn), lines[0].ContextMap())
	}
}

// TestCutFailureTakesLogOffline: a write that fails and cannot be cut back
// (read-only remount) takes the log offline; nothing is appended after the
// unknown bytes; reopening recovers the acknowledged data.
func TestCutFailureTakesLogOffline(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem)
	cfg := smallCfg()
	cfg.FlushMessages = 1
	var hooked error
	l := mustOpen(t, ffs, tdir, cfg, Options{OnOffline: func(_ *Log, err error) { hooked = err }})
	for i := 0; i < 10; i++ {
		mustAppend(t, l, valueBatch(t, 2, 30, 1))
	}
	leo := l.EndOffset()
	ffs.SetInjector(func(op vfs.Op) *vfs.Fault {
		switch op.Kind {
		case vfs.OpWrite:
			return &vfs.Fault{Err: syscall.EROFS, Written: op.Len / 2}
		case vfs.OpRead:
			return nil
		}
		return &vfs.Fault{Err: syscall.EROFS}
	})
	_, err := l.Append(valueBatch(t, 2, 30, 1), 0)
	if !errors.Is(err, ErrOffline) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("append on a read-only file system: %v, want ErrOffline naming EROFS", err)
	}
	if off := l.Offline(); off == nil || hooked == nil || off.Error() != hooked.Error() {
		t.Fatalf("Offline() = %v, hook got %v", off, hooked)
	}
	ffs.SetInjector(nil)
	if _, err := l.Append(valueBatch(t, 2, 30, 1), 0); !errors.Is(err, ErrOffline) {
		t.Fatalf("append after going offline: %v", err)
	}
	if _, err := l.Read(0, 1<<20, leo); !errors.Is(err, ErrOffline) {
		t.Fatalf("read after going offline: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat(path.Join(tdir, cleanMarkerName)); err == nil {
		t.Fatal("an offline log left a clean-shutdown marker")
	}
	l2 := mustOpen(t, mem, tdir, cfg, Options{})
	defer l2.Close()
	checkLog(t, l2, leo)
}

// TestFailedFsyncTakesLogOffline: a failed flush takes the log offline.
func TestFailedFsyncTakesLogOffline(t *testing.T) {
	ffs := vfs.NewFault(vfs.NewMem())
	cfg := smallCfg()
	cfg.FlushMessages = 1
	l := mustOpen(t, ffs, tdir, cfg, Options{})
	defer l.Close()
	mustAppend(t, l, valueBatch(t, 2, 30, 1))
	ffs.SetInjector(func(op vfs.Op) *vfs.Fault {
		if op.Kind == vfs.OpSync {
			return &vfs.Fault{Err: syscall.EIO}
		}
		return nil
	})
	if _, err := l.Append(valueBatch(t, 2, 30, 1), 0); !errors.Is(err, ErrOffline) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append whose flush fails: %v", err)
	}
}

// TestFlushAfterAnotherFlushFailedReportsOffline: a flush that passed
// Flush's offline check and then waited for flushMu while another flush
// (the background one after a roll) failed its fsync must fail too. That
// fsync dropped the unsynced bytes, possibly the waiter's; a sync now
// succeeds without making them durable, so reporting success would
// acknowledge a lost append (crashtest found this once under load).
func TestFlushAfterAnotherFlushFailedReportsOffline(t *testing.T) {
	mem := vfs.NewMem()
	ffs := vfs.NewFault(mem)
	cfg := smallCfg()
	cfg.FlushMessages = 1 << 30 // the test calls the flushes
	l := mustOpen(t, ffs, tdir, cfg, Options{})
	defer l.Close()
	mustAppend(t, l, valueBatch(t, 2, 30, 1))
	target := l.EndOffset() // what the waiting caller read before the failure
	ffs.SetInjector(func(op vfs.Op) *vfs.Fault {
		if op.Kind == vfs.OpSync {
			return &vfs.Fault{Err: syscall.EIO, Lost: vfs.LostDropped}
		}
		return nil
	})
	if err := l.Flush(); !errors.Is(err, ErrOffline) {
		t.Fatalf("the failing flush: %v, want ErrOffline", err)
	}
	ffs.SetInjector(nil)
	if err := l.flushTo(target); !errors.Is(err, ErrOffline) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("the waiting flush returned %v, want the log's offline error (the bytes it covers were dropped)", err)
	}
	if rp := l.RecoveryPoint(); rp >= target {
		t.Fatalf("recovery point moved to %d over dropped bytes (end %d)", rp, target)
	}
}

// TestRecoveryEIOIsNotCorruption: an I/O error while recovering fails the
// open and cuts nothing.
func TestRecoveryEIOIsNotCorruption(t *testing.T) {
	disk, infos := buildBase(t, smallCfg(), 40)
	leo := infos[len(infos)-1].LastOffset + 1
	ffs := vfs.NewFault(disk)
	n := 0
	ffs.SetInjector(func(op vfs.Op) *vfs.Fault {
		if op.Kind == vfs.OpRead && path.Ext(op.Name) == logSuffix {
			if n++; n > 1 {
				return &vfs.Fault{Err: syscall.EIO}
			}
		}
		return nil
	})
	if _, err := Open(ffs, tdir, smallCfg(), Options{}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("open with EIO on read: %v, want EIO", err)
	}
	l := mustOpen(t, disk, tdir, smallCfg(), Options{})
	defer l.Close()
	checkLog(t, l, leo)
}
