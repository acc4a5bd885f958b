package txn

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"weir/broker/log"
	"weir/broker/log/vfs"
)

// Log is what a Partition needs of its partition log; *log.Log satisfies it.
type Log interface {
	// Dir is the partition directory; snapshots are written there.
	Dir() string
	EndOffset() int64
	HighWatermark() int64
	// ScanBatchesControl calls fn with every batch header from the batch
	// holding offset from (clamped to the log start) to the log end, and
	// the bytes of control batches.
	ScanBatchesControl(from int64, fn func(h log.BatchHeader, control []byte) error) error
	// AddAbortedTxn records an aborted transaction in the log's
	// aborted-transaction index (a no-op if it has the entry).
	AddAbortedTxn(log.AbortedTxn) error
	// SetFirstUnstableOffset bounds compaction (-1: no transaction).
	SetFirstUnstableOffset(int64)
}

var _ Log = (*log.Log)(nil)

// Options tune a Partition. Zero values mean the defaults.
type Options struct {
	// Expiration is producer.id.expiration.ms: producers idle this long
	// are forgotten (default 24h).
	Expiration time.Duration
	// ExpirationFunc, when set, is read instead of Expiration each time
	// (a dynamic producer.id.expiration.ms); a result <= 0 is the default.
	ExpirationFunc func() time.Duration
	// SnapshotInterval is the least time between periodic snapshots, taken
	// after an append when the state changed (default 1 minute; negative:
	// only at Close).
	SnapshotInterval time.Duration
	// Now is the broker clock (default time.Now).
	Now func() time.Time
	// Logger receives warnings about snapshots (nil: none).
	Logger *zap.Logger
}

// Defaults.
const (
	DefaultExpiration       = 24 * time.Hour
	DefaultSnapshotInterval = time.Minute
	snapshotSuffix          = ".snapshot"
	snapshotsKept           = 2
)

// expiration is the producer.id.expiration.ms in effect.
func (p *Partition) expiration() time.Duration {
	if f := p.opts.ExpirationFunc; f != nil {
		if d := f(); d > 0 {
			return d
		}
		return DefaultExpiration
	}
	return p.opts.Expiration
}

