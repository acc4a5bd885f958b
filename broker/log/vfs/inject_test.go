package vfs

import (
	"errors"
	"io"
	"syscall"
	"testing"
)

func readAll(t *testing.T, fs FS, name string) string {
	t.Helper()
	b, err := ReadFile(fs, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInjectTornWriteReportingNone(t *testing.T) {
	mem := NewMem()
	f := NewFault(mem)
	fh, _ := f.Create("/a")
	f.SetInjector(OnceAt(f.Ops(), Fault{Err: ErrNoSpace, Written: 3, Reported: 0}))
	n, err := fh.WriteAt([]byte("abcdef"), 0)
	if n != 0 || !errors.Is(err, ErrNoSpace) {
		t.Fatalf("torn write: n=%d err=%v, want 0 and ErrNoSpace", n, err)
	}
	if got := readAll(t, mem, "/a"); got != "abc" {
		t.Fatalf("file holds %q, want the torn prefix %q", got, "abc")
	}
	if _, err := fh.WriteAt([]byte("x"), 3); err != nil {
		t.Fatalf("one-shot fault fired twice: %v", err)
	}
}

func TestInjectStickyReadOnlyAndReadEIO(t *testing.T) {
	f := NewFault(NewMem())
	fh, _ := f.Create("/a")
	fh.WriteAt([]byte("abc"), 0)
	f.SetInjector(StickyFrom(f.Ops(), syscall.EROFS))
	for i, op := range []func() error{
		func() error { _, err := fh.WriteAt([]byte("d"), 3); return err },
		func() error { return fh.Truncate(0) },
		func() error { return fh.Sync() },
		func() error { _, err := f.Create("/b"); return err },
		func() error { return f.Rename("/a", "/c") },
	} {
		if err := op(); !errors.Is(err, syscall.EROFS) {
			t.Fatalf("mutation %d on a read-only remount: %v, want EROFS", i, err)
		}
	}
	if got := readAll(t, f, "/a"); got != "abc" {
		t.Fatalf("read after EROFS: %q", got)
	}
	f.SetInjector(func(op Op) *Fault {
		if op.Kind == OpRead {
			return &Fault{Err: syscall.EIO}
		}
		return nil
	})
	if _, err := fh.ReadAt(make([]byte, 1), 0); !errors.Is(err, syscall.EIO) || errors.Is(err, io.EOF) {
		t.Fatalf("read: %v, want EIO", err)
	}
}

func TestInjectFailedSyncLosesUnsyncedData(t *testing.T) {
	for _, mode := range []SyncLoss{LostDropped, LostKeptInCache} {
		mem := NewMem()
		f := NewFault(mem)
		fh, _ := f.Create("/a")
		fh.WriteAt([]byte("abc"), 0)
		fh.Sync()
		fh.WriteAt([]byte("def"), 3)
		f.SetInjector(OnceAt(f.Ops(), Fault{Err: syscall.EIO, Lost: mode}))
		if err := fh.Sync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("mode %d: sync: %v, want EIO", mode, err)
		}
		got := readAll(t, f, "/a")
		switch mode {
		case LostDropped:
			if got != "abc" {
				t.Fatalf("dropped: cache holds %q, want %q", got, "abc")
			}
		case LostKeptInCache:
			if got != "abcdef" {
				t.Fatalf("kept in cache: reads %q, want %q", got, "abcdef")
			}
			// A later sync succeeds but does not persist the poisoned bytes.
			fh.WriteAt([]byte("g"), 6)
			if err := fh.Sync(); err != nil {
				t.Fatal(err)
			}
			disk := readAll(t, mem.Crash(CrashOptions{}), "/a")
			if disk != "abc\x00\x00\x00g" {
				t.Fatalf("after a later successful sync the disk holds %q, want the lost range as a hole", disk)
			}
		}
	}
}
