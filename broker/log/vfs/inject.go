package vfs

import (
	"os"
)

// OpKind names a file-system operation that a FaultFS Injector sees.
type OpKind uint8

// The operations. Every kind but OpRead is a mutation and gets a sequence
// number (Op.Seq).
const (
	OpWrite OpKind = iota + 1
	OpSync
	OpTruncate
	OpCreate
	OpRename
	OpRemove
	OpSyncDir
	OpMkdir
	OpRead
)

var opNames = [...]string{OpWrite: "write", OpSync: "sync", OpTruncate: "truncate", OpCreate: "create",
	OpRename: "rename", OpRemove: "remove", OpSyncDir: "syncdir", OpMkdir: "mkdir", OpRead: "read"}

func (k OpKind) String() string {
	if int(k) < len(opNames) && opNames[k] != "" {
		return opNames[k]
	}
	return "op?"
}

// Op is one operation offered to an Injector.
type Op struct {
	// Seq numbers the mutations through the FaultFS from 0 (the k of
	// "fail the k-th write or sync"); -1 for reads.
	Seq  int64
	Kind OpKind
	Name string // file or directory ("" for a file opened before naming was tracked)
	Len  int    // bytes of a write or read
}

// SyncLoss says what became of the data a failed Sync did not persist.
// After a failed fsync Linux marks the dirty pages clean: the data may sit
// in the page cache (readable now, never written back) or be dropped.
type SyncLoss uint8

const (
	// LostKeptInCache: the unsynced bytes stay readable but a later
	// successful Sync does not make them durable (only a rewrite does).
	LostKeptInCache SyncLoss = iota
	// LostDropped: the unsynced bytes are gone; reads see the last synced
	// content.
	LostDropped
)

// Fault is what an Injector makes an operation do. A nil *Fault lets the
// operation proceed.
type Fault struct {
	// Err fails the operation (wrapped in an *os.PathError naming the op
	// and file). With Err nil the operation proceeds (Halt still applies).
	Err error
	// Written (writes only) is how many bytes of the write reach the file
	// before it fails (clamped to the write's length): a torn write.
	Written int
	// Reported (writes only) is the count the failed write returns,
	// clamped to Written: 0 models a write that reports nothing although
	// part of it landed.
	Reported int
	// Lost (syncs only) is what happens to the data the failed sync left
	// unsynced (applies to MemFS files).
	Lost SyncLoss
	// Halt halts the FS after this operation, as a machine crash would:
	// every later mutation fails with ErrHalted. Take the disk state with
	// MemFS.Crash.
	Halt bool
}

// Injector decides the fate of each operation.
type Injector func(Op) *Fault

// SetInjector installs fn (nil removes it). It sees every operation
// through f and its files, mutations numbered from the current Ops().
func (f *FaultFS) SetInjector(fn Injector) {
	f.mu.Lock()
	f.inject = fn
	f.mu.Unlock()
}

// Ops returns how many mutations went through f so far (the next Seq).
func (f *FaultFS) Ops() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops
}

// decide numbers op, asks the injector and applies Halt. It returns the
// fault to apply (nil: proceed) or ErrHalted's fault when f is halted.
func (f *FaultFS) decide(kind OpKind, name string, n int) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	op := Op{Seq: -1, Kind: kind, Name: name, Len: n}
	if kind != OpRead {
		if f.halted {
			return &Fault{Err: ErrHalted}
		}
		op.Seq = f.ops
		f.ops++
	}
	if f.inject == nil {
		return nil
	}
	ft := f.inject(op)
	if ft == nil {
		return nil
	}
	if ft.Halt {
		f.halted = true
	}
	if ft.Err == nil {
		return nil
	}
	return ft
}

func (f *FaultFS) pathErr(kind OpKind, name string, err error) error {
	return &os.PathError{Op: kind.String(), Path: name, Err: err}
}

// syncLoser is implemented by files (MemFS) that can model what a failed
// sync does to unsynced data.
type syncLoser interface{ loseUnsynced(SyncLoss) }

// StickyFrom returns an injector failing every operation of the given
// kinds (all mutations if none given) from mutation seq on with err: a
// full disk (ErrNoSpace on writes and creates) or a read-only remount
// (EROFS on every mutation). Writes fail without writing anything.
func StickyFrom(seq int64, err error, kinds ...OpKind) Injector {
	return func(op Op) *Fault {
		if op.Kind == OpRead || op.Seq < seq {
			return nil
		}
		if len(kinds) > 0 && !containsKind(kinds, op.Kind) {
			return nil
		}
		return &Fault{Err: err}
	}
}

// OnceAt returns an injector applying ft to mutation seq only.
func OnceAt(seq int64, ft Fault) Injector {
	return func(op Op) *Fault {
		if op.Seq != seq {
			return nil
		}
		c := ft
		if op.Kind == OpWrite {
			c.Written = min(c.Written, op.Len)
			c.Reported = min(c.Reported, c.Written)
		}
		return &c
	}
}

func containsKind(ks []OpKind, k OpKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}