func (o Options) withDefaults() Options {
	if o.Expiration <= 0 {
		o.Expiration = DefaultExpiration
	}
	if o.SnapshotInterval == 0 {
		o.SnapshotInterval = DefaultSnapshotInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

// Result is the outcome of Partition.Append.
type Result struct {
	// Info is the append's result; for a duplicate, the original batch's
	// offsets and timestamp (LogAppendTime -1 unless it was stamped with the
	// broker's time), and nothing was appended.
	Info      log.AppendInfo
	Duplicate bool
	// Completed: the transactions the append's markers ended.
	Completed []CompletedTxn
}

// Partition is one partition's producer state joined to its log. It is
// safe for concurrent use; see the package doc for the locking contract.
type Partition struct {
	fsys vfs.FS
	log  Log
	dir  string
	opts Options

	mu     sync.Mutex
	state  *State
	closed bool
	dirty  bool // state changed since the last snapshot
	// unapplied: an append failed after the log had taken its batches (a
	// log gone offline after a failed sync): the log holds producer batches
	// the state never applied, so no snapshot may be written (it would
	// claim to cover them); the next OpenPartition rebuilds from the log.
	unapplied  bool
	lastSnap   time.Time // when the last snapshot was taken
	lastExpire time.Time
	snapping   bool           // an async snapshot write is running
	snapDone   sync.WaitGroup // async snapshot writes
	snapMu     sync.Mutex     // serializes snapshot file writes

	duplicates atomic.Int64 // duplicates answered
	// unstable is what the last stable offset depends on, published
	// after every change under mu so fetches read it without the lock;
	// nil while no transaction is ongoing or unreplicated.
	unstable  atomic.Pointer[unstable]
	published bool // SetFirstUnstableOffset called since open

	// stats of the last load, for tests and logs
	loadedFrom     int64 // snapshot offset used, -1 if none
	scannedBatches int
}

// OpenPartition loads the partition's producer state: the newest snapshot
// in the log's directory whose offset is not past the log end (newer ones,
// left by a truncation, and unreadable ones are removed), then every batch
// header from the snapshot's offset to the log end. Producers rebuilt from
// the log count as seen now, so a restart never expires them early. If it
// replayed anything it writes a fresh snapshot.
func OpenPartition(fsys vfs.FS, l Log, opts Options) (*Partition, error) {
	p := &Partition{fsys: fsys, log: l, dir: l.Dir(), opts: opts.withDefaults(), loadedFrom: -1}
	now := p.opts.Now()
	p.lastSnap, p.lastExpire = now, now
	if err := p.load(now); err != nil {
		return nil, err
	}
	if p.dirty {
		if err := p.writeSnapshot(p.state.EncodeSnapshot(p.log.EndOffset()), p.log.EndOffset()); err != nil {
			p.opts.Logger.Warn("writing producer state snapshot failed", zap.String("dir", p.dir), zap.Error(err))
		}
		p.dirty = false
	}
	return p, nil
}

func (p *Partition) load(now time.Time) error {
	end := p.log.EndOffset()
	snaps, err := p.snapshots()
	if err != nil {
		return err
	}
	p.state = NewState()
	from := int64(0)
	for i := len(snaps) - 1; i >= 0; i-- {
		off := snaps[i]
		name := path.Join(p.dir, snapshotName(off))
		if off > end {
			p.removeSnapshot(name, "past the log end")
			continue
		}
		data, err := vfs.ReadFile(p.fsys, name)
		if err == nil {
			var st *State
			var got int64
			if st, got, err = DecodeSnapshot(data); err == nil && got != off {
				err = fmt.Errorf("%w: file name says offset %d, content %d", ErrCorruptSnapshot, off, got)
			}
			if err == nil {
				p.state, from, p.loadedFrom = st, off, off
				break
			}
		}
		p.opts.Logger.Warn("producer state snapshot unusable; trying an older one", zap.String("file", name), zap.Error(err))
		p.removeSnapshot(name, "unusable")
	}
	nowMs := now.UnixMilli()
	err = p.log.ScanBatchesControl(from, func(h log.BatchHeader, control []byte) error {
		if h.LastOffset() < from {
			return nil
		}
		p.scannedBatches++
		b := batchOf(h, control)
		if !b.touchesState() {
			return nil
		}
		lat := int64(-1)
		if h.Attributes&log.AttrLogAppendTime != 0 {
			lat = h.MaxTimestamp
		}
		done := p.state.Apply([]Batch{b}, h.BaseOffset, lat, nowMs)
		p.dirty = true
		// Markers replayed re-add their index entries (a crash may have
		// lost the file; a follower never wrote them).
		return p.indexAborted(done)
	})
	if err != nil {
		return fmt.Errorf("txn: rebuilding producer state of %s from offset %d: %w", p.dir, from, err)
	}
	if n := p.state.Expire(nowMs, p.expiration().Milliseconds()); n > 0 {
		p.dirty = true
	}
	p.state.OnHighWatermark(p.log.HighWatermark())
	p.publishLocked()
	return nil
}

// unstable: the first offset of the earliest ongoing transaction (-1 if
// none) and the completed transactions whose marker may be uncommitted.
type unstable struct {
	ongoing      int64
	unreplicated []CompletedTxn
}

func (p *Partition) publishLocked() {
	if !p.state.hasTxns() {
		if p.unstable.Swap(nil) != nil || !p.published {
			p.log.SetFirstUnstableOffset(-1)
			p.published = true
		}
		return
	}
	u := &unstable{ongoing: -1, unreplicated: slices.Clone(p.state.unreplicated)}
	first := int64(-1)
	for _, f := range p.state.ongoing {
		if u.ongoing < 0 || f < u.ongoing {
			u.ongoing = f
		}
	}
	first = u.ongoing
	for _, c := range u.unreplicated {
		if first < 0 || c.FirstOffset < first {
			first = c.FirstOffset
		}
	}
	p.unstable.Store(u)
	p.log.SetFirstUnstableOffset(first)
	p.published = true
}

// indexAborted writes the aborted-transaction index entries of completed
// transactions.
func (p *Partition) indexAborted(done []CompletedTxn) error {
	for _, c := range done {
		if !c.Aborted {
			continue
		}
		e := log.AbortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset, LastStableOffset: c.LastStableOffset}
		if err := p.log.AddAbortedTxn(e); err != nil {
			return fmt.Errorf("txn: indexing aborted transaction of producer %d at %d: %w", c.ProducerID, c.LastOffset, err)
		}
	}
	return nil
}

// batchOf is the Batch of a header; control holds the whole batch of a
// control batch (its marker is read from it).
func batchOf(h log.BatchHeader, control []byte) Batch {
	b := Batch{
		ProducerID:      h.ProducerID,
		ProducerEpoch:   h.ProducerEpoch,
		BaseSequence:    h.BaseSequence,
		LastOffsetDelta: h.LastOffsetDelta,
		MaxTimestamp:    h.MaxTimestamp,
		Control:         h.IsControl(),
		Transactional:   h.IsTransactional(),
	}
	if b.Control && control != nil {
		if m, ok, err := log.ParseEndTxnMarker(control); err == nil && ok {
			b.Marker, b.Commit, b.CoordinatorEpoch = true, m.Commit, m.CoordinatorEpoch
		}
	}
	return b
}

// Append runs one idempotent append: it parses the batch headers of records
// (concatenated RecordBatch v2), and when any batch carries a producer id,
// under the partition's producer-state lock it checks them, calls appendFn
// unless they are a duplicate, and records the result. appendFn must append
// exactly records to the log and return the log's AppendInfo; it must not
// call back into p.
//
// Returns: the append's result; for a duplicate Duplicate=true and the
// original offsets, appendFn not called; a rule violation as an error
// wrapping ErrOutOfOrderSequence or ErrInvalidProducerEpoch (KafkaCode maps
// it); appendFn's error as is. Records whose headers do not parse go
// straight to appendFn, whose validation rejects them.
func (p *Partition) Append(records []byte, origin Origin, appendFn func() (log.AppendInfo, error)) (Result, error) {
	return p.append(records, origin, nil, appendFn)
}

func (p *Partition) append(records []byte, origin Origin, gc *guardCheck, appendFn func() (log.AppendInfo, error)) (Result, error) {
	batches, raw, ok := parseBatches(records)
	idempotent := false
	for i := range batches {
		idempotent = idempotent || batches[i].touchesState()
	}
	if !ok || !idempotent {
		info, err := appendFn()
		return Result{Info: info}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Result{}, fmt.Errorf("txn: partition %s: %w", p.dir, ErrClosed)
	}
	v, err := p.state.check(batches, origin, gc)
	if err != nil {
		return Result{}, err
	}
	if v.Duplicate && batchesValid(raw) {
		m := v.Original
		info := log.AppendInfo{
			FirstOffset:   m.FirstOffset,
			LastOffset:    m.LastOffset,
			MaxTimestamp:  m.Timestamp,
			LogAppendTime: -1,
			NumRecords:    int32(m.LastOffset - m.FirstOffset + 1),
		}
		if m.LogAppendTime {
			info.LogAppendTime = m.Timestamp
		}
		p.duplicates.Add(1)
		return Result{Info: info, Duplicate: true}, nil
	}
	before := p.log.EndOffset()
	info, err := appendFn()
	if err != nil {
		if p.log.EndOffset() != before {
			p.unapplied = true
		}
		return Result{Info: info}, err
	}
	now := p.opts.Now()
	done := p.state.Apply(batches, info.FirstOffset, info.LogAppendTime, now.UnixMilli())
	p.state.OnHighWatermark(p.log.HighWatermark())
	p.publishLocked()
	p.dirty = true
	if err := p.indexAborted(done); err != nil {
		// The marker is in the log; the index entry comes back when the
		// state is rebuilt from the log.
		p.unapplied = true
		return Result{Info: info, Completed: done}, err
	}
	p.maintainLocked(now)
	return Result{Info: info, Completed: done}, nil
}

// ApplyReplica records batches a follower appended as they are (the
// leader's offsets are in their headers): batches with a base offset
// below from were in the log already and are skipped. No checks run, as
// Kafka applies replicated batches (origin REPLICATION); markers end
// transactions and aborted ones go to the log's index, so the follower
// has the leader's producer state when it takes over.
func (p *Partition) ApplyReplica(records []byte, from int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("txn: partition %s: %w", p.dir, ErrClosed)
	}
	now := p.opts.Now()
	nowMs := now.UnixMilli()
	changed := false
	for off := 0; off < len(records); {
		h, err := log.ParseBatchHeader(records[off:])
		if err != nil || h.Size() > int64(len(records)-off) {
			break
		}
		raw := records[off : off+int(h.Size())]
		off += int(h.Size())
		if h.BaseOffset < from {
			continue
		}
		var control []byte
		if h.IsControl() {
			control = raw
		}
		b := batchOf(h, control)
		if !b.touchesState() {
			continue
		}
		lat := int64(-1)
		if h.Attributes&log.AttrLogAppendTime != 0 {
			lat = h.MaxTimestamp
		}
		done := p.state.Apply([]Batch{b}, h.BaseOffset, lat, nowMs)
		changed = true
		if err := p.indexAborted(done); err != nil {
			p.unapplied = true
			return err
		}
	}
	if !changed {
		return nil
	}
	p.state.OnHighWatermark(p.log.HighWatermark())
	p.publishLocked()
	p.dirty = true
	p.maintainLocked(now)
	return nil
}

