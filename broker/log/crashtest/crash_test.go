package crashtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/txn"
)

const (
	dir      = "/data/events-0"
	steps    = 24
	producer = 7
)

func config() log.Config {
	c := log.DefaultConfig()
	c.SegmentBytes = 700 // a roll every few batches
	c.IndexIntervalBytes = 150
	c.FlushMessages = 1 // an acknowledged append is durable
	return c
}

// batch builds step's RecordBatch v2: two records, the step number in the
// first timestamp; idempotent steps carry producer 7 with sequence seq.
func batch(step int, idempotent bool, seq int32) []byte {
	var raw []byte
	for i := 0; i < 2; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(fmt.Sprintf("step-%02d-record-%d-%s", step, i, strings.Repeat("x", 60)))}
		r.Length = 0
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		raw = append(raw, r.AppendTo(nil)...)
	}
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: 1, FirstTimestamp: int64(1000 + step), MaxTimestamp: int64(1000 + step),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 2, Records: raw}
	if idempotent {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = producer, 0, seq
	}
	rb.Length = int32(61 - 12 + len(raw))
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// attempt is one append of the workload and how it ended.
type attempt struct {
	step       int
	idempotent bool
	seq        int32
	acked      bool
	// unknown: it failed in a way that leaves its outcome open (the FS
	// halted, or the log went offline after writing it): after recovery
	// it may be there, whole, or not at all.
	unknown bool
}

// workload appends steps batches (odd steps idempotent), retrying a failed
// append once as a client would, snapshots producer state every 5 steps,
// and stops when an append fails twice. afterFail, if set, is called once
// after the first failure and may clear the fault (space freed).
func workload(t *testing.T, fs *vfs.FaultFS, afterFail func()) []attempt {
	var out []attempt
	l, err := log.Open(fs, dir, config(), log.Options{})
	if err != nil {
		return nil // the fault hit the creation of the directory or first segment
	}
	defer l.Close()
	p, err := txn.OpenPartition(fs, l, txn.Options{SnapshotInterval: -1})
	if err != nil {
		return nil
	}
	defer p.Close()
	seq := int32(0)
	failed := false
	for step := 0; step < steps; step++ {
		idem := step%2 == 1
		ok := false
		for try := 0; try < 2 && !ok; try++ {
			b := batch(step, idem, seq)
			_, err := p.Append(b, txn.FromClient, func() (log.AppendInfo, error) { return l.Append(b, 0) })
			a := attempt{step: step, idempotent: idem, seq: seq, acked: err == nil}
			if err != nil {
				a.unknown = fs.Halted() || errors.Is(err, log.ErrOffline)
				if !a.unknown {
					// A failed append with a known outcome leaves the files
					// as they were: no torn bytes anywhere, now.
					if _, verr := log.Verify(fs.FS, dir); verr != nil {
						t.Errorf("after a failed append of step %d (%v) the log's files are not valid: %v", step, err, verr)
					}
				}
				if !failed && afterFail != nil {
					afterFail()
				}
				failed = true
			}
			out = append(out, a)
			ok = err == nil
		}
		if !ok {
			return out
		}
		if idem {
			seq += 2
		}
		if step%5 == 4 {
			p.Snapshot() // may fail under a fault: a snapshot is an optimisation
		}
	}
	return out
}

// fault is one kind of fault placed at mutation k.
type fault struct {
	name string
	at   func(k int64, fired *bool, fs *vfs.FaultFS) vfs.Injector
	// freed: after the first failed append the fault is cleared (space freed).
	freed bool
}

func writeAt(k int64, fired *bool, mk func(op vfs.Op) *vfs.Fault) vfs.Injector {
	return func(op vfs.Op) *vfs.Fault {
		if op.Seq == k && op.Kind == vfs.OpWrite {
			*fired = true
			return mk(op)
		}
		return nil
	}
}

func stickyFrom(k int64, fired *bool, err error, match func(vfs.Op) bool) vfs.Injector {
	return func(op vfs.Op) *vfs.Fault {
		if op.Seq >= k && op.Kind != vfs.OpRead && match(op) {
			*fired = true
			return &vfs.Fault{Err: err}
		}
		return nil
	}
}

