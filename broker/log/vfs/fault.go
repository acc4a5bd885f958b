package vfs

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// FaultFS wraps an FS and injects faults into writes and syncs:
//
//   - SetWriteBudget(n, err): the next n bytes written (over all files)
//     succeed; the write that crosses the budget is cut short at that byte
//     (a torn write: its prefix reaches the file) and returns err, and so does
//     every later write until ClearWriteBudget. With err = ErrNoSpace this is a
//     full disk.
//
//   - SetSyncError(err): Sync fails with err (nil clears).
//
//   - SetCreateError(err): Create fails with err (nil clears).
//
//   - SetInjector(fn): fn decides, per operation (numbered mutations, and
//     reads), whether it fails and how: torn writes that report none or some
//     of the bytes that landed, sticky ENOSPC or EROFS, EIO on read, failed
//     syncs whose unsynced data is then dropped or kept in cache but never
//     made durable, and a halt (crash) after any operation (inject.go).
//
//   - CrashAfter(n): like a write budget, but when it runs out the FS halts
//     as a crashed machine would: the crossing write is torn and every later
//     mutation (write, truncate, sync, create, rename, remove) fails. Take the
//     disk state with MemFS.Crash on the wrapped MemFS and reopen on that.
//
// Crash simulation is MemFS.Crash on the wrapped MemFS. FaultFS is safe for
// concurrent use.
type FaultFS struct {
	FS
	mu        sync.Mutex
	budget    int64 // -1 = unlimited
	budgetErr error
	syncErr   error
	createErr error
	written   int64
	crashing  bool // halt when the budget runs out
	halted    bool
	inject    Injector // inject.go
	ops       int64    // mutations so far (Op.Seq)
}

// ErrHalted is returned by every mutation after a CrashAfter fault fired.
var ErrHalted = errors.New("vfs: file system halted (simulated crash)")

// CrashAfter halts the FS after n more bytes are written (see FaultFS).
func (f *FaultFS) CrashAfter(n int64) {
	f.mu.Lock()
	f.budget, f.budgetErr, f.crashing = n, ErrHalted, true
	f.mu.Unlock()
}

// Halted reports whether a CrashAfter fault fired.
func (f *FaultFS) Halted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.halted
}

// check numbers a mutation, and returns the injected or halted error.
func (f *FaultFS) check(kind OpKind, name string) error {
	if ft := f.decide(kind, name, 0); ft != nil {
		return f.pathErr(kind, name, ft.Err)
	}
	return nil
}

// NewFault wraps inner.
func NewFault(inner FS) *FaultFS { return &FaultFS{FS: inner, budget: -1} }

// SetWriteBudget lets n more bytes be written, then fails writes with err
// (ErrInjected if err is nil).
func (f *FaultFS) SetWriteBudget(n int64, err error) {
	if err == nil {
		err = ErrInjected
	}
	f.mu.Lock()
	f.budget, f.budgetErr, f.crashing = n, err, false
	f.mu.Unlock()
}

// ClearWriteBudget removes the write budget (space freed).
func (f *FaultFS) ClearWriteBudget() {
	f.mu.Lock()
	f.budget, f.budgetErr, f.crashing = -1, nil, false
	f.mu.Unlock()
}

// SetSyncError makes Sync and SyncDir fail with err; nil clears it.
func (f *FaultFS) SetSyncError(err error) {
	f.mu.Lock()
	f.syncErr = err
	f.mu.Unlock()
}

// SetCreateError makes Create fail with err; nil clears it.
func (f *FaultFS) SetCreateError(err error) {
	f.mu.Lock()
	f.createErr = err
	f.mu.Unlock()
}

// Written returns the total bytes successfully written through f.
func (f *FaultFS) Written() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written
}

// allow returns how many of n bytes may be written and the error to return.
func (f *FaultFS) allow(n int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.halted {
		return 0, ErrHalted
	}
	if f.budget < 0 {
		f.written += int64(n)
		return n, nil
	}
	if int64(n) <= f.budget {
		f.budget -= int64(n)
		f.written += int64(n)
		return n, nil
	}
	k := int(f.budget)
	f.budget = 0
	if f.crashing {
		f.halted = true
	}
	f.written += int64(k)
	return k, f.budgetErr
}

func (f *FaultFS) wrap(name string, file File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *FaultFS) Create(name string) (File, error) {
	if err := f.check(OpCreate, name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	cerr := f.createErr
	f.mu.Unlock()
	if cerr != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: cerr}
	}
	file, err := f.FS.Create(name)
	return f.wrap(name, file, err)
}

func (f *FaultFS) OpenReadWrite(name string) (File, error) {
	file, err := f.FS.OpenReadWrite(name)
	return f.wrap(name, file, err)
}

func (f *FaultFS) Open(name string) (File, error) {
	file, err := f.FS.Open(name)
	return f.wrap(name, file, err)
}

func (f *FaultFS) SyncDir(dir string) error {
	if err := f.check(OpSyncDir, dir); err != nil {
		return err
	}
	f.mu.Lock()
	serr := f.syncErr
	f.mu.Unlock()
	if serr != nil {
		return &os.PathError{Op: "syncdir", Path: dir, Err: serr}
	}
	return f.FS.SyncDir(dir)
}

type faultFile struct {
	File
	fs   *FaultFS
	name string
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if ft := f.fs.decide(OpRead, f.name, len(p)); ft != nil {
		return 0, f.fs.pathErr(OpRead, f.name, ft.Err)
	}
	return f.File.ReadAt(p, off)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if ft := f.fs.decide(OpWrite, f.name, len(p)); ft != nil {
		w := min(max(ft.Written, 0), len(p))
		if w > 0 && ft.Err != ErrHalted {
			if _, err := f.File.WriteAt(p[:w], off); err != nil {
				return 0, err
			}
		}
		return min(max(ft.Reported, 0), w), f.fs.pathErr(OpWrite, f.name, ft.Err)
	}
	k, ferr := f.fs.allow(len(p))
	if k > 0 {
		n, err := f.File.WriteAt(p[:k], off)
		if err != nil {
			return n, err
		}
	}
	if ferr != nil {
		return k, fmt.Errorf("write at %d: %w", off+int64(k), ferr)
	}
	return k, nil
}

func (f *faultFile) Sync() error {
	if ft := f.fs.decide(OpSync, f.name, 0); ft != nil {
		if l, ok := f.File.(syncLoser); ok && ft.Err != ErrHalted {
			l.loseUnsynced(ft.Lost)
		}
		return f.fs.pathErr(OpSync, f.name, ft.Err)
	}
	f.fs.mu.Lock()
	serr := f.fs.syncErr
	f.fs.mu.Unlock()
	if serr != nil {
		return fmt.Errorf("sync: %w", serr)
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.check(OpRename, oldname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *FaultFS) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *FaultFS) RemoveAll(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.FS.RemoveAll(name)
}

func (f *FaultFS) MkdirAll(dir string) error {
	if err := f.check(OpMkdir, dir); err != nil {
		return err
	}
	return f.FS.MkdirAll(dir)
}