// LastStableOffset is the partition's last stable offset given its high
// watermark hw: min(hw, first offset of the earliest unstable transaction)
// (Kafka's UnifiedLog.lastStableOffset). Cheap when the partition never
// saw a transaction.
func (p *Partition) LastStableOffset(hw int64) int64 {
	u := p.unstable.Load()
	if u == nil {
		return hw
	}
	lso := hw
	if u.ongoing >= 0 && u.ongoing < lso {
		lso = u.ongoing
	}
	for _, c := range u.unreplicated {
		if c.LastOffset >= hw && c.FirstOffset < lso {
			lso = c.FirstOffset
		}
	}
	return lso
}

// Producers returns a copy of every producer's state on this partition.
func (p *Partition) Producers() []Producer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.Producers()
}

// parseBatches walks concatenated batches and returns their headers and
// byte ranges; ok is false if the framing is broken.
func parseBatches(records []byte) (batches []Batch, raw [][]byte, ok bool) {
	for off := 0; off < len(records); {
		h, err := log.ParseBatchHeader(records[off:])
		if err != nil {
			return nil, nil, false
		}
		size := h.Size()
		if size <= 0 || size > int64(len(records)-off) {
			return nil, nil, false
		}
		var control []byte
		if h.IsControl() {
			control = records[off : off+int(size)]
		}
		batches = append(batches, batchOf(h, control))
		raw = append(raw, records[off:off+int(size)])
		off += int(size)
	}
	return batches, raw, len(batches) > 0
}