var faults = []fault{
	{name: "crash", at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return func(op vfs.Op) *vfs.Fault {
			if op.Seq != k {
				return nil
			}
			*fired = true
			return &vfs.Fault{Err: vfs.ErrHalted, Written: op.Len / 2, Halt: true}
		}
	}},
	{name: "torn-write-reports-none", at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return writeAt(k, fired, func(op vfs.Op) *vfs.Fault {
			return &vfs.Fault{Err: vfs.ErrNoSpace, Written: op.Len / 2}
		})
	}},
	{name: "torn-write-reports-some", at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return writeAt(k, fired, func(op vfs.Op) *vfs.Fault {
			return &vfs.Fault{Err: syscall.EIO, Written: op.Len * 3 / 4, Reported: op.Len / 4}
		})
	}},
	{name: "disk-full-then-freed", freed: true, at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return stickyFrom(k, fired, vfs.ErrNoSpace, func(op vfs.Op) bool { return op.Kind == vfs.OpWrite || op.Kind == vfs.OpCreate })
	}},
	{name: "disk-full-torn", at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return func(op vfs.Op) *vfs.Fault {
			if op.Seq < k || (op.Kind != vfs.OpWrite && op.Kind != vfs.OpCreate) {
				return nil
			}
			*fired = true
			return &vfs.Fault{Err: vfs.ErrNoSpace, Written: op.Len / 3}
		}
	}},
	{name: "index-writes-fail", at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return stickyFrom(k, fired, syscall.EIO, func(op vfs.Op) bool {
			return strings.Contains(op.Name, ".index") || strings.Contains(op.Name, ".timeindex")
		})
	}},
	{name: "read-only-remount", at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return stickyFrom(k, fired, syscall.EROFS, func(vfs.Op) bool { return true })
	}},
	{name: "fsync-fails-data-dropped", at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return syncAt(k, fired, vfs.LostDropped)
	}},
	{name: "fsync-fails-data-kept-in-cache", at: func(k int64, fired *bool, _ *vfs.FaultFS) vfs.Injector {
		return syncAt(k, fired, vfs.LostKeptInCache)
	}},
}

func syncAt(k int64, fired *bool, lost vfs.SyncLoss) vfs.Injector {
	return func(op vfs.Op) *vfs.Fault {
		if op.Seq == k && (op.Kind == vfs.OpSync || op.Kind == vfs.OpSyncDir) {
			*fired = true
			return &vfs.Fault{Err: syscall.EIO, Lost: lost}
		}
		return nil
	}
}

// TestCrashAtEveryOperation runs the workload with each fault at each
// mutation, crashes, reopens and checks the log (see the package doc).
func TestCrashAtEveryOperation(t *testing.T) {
	dry := vfs.NewFault(vfs.NewMem())
	if got := workload(t, dry, nil); len(got) != steps {
		t.Fatalf("fault-free workload made %d attempts, want %d", len(got), steps)
	}
	total := dry.Ops()
	t.Logf("workload: %d mutations", total)
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			runs := 0
			for k := int64(0); k < total+1; k++ {
				mem := vfs.NewMem()
				fs := vfs.NewFault(mem)
				fired := false
				fs.SetInjector(f.at(k, &fired, fs))
				var afterFail func()
				if f.freed {
					afterFail = func() { fs.SetInjector(nil) }
				}
				attempts := workload(t, fs, afterFail)
				if !fired {
					continue
				}
				runs++
				for _, keep := range []bool{false, true} {
					opts := vfs.CrashOptions{}
					if keep {
						opts.KeepUnsynced = func(string, int) int { return 1 << 30 }
					}
					desc := fmt.Sprintf("%s at mutation %d, crash keeping unsynced data=%v", f.name, k, keep)
					check(t, desc, mem.Crash(opts), attempts)
				}
			}
			if runs == 0 {
				t.Fatalf("fault %s never fired", f.name)
			}
			t.Logf("%d runs", runs)
		})
	}
}

