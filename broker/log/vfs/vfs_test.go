package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"testing"
)

// exercise runs the same contract checks against any FS.
func exercise(t *testing.T, fsys FS, dir string) {
	t.Helper()
	if err := fsys.MkdirAll(dir + "/sub"); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create(dir + "/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello world"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("W"), 6); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Size(); n != 11 {
		t.Fatalf("size %d", n)
	}
	buf := make([]byte, 20)
	n, err := f.ReadAt(buf, 0)
	if n != 11 || !errors.Is(err, io.EOF) || string(buf[:n]) != "hello World" {
		t.Fatalf("ReadAt %d %v %q", n, err, buf[:n])
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := fsys.Rename(dir+"/a", dir+"/sub/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Open(dir + "/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old name still opens: %v", err)
	}
	data, err := ReadFile(fsys, dir+"/sub/b")
	if err != nil || string(data) != "hello" {
		t.Fatalf("%q %v", data, err)
	}
	names, err := fsys.List(dir)
	if err != nil || len(names) != 1 || names[0] != "sub" {
		t.Fatalf("list %v %v", names, err)
	}
	// Unlink semantics: an open file stays readable after Remove.
	r, _ := fsys.Open(dir + "/sub/b")
	if err := fsys.Remove(dir + "/sub/b"); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.ReadAt(buf[:5], 0); n != 5 {
		t.Fatal("removed file not readable through an open handle")
	}
	r.Close()
	if err := WriteFileAtomic(fsys, dir, dir+"/c", []byte("x"), true); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	m, release, err := MapFile(fsys, dir+"/c")
	if err != nil || string(m) != "x" {
		t.Fatalf("map %q %v", m, err)
	}
	release()
	if err := fsys.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
}

func TestOS(t *testing.T)  { exercise(t, OS, filepath.Join(t.TempDir(), "d")) }
func TestMem(t *testing.T) { exercise(t, NewMem(), "/d") }
func TestFaultPassThrough(t *testing.T) {
	exercise(t, NewFault(NewMem()), "/d")
}

func TestMemCrash(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	f.WriteAt([]byte("synced"), 0)
	f.Sync()
	f.WriteAt([]byte("-unsynced"), 6)
	none := m.Crash(CrashOptions{})
	if b, _ := ReadFile(none, "/d/f"); string(b) != "synced" {
		t.Fatalf("crash keeping none: %q", b)
	}
	some := m.Crash(CrashOptions{KeepUnsynced: func(string, int) int { return 3 }})
	if b, _ := ReadFile(some, "/d/f"); string(b) != "synced-un" {
		t.Fatalf("crash keeping 3: %q", b)
	}
	// The original keeps working.
	if b, _ := ReadFile(m, "/d/f"); string(b) != "synced-unsynced" {
		t.Fatalf("original: %q", b)
	}
}

func TestFaultWriteBudgetAndCrash(t *testing.T) {
	m := NewMem()
	ff := NewFault(m)
	ff.MkdirAll("/d")
	f, _ := ff.Create("/d/f")
	ff.SetWriteBudget(4, ErrNoSpace)
	n, err := f.WriteAt([]byte("abcdefgh"), 0)
	if n != 4 || !errors.Is(err, ErrNoSpace) {
		t.Fatalf("torn write: %d %v", n, err)
	}
	if _, err := f.WriteAt([]byte("x"), 4); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("disk still full: %v", err)
	}
	ff.ClearWriteBudget()
	if _, err := f.WriteAt([]byte("efgh"), 4); err != nil {
		t.Fatal(err)
	}
	if b, _ := ReadFile(m, "/d/f"); !bytes.Equal(b, []byte("abcdefgh")) {
		t.Fatalf("%q", b)
	}
	ff.SetSyncError(ErrInjected)
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("sync: %v", err)
	}
	ff.SetSyncError(nil)
	ff.CrashAfter(2)
	f.WriteAt([]byte("123"), 8)
	if !ff.Halted() {
		t.Fatal("not halted")
	}
	if err := f.Truncate(0); !errors.Is(err, ErrHalted) {
		t.Fatalf("truncate after crash: %v", err)
	}
	if _, err := ff.Create("/d/g"); !errors.Is(err, ErrHalted) {
		t.Fatalf("create after crash: %v", err)
	}
	if b, _ := ReadFile(m, "/d/f"); string(b) != "abcdefgh12" {
		t.Fatalf("torn prefix: %q", b)
	}
}