// batchesValid checks each batch's CRC, so that a corrupt resend is not
// acknowledged as a duplicate (the log's own validation then rejects it).
func batchesValid(raw [][]byte) bool {
	for _, b := range raw {
		if _, err := log.ParseBatch(b); err != nil {
			return false
		}
	}
	return true
}

// maintainLocked expires idle producers and starts a periodic snapshot
// when due.
func (p *Partition) maintainLocked(now time.Time) {
	exp := p.expiration()
	if every := min(exp/4, time.Minute); now.Sub(p.lastExpire) >= every {
		p.lastExpire = now
		if p.state.Expire(now.UnixMilli(), exp.Milliseconds()) > 0 {
			p.dirty = true
		}
	}
	if p.opts.SnapshotInterval < 0 || !p.dirty || p.unapplied || p.snapping || now.Sub(p.lastSnap) < p.opts.SnapshotInterval {
		return
	}
	// Every producer batch below EndOffset has been applied: they are only
	// appended under p.mu, which we hold.
	end := p.log.EndOffset()
	data := p.state.EncodeSnapshot(end)
	p.lastSnap, p.dirty, p.snapping = now, false, true
	p.snapDone.Add(1)
	go func() {
		defer p.snapDone.Done()
		if err := p.writeSnapshot(data, end); err != nil {
			p.opts.Logger.Warn("writing producer state snapshot failed", zap.String("dir", p.dir), zap.Error(err))
			p.mu.Lock()
			p.dirty = true
			p.mu.Unlock()
		}
		p.mu.Lock()
		p.snapping = false
		p.mu.Unlock()
	}()
}

