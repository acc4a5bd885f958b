package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log"
	"weir/broker/log/vfs"
)

// makeBatch builds a valid RecordBatch v2 with n records.
func makeBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(fmt.Sprintf("v%d-%d", seq, i))}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // Length 0 encodes in one byte
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           int32(n),
		Records:              recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     *testing.T
	fsys  vfs.FS
	dir   string
	clock *fakeClock
	opts  Options
	l     *log.Log
	p     *Partition
}

func newFixture(t *testing.T, fsys vfs.FS, dir string) *fixture {
	f := &fixture{t: t, fsys: fsys, dir: dir, clock: &fakeClock{t: time.UnixMilli(1_700_000_000_000)}}
	f.opts = Options{Now: f.clock.Now, SnapshotInterval: -1}
	f.open()
	return f
}

func (f *fixture) open() {
	f.t.Helper()
	l, err := log.Open(f.fsys, f.dir, log.DefaultConfig(), log.Options{Now: f.clock.Now})
	if err != nil {
		f.t.Fatal(err)
	}
	p, err := OpenPartition(f.fsys, l, f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.l, f.p = l, p
}

// restart closes cleanly (final snapshot) or not (crash: no snapshot) and
// reopens.
func (f *fixture) restart(clean bool) {
	f.t.Helper()
	if clean {
		if err := f.p.Close(); err != nil {
			f.t.Fatal(err)
		}
	} else {
		f.p.Discard()
	}
	if err := f.l.Close(); err != nil {
		f.t.Fatal(err)
	}
	f.open()
}

func (f *fixture) append(b []byte) (Result, error) {
	return f.p.Append(b, FromClient, func() (log.AppendInfo, error) { return f.l.Append(b, 0) })
}

func (f *fixture) mustAppend(b []byte, wantFirst int64, wantDup bool) {
	f.t.Helper()
	res, err := f.append(b)
	if err != nil {
		f.t.Fatal(err)
	}
	if res.Info.FirstOffset != wantFirst || res.Duplicate != wantDup {
		f.t.Fatalf("append: first offset %d dup %v, want %d dup %v", res.Info.FirstOffset, res.Duplicate, wantFirst, wantDup)
	}
}

func (f *fixture) snapshotFiles() []string {
	names, err := f.fsys.List(f.dir)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, snapshotSuffix) {
			out = append(out, n)
		}
	}
	return out
}

func TestPartitionDedupAndOrder(t *testing.T) {
	f := newFixture(t, vfs.OS, t.TempDir())
	f.mustAppend(makeBatch(7, 0, 0, 3, 100), 0, false)
	f.mustAppend(makeBatch(7, 0, 3, 2, 101), 3, false)
	f.mustAppend(makeBatch(-1, -1, -1, 4, 102), 5, false) // not idempotent
	f.mustAppend(makeBatch(7, 0, 0, 3, 100), 0, true)     // resend of the first
	f.mustAppend(makeBatch(7, 0, 3, 2, 101), 3, true)
	if end := f.l.EndOffset(); end != 9 {
		t.Fatalf("log end %d, want 9: a duplicate was appended", end)
	}
	if n := f.p.Duplicates(); n != 2 {
		t.Fatalf("Duplicates() = %d, want 2", n)
	}
	_, err := f.append(makeBatch(7, 0, 9, 1, 103))
	if code, _ := KafkaCode(err); !errors.Is(err, ErrOutOfOrderSequence) || code != 45 {
		t.Fatalf("gap: err %v code %d", err, code)
	}
	f.mustAppend(makeBatch(7, 1, 0, 1, 104), 9, false) // new epoch at 0
	_, err = f.append(makeBatch(7, 0, 5, 1, 105))
	if code, _ := KafkaCode(err); code != 47 {
		t.Fatalf("old epoch: err %v", err)
	}
	if end := f.l.EndOffset(); end != 10 {
		t.Fatalf("log end %d, want 10", end)
	}
	// A corrupt resend of a known batch is not acknowledged as a duplicate.
	bad := makeBatch(7, 1, 0, 1, 104)
	bad[len(bad)-1] ^= 1
	if _, err := f.append(bad); !errors.Is(err, log.ErrCorruptBatch) {
		t.Fatalf("corrupt duplicate: err %v", err)
	}
}

