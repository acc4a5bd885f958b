package vfs

import (
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
//   - SetSyncError(err): Sync fails with err (nil clears).
//   - SetCreateError(err): Create fails with err (nil clears).
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
	f.budget, f.budgetErr = n, err
	f.mu.Unlock()
}

// ClearWriteBudget removes the write budget (space freed).
func (f *FaultFS) ClearWriteBudget() {
	f.mu.Lock()
	f.budget, f.budgetErr = -1, nil
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
	f.fs.mu.Lock()
	serr := f.fs.syncErr
	f.fs.mu.Unlock()
	if serr != nil {
		return fmt.Errorf("sync: %w", serr)
	}
	return f.File.Sync()
}