// Snapshot writes a snapshot of the current state now (synchronously).
func (p *Partition) Snapshot() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("txn: partition %s: %w", p.dir, ErrClosed)
	}
	return p.snapshotLocked()
}

func (p *Partition) snapshotLocked() error {
	if p.unapplied {
		return fmt.Errorf("txn: partition %s: no snapshot: the log holds batches of a failed append that the producer state did not apply", p.dir)
	}
	end := p.log.EndOffset()
	if err := p.writeSnapshot(p.state.EncodeSnapshot(end), end); err != nil {
		return err
	}
	p.lastSnap, p.dirty = p.opts.Now(), false
	return nil
}

// writeSnapshot writes <end>.snapshot durably and removes all but the
// newest snapshotsKept snapshots.
func (p *Partition) writeSnapshot(data []byte, end int64) error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	name := path.Join(p.dir, snapshotName(end))
	if err := vfs.WriteFileAtomic(p.fsys, p.dir, name, data, true); err != nil {
		return fmt.Errorf("txn: writing %s: %w", name, err)
	}
	snaps, err := p.snapshots()
	if err != nil {
		return err
	}
	for len(snaps) > snapshotsKept {
		p.removeSnapshot(path.Join(p.dir, snapshotName(snaps[0])), "superseded")
		snaps = snaps[1:]
	}
	return nil
}

// snapshots lists the snapshot offsets in the directory, ascending.
func (p *Partition) snapshots() ([]int64, error) {
	names, err := p.fsys.List(p.dir)
	if err != nil {
		return nil, fmt.Errorf("txn: listing %s: %w", p.dir, err)
	}
	var offs []int64
	for _, n := range names {
		digits, ok := strings.CutSuffix(n, snapshotSuffix)
		if !ok || len(digits) != 20 {
			continue
		}
		if off, err := strconv.ParseInt(digits, 10, 64); err == nil && off >= 0 {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs, nil
}

func (p *Partition) removeSnapshot(name, why string) {
	if err := p.fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.opts.Logger.Warn("removing producer state snapshot failed", zap.String("file", name), zap.String("reason", why), zap.Error(err))
	}
}

func snapshotName(off int64) string { return fmt.Sprintf("%020d%s", off, snapshotSuffix) }

// Producer returns a copy of producer id's state on this partition.
func (p *Partition) Producer(id int64) (Producer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.Producer(id)
}

// Duplicates is how many appends were answered as duplicates since open.
func (p *Partition) Duplicates() int64 { return p.duplicates.Load() }

// NumProducers is the number of producers tracked.
func (p *Partition) NumProducers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.Len()
}

// Expire forgets producers idle for the expiration period now and returns
// how many.
func (p *Partition) Expire() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.state.Expire(p.opts.Now().UnixMilli(), p.expiration().Milliseconds())
	if n > 0 {
		p.dirty = true
	}
	return n
}

// Close waits for a running snapshot write, writes a final snapshot when
// the state changed since the last one, and closes p. Call it before
// closing the log. Later Appends of idempotent batches fail with ErrClosed.
func (p *Partition) Close() error {
	p.mu.Lock()
	was := p.closed
	p.closed = true
	p.mu.Unlock()
	p.snapDone.Wait()
	if was {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dirty || p.unapplied {
		return nil
	}
	return p.snapshotLocked()
}

// Discard closes p without writing a snapshot (the partition is being
// deleted), after any running snapshot write has finished.
func (p *Partition) Discard() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.snapDone.Wait()
}