func TestPartitionSurvivesCleanRestart(t *testing.T) {
	f := newFixture(t, vfs.OS, t.TempDir())
	for i := 0; i < 8; i++ {
		f.mustAppend(makeBatch(3, 0, int32(i*2), 2, int64(i)), int64(i*2), false)
	}
	f.restart(true)
	if f.p.loadedFrom != 16 || f.p.scannedBatches != 0 {
		t.Fatalf("clean restart loaded from %d, scanned %d batches; want the snapshot at 16 and no scan", f.p.loadedFrom, f.p.scannedBatches)
	}
	f.mustAppend(makeBatch(3, 0, 14, 2, 7), 14, true) // last batch: duplicate
	f.mustAppend(makeBatch(3, 0, 6, 2, 3), 6, true)   // 5th from last: duplicate
	if _, err := f.append(makeBatch(3, 0, 4, 2, 2)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("6th from last: %v", err)
	}
	f.mustAppend(makeBatch(3, 0, 16, 1, 8), 16, false)
}

func TestPartitionRebuildsAfterCrash(t *testing.T) {
	f := newFixture(t, vfs.OS, t.TempDir())
	f.mustAppend(makeBatch(1, 0, 0, 1, 1), 0, false)
	f.mustAppend(makeBatch(2, 4, 10, 2, 1), 1, false)
	if err := f.p.Snapshot(); err != nil { // snapshot at 3
		t.Fatal(err)
	}
	f.mustAppend(makeBatch(1, 0, 1, 1, 1), 3, false)
	f.mustAppend(makeBatch(2, 4, 12, 1, 1), 4, false)
	f.restart(false) // no snapshot at close: the tail after 3 must be replayed
	if f.p.loadedFrom != 3 || f.p.scannedBatches != 2 {
		t.Fatalf("loaded from %d, scanned %d; want snapshot 3 and 2 batches", f.p.loadedFrom, f.p.scannedBatches)
	}
	f.mustAppend(makeBatch(1, 0, 1, 1, 1), 3, true)
	f.mustAppend(makeBatch(2, 4, 12, 1, 1), 4, true)
	f.mustAppend(makeBatch(2, 4, 10, 2, 1), 1, true)
	if p, _ := f.p.Producer(2); p.Epoch != 4 || len(p.Batches) != 2 {
		t.Fatalf("producer 2 after rebuild: %+v", p)
	}
	// OpenPartition wrote a snapshot after replaying.
	if got := f.snapshotFiles(); len(got) == 0 || got[len(got)-1] != snapshotName(5) {
		t.Fatalf("snapshots after rebuild: %v", got)
	}
}

func TestPartitionRebuildWithoutAnySnapshot(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), "/data/t-0")
	f.mustAppend(makeBatch(9, 0, 0, 5, 1), 0, false)
	f.mustAppend(makeBatch(9, 0, 5, 5, 1), 5, false)
	for _, n := range f.snapshotFiles() {
		if err := f.fsys.Remove(path.Join(f.dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	f.restart(false)
	if f.p.loadedFrom != -1 || f.p.scannedBatches != 2 {
		t.Fatalf("loaded from %d scanned %d", f.p.loadedFrom, f.p.scannedBatches)
	}
	f.mustAppend(makeBatch(9, 0, 5, 5, 1), 5, true)
}

func TestPartitionIgnoresBadSnapshots(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), "/data/t-0")
	f.mustAppend(makeBatch(4, 0, 0, 2, 1), 0, false)
	f.restart(true) // snapshot at 2
	f.mustAppend(makeBatch(4, 0, 2, 2, 1), 2, false)
	f.p.Discard()
	f.l.Close()
	// A damaged newest snapshot and one past the log end (as a truncation
	// would leave): both removed, the good one used, the tail replayed.
	good := path.Join(f.dir, snapshotName(2))
	data, err := vfs.ReadFile(f.fsys, good)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff
	if err := vfs.WriteFileAtomic(f.fsys, f.dir, path.Join(f.dir, snapshotName(3)), data, false); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(f.fsys, f.dir, path.Join(f.dir, snapshotName(99)), NewState().EncodeSnapshot(99), false); err != nil {
		t.Fatal(err)
	}
	f.open()
	if f.p.loadedFrom != 2 || f.p.scannedBatches != 1 {
		t.Fatalf("loaded from %d scanned %d; want 2 and 1", f.p.loadedFrom, f.p.scannedBatches)
	}
	for _, n := range f.snapshotFiles() {
		if n == snapshotName(3) || n == snapshotName(99) {
			t.Fatalf("bad snapshot %s not removed", n)
		}
	}
	f.mustAppend(makeBatch(4, 0, 2, 2, 1), 2, true)
	f.mustAppend(makeBatch(4, 0, 0, 2, 1), 0, true)
}