// check reopens the crashed disk and asserts the log is valid and holds
// the acknowledged prefix.
func check(t *testing.T, desc string, disk *vfs.MemFS, attempts []attempt) {
	t.Helper()
	if len(attempts) == 0 {
		return // nothing was ever written
	}
	l, err := log.Open(disk, dir, config(), log.Options{})
	if err != nil {
		t.Fatalf("%s: reopen: %v", desc, err)
	}
	defer l.Close()
	rep, err := log.Verify(disk, dir)
	if err != nil {
		t.Fatalf("%s: after recovery the segments are not valid: %v", desc, err)
	}
	var got []log.BatchHeader
	if err := l.ScanBatches(0, func(h log.BatchHeader) error { got = append(got, h); return nil }); err != nil {
		t.Fatalf("%s: scan: %v", desc, err)
	}
	if int64(len(got)) != int64(rep.Batches) {
		t.Fatalf("%s: the log serves %d batches, its files hold %d", desc, len(got), rep.Batches)
	}
	// got must be attempts' acked ones in order, each once, plus only
	// unknown-outcome attempts (whole).
	i := 0
	var lastIdem *log.BatchHeader
	for ai, a := range attempts {
		step := int64(1000 + a.step)
		retried := ai+1 < len(attempts) && attempts[ai+1].step == a.step
		match := i < len(got) && got[i].FirstTimestamp == step &&
			(!a.idempotent || got[i].BaseSequence == a.seq)
		switch {
		case match && (a.acked || a.unknown):
			if a.idempotent {
				lastIdem = &got[i]
			}
			i++
		case match && retried:
			// the client's retry of this step is what is in the log
		case match:
			t.Fatalf("%s: failed append of step %d (not acknowledged, outcome known) is in the log", desc, a.step)
		case a.acked:
			t.Fatalf("%s: acknowledged append of step %d is missing (log has %d batches, at %d)", desc, a.step, len(got), i)
		}
	}
	if i != len(got) {
		t.Fatalf("%s: %d batches in the log that no attempt explains (first: first timestamp %d)", desc, len(got)-i, got[i].FirstTimestamp)
	}
	// Every batch is readable by its offsets through the indexes.
	for _, h := range got {
		for _, off := range []int64{h.BaseOffset, h.LastOffset()} {
			sec, err := l.Read(off, 1<<20, l.EndOffset())
			if err != nil {
				t.Fatalf("%s: read offset %d: %v", desc, off, err)
			}
			b, err := sec.Bytes()
			sec.Release()
			if err != nil {
				t.Fatal(err)
			}
			if first, err := log.ParseBatch(b[:h.Size()]); err != nil || first.BaseOffset != h.BaseOffset {
				t.Fatalf("%s: read offset %d: got batch %d (%v), want %d", desc, off, first.BaseOffset, err, h.BaseOffset)
			}
		}
	}
	// Producer state: the last idempotent batch in the log is a duplicate
	// when resent; the next sequence is accepted.
	p, err := txn.OpenPartition(disk, l, txn.Options{SnapshotInterval: -1})
	if err != nil {
		t.Fatalf("%s: producer state: %v", desc, err)
	}
	defer p.Close()
	next := int32(0)
	if lastIdem != nil {
		step := int(lastIdem.FirstTimestamp - 1000)
		b := batch(step, true, lastIdem.BaseSequence)
		res, err := p.Append(b, txn.FromClient, func() (log.AppendInfo, error) { return l.Append(b, 0) })
		if err != nil || !res.Duplicate || res.Info.FirstOffset != lastIdem.BaseOffset {
			t.Fatalf("%s: resending step %d (seq %d): duplicate=%v first offset %d err %v; want a duplicate of offset %d",
				desc, step, lastIdem.BaseSequence, res.Duplicate, res.Info.FirstOffset, err, lastIdem.BaseOffset)
		}
		next = lastIdem.BaseSequence + 2
	}
	b := batch(99, true, next)
	if res, err := p.Append(b, txn.FromClient, func() (log.AppendInfo, error) { return l.Append(b, 0) }); err != nil || res.Duplicate {
		t.Fatalf("%s: the producer's next batch (seq %d): duplicate=%v err=%v", desc, next, res.Duplicate, err)
	}
}

// TestEIOOnReadAtEveryRead: after a crash, the reopen (recovery, producer
// state) meets EIO at its k-th read, for every k: it must fail with that
// error and change nothing (recovery never takes a read error for a torn
// batch), so that a later reopen finds every acknowledged batch.
func TestEIOOnReadAtEveryRead(t *testing.T) {
	mem := vfs.NewMem()
	attempts := workload(t, vfs.NewFault(mem), nil)
	disk := mem.Crash(vfs.CrashOptions{})
	reads := func(fs *vfs.FaultFS) error {
		l, err := log.Open(fs, dir, config(), log.Options{})
		if err != nil {
			return err
		}
		defer l.Close()
		p, err := txn.OpenPartition(fs, l, txn.Options{SnapshotInterval: -1})
		if err != nil {
			return err
		}
		p.Discard()
		return nil
	}
	n := 0
	count := vfs.NewFault(disk.Crash(vfs.CrashOptions{}))
	count.SetInjector(func(op vfs.Op) *vfs.Fault {
		if op.Kind == vfs.OpRead {
			n++
		}
		return nil
	})
	if err := reads(count); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for k := 0; k < n; k++ {
		d := disk.Crash(vfs.CrashOptions{}) // a fresh copy of the crashed disk
		fs := vfs.NewFault(d)
		i := 0
		fs.SetInjector(func(op vfs.Op) *vfs.Fault {
			if op.Kind != vfs.OpRead {
				return nil
			}
			i++
			if i-1 == k {
				return &vfs.Fault{Err: syscall.EIO}
			}
			return nil
		})
		if err := reads(fs); err != nil {
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("EIO at read %d: reopen failed with %v, which does not name the I/O error", k, err)
			}
			failed++
		}
		check(t, fmt.Sprintf("after EIO at read %d of %d", k, n), d, attempts)
	}
	if failed == 0 {
		t.Fatalf("no EIO among %d reads failed the reopen", n)
	}
	t.Logf("%d reads, %d EIOs failed the reopen, none cut data", n, failed)
}
