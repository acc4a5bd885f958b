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

func (f *FaultFS) checkHalted(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.halted {
		return &os.PathError{Op: op, Path: name, Err: ErrHalted}
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

func (f *FaultFS) wrap(file File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

func (f *FaultFS) Create(name string) (File, error) {
	if err := f.checkHalted("create", name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	cerr := f.createErr
	f.mu.Unlock()
	if cerr != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: cerr}
	}
	return f.wrap(f.FS.Create(name))
}

func (f *FaultFS) OpenReadWrite(name string) (File, error) {
	return f.wrap(f.FS.OpenReadWrite(name))
}

func (f *FaultFS) Open(name string) (File, error) { return f.wrap(f.FS.Open(name)) }

func (f *FaultFS) SyncDir(dir string) error {
	if err := f.checkHalted("syncdir", dir); err != nil {
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
	fs *FaultFS
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
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
	if err := f.fs.checkHalted("sync", ""); err != nil {
		return err
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
	if err := f.fs.checkHalted("truncate", ""); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *FaultFS) Rename(oldname, newname string) error {
	if err := f.checkHalted("rename", oldname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *FaultFS) Remove(name string) error {
	if err := f.checkHalted("remove", name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

func (f *FaultFS) RemoveAll(name string) error {
	if err := f.checkHalted("removeall", name); err != nil {
		return err
	}
	return f.FS.RemoveAll(name)
}

func (f *FaultFS) MkdirAll(dir string) error {
	if err := f.checkHalted("mkdir", dir); err != nil {
		return err
	}
	return f.FS.MkdirAll(dir)
}