func TestPartitionExpiresIdleProducers(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), "/d/t-0")
	f.opts.Expiration = time.Hour
	f.restart(true)
	f.mustAppend(makeBatch(1, 0, 0, 1, 1), 0, false)
	f.clock.Add(59 * time.Minute)
	f.mustAppend(makeBatch(2, 0, 0, 1, 1), 1, false)
	if n := f.p.Expire(); n != 0 {
		t.Fatalf("expired %d before the hour", n)
	}
	f.clock.Add(time.Minute)
	if n := f.p.Expire(); n != 1 {
		t.Fatalf("expired %d, want producer 1", n)
	}
	if _, ok := f.p.Producer(1); ok {
		t.Fatal("producer 1 still known")
	}
	// An expired producer is accepted at any sequence.
	f.mustAppend(makeBatch(1, 0, 42, 1, 1), 2, false)
	// Expiry also happens during appends.
	f.clock.Add(2 * time.Hour)
	f.mustAppend(makeBatch(3, 0, 0, 1, 1), 3, false)
	if n := f.p.NumProducers(); n != 1 {
		t.Fatalf("%d producers after 2h idle, want only producer 3", n)
	}
}

func TestPartitionPeriodicSnapshot(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), "/d/t-0")
	f.opts.SnapshotInterval = time.Minute
	f.restart(true)
	f.mustAppend(makeBatch(1, 0, 0, 1, 1), 0, false)
	if got := f.snapshotFiles(); len(got) != 0 {
		t.Fatalf("snapshot before the interval: %v", got)
	}
	for i := 1; i <= 4; i++ {
		f.clock.Add(time.Minute)
		f.mustAppend(makeBatch(1, 0, int32(i), 1, 1), int64(i), false)
		f.p.snapDone.Wait() // the write runs in the background
		got := f.snapshotFiles()
		if want := snapshotName(int64(i + 1)); len(got) == 0 || got[len(got)-1] != want {
			t.Fatalf("after append %d: snapshots %v, want newest %s", i, got, want)
		}
		if len(got) > snapshotsKept {
			t.Fatalf("kept %d snapshots: %v", len(got), got)
		}
	}
	// Within the interval no new snapshot is taken.
	f.mustAppend(makeBatch(1, 0, 5, 1, 1), 5, false)
	f.p.snapDone.Wait()
	if got := f.snapshotFiles(); got[len(got)-1] != snapshotName(5) {
		t.Fatalf("snapshot inside the interval: %v", got)
	}
}

func TestPartitionConcurrentResends(t *testing.T) {
	f := newFixture(t, vfs.OS, t.TempDir())
	// Many goroutines resend the same sequence of batches: each batch must be
	// stored exactly once.
	const batches = 50
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < batches; {
				_, err := f.append(makeBatch(11, 0, int32(i), 1, 1))
				if errors.Is(err, ErrOutOfOrderSequence) {
					// Fallen more than 5 batches behind the others: the
					// batch is stored and no longer remembered; move on.
					if pr, _ := f.p.Producer(11); int32(i) <= pr.Batches[len(pr.Batches)-1].LastSeq {
						i++
						continue
					}
					t.Errorf("batch %d out of order but not stored: %v", i, err)
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				i++
			}
		}()
	}
	wg.Wait()
	if end := f.l.EndOffset(); end != batches {
		t.Fatalf("log end %d, want %d", end, batches)
	}
}

func TestAllocatorNeverReusesIDs(t *testing.T) {
	fsys, dir := vfs.OS, t.TempDir()
	store, err := OpenFileBlockStore(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAllocator(store, 10)
	seen := map[int64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				id, err := a.Next()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 100 {
		t.Fatalf("%d ids", len(seen))
	}
	first, _ := a.Next() // 100: block 100..109 reserved
	// Restart: ids continue after the last reserved block.
	store2, err := OpenFileBlockStore(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := NewAllocator(store2, 10).Next()
	if err != nil || id != 110 || first != 100 {
		t.Fatalf("after restart id %d (err %v), before %d; want 110 after 100", id, err, first)
	}
	// A damaged file is refused, never reset to 0.
	name := path.Join(dir, ProducerIDsFile)
	data, _ := vfs.ReadFile(fsys, name)
	data[0] ^= 1
	if err := vfs.WriteFileAtomic(fsys, dir, name, data, false); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileBlockStore(fsys, dir); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged file: err %v", err)
	}
}

func TestAllocatorReservationFailure(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	ffs := vfs.NewFault(mem)
	store, err := OpenFileBlockStore(ffs, "/d")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAllocator(store, 2)
	if id, err := a.Next(); err != nil || id != 0 {
		t.Fatalf("first id %d err %v", id, err)
	}
	a.Next()
	ffs.SetSyncError(vfs.ErrInjected)
	if _, err := a.Next(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("reservation with failing fsync: %v", err)
	}
	ffs.SetSyncError(nil)
	id, err := a.Next()
	if err != nil || id < 2 {
		t.Fatalf("after recovery id %d err %v", id, err)
	}
}
