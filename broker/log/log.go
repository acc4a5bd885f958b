package log

import (
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"weir/broker/log/vfs"
)

// Options are the process-level dependencies of a Log.
type Options struct {
	Logger *zap.Logger
	Now    func() time.Time // default time.Now
	Files  *FileCache       // shared bounded cache of open segment files (nil = a private one)
	// OnOffline, if set, is called once when the log goes offline, with
	// the error Offline returns, from the goroutine that hit the failure
	// while it holds the log's append or flush lock: it must not call the
	// log back synchronously (except Offline) and should return quickly.
	OnOffline func(l *Log, err error)
}

// Log is one partition's log in directory dir ("<topic>-<partition>"). Safe
// for concurrent use: one appender at a time (serialized internally), many
// readers.
//
// Lock order: maintMu -> appendMu -> flushMu -> mu -> FileCache.mu -> handle.idxMu.
type Log struct {
	fs     vfs.FS
	dir    string
	logger *zap.Logger
	now    func() time.Time
	files  *FileCache

	maintMu  sync.Mutex // retention, compaction, DeleteRecords, TruncateTo, Close
	appendMu sync.Mutex // serializes appenders and rolls
	flushMu  sync.Mutex // one flusher at a time; waiters coalesce
	markerMu sync.Mutex
	ckMu     sync.Mutex // one checkpoint writer at a time (one checkpoint.tmp; the last state wins)

	mu            sync.RWMutex
	cfg           Config
	segs          []*segment
	leo           int64
	hw            int64
	logStart      int64
	recoveryPoint int64      // offsets below are known durable
	ckWritten     checkpoint // content of the last checkpoint written or read
	lastFlush     time.Time
	notify        chan struct{}
	epochs        []EpochEntry // leader-epoch cache (epochs.go)
	aborted       []AbortedTxn // aborted-transaction index, by LastOffset (txnindex.go)
	firstUnstable int64        // -1, or the first offset compaction must not reach
	closed        bool
	offline       error // non-nil once offline (wraps ErrOffline)
	onOffline     func(*Log, error)
	markerPresent bool // clean-shutdown marker still on disk

	bg sync.WaitGroup // background flushes after rolls

	// compaction bookkeeping (guarded by maintMu)
	cleanedThrough int64 // base of the first segment not yet compacted
	lastCompact    time.Time
}

// Open opens or creates the partition log in dir. After an unclean shutdown
// it validates the batches after the recovery point, truncates a torn or
// corrupt tail and rebuilds indexes.
func Open(fsys vfs.FS, dir string, cfg Config, opts Options) (*Log, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Files == nil {
		opts.Files = NewFileCache(16)
	}
	l := &Log{
		fs:     fsys,
		dir:    path.Clean(dir),
		logger: opts.Logger.With(zap.String("partition_dir", dir)),
		now:    opts.Now,
		files:  opts.Files,
		cfg:    cfg.normalized(),
		notify: make(chan struct{}),

		firstUnstable: -1,

		onOffline: opts.OnOffline,
	}
	l.lastFlush = l.now()
	if err := fsys.MkdirAll(l.dir); err != nil {
		return nil, fmt.Errorf("log %s: create directory: %w", dir, err)
	}
	if err := l.load(); err != nil {
		l.dropAll()
		return nil, fmt.Errorf("log %s: open: %w", dir, err)
	}
	if err := l.loadEpochs(); err != nil {
		l.dropAll()
		return nil, fmt.Errorf("log %s: open: %w", dir, err)
	}
	if err := l.loadTxnIndexes(); err != nil {
		l.dropAll()
		return nil, fmt.Errorf("log %s: open: %w", dir, err)
	}
	return l, nil
}

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// StartOffset is the log start offset.
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStart
}

// EndOffset is the log end offset (LEO): the offset the next record gets.
func (l *Log) EndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.leo
}

// HighWatermark returns the high watermark.
func (l *Log) HighWatermark() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.hw
}

// RecoveryPoint returns the offset below which data is known flushed.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint
}

// SetHighWatermark sets the HW, clamped to [StartOffset, EndOffset]. It is
// persisted lazily (checkpoint written on flush and close).
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hw = max(min(hw, l.leo), l.logStart)
	if hw != l.hw {
		advanced := hw > l.hw
		l.hw = hw
		if advanced {
			l.notifyLocked()
		}
	}
}

// HWChanged returns a channel closed the next time the HW or LEO advances.
func (l *Log) HWChanged() <-chan struct{} {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.notify
}

func (l *Log) notifyLocked() {
	close(l.notify)
	l.notify = make(chan struct{})
}

// SetConfig changes the configuration at run time (AlterConfigs).
func (l *Log) SetConfig(cfg Config) {
	l.mu.Lock()
	l.cfg = cfg.normalized()
	l.mu.Unlock()
}

// Config returns the current configuration.
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// Size returns the bytes on disk of all segment .log files.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// NumSegments returns the number of segments.
func (l *Log) NumSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segs)
}

// segIndexLocked returns the index of the last segment whose base <= offset
// (0 if offset is before the first).
func (l *Log) segIndexLocked(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset }) - 1
	if i < 0 {
		i = 0
	}
	return i
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// nowMs is the current time in Unix milliseconds.
func (l *Log) nowMs() int64 { return l.now().UnixMilli() }

// Close flushes, writes the active segment's indexes and the checkpoint, and
// leaves a clean-shutdown marker so the next Open skips recovery.
func (l *Log) Close() error {
	l.maintMu.Lock()
	defer l.maintMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil
	}
	// Wait for the background flushes first: one that fails takes the log
	// offline, and an offline log must not be flushed or marked clean.
	l.bg.Wait()
	l.mu.RLock()
	offline := l.offline != nil
	l.mu.RUnlock()
	if offline {
		// Nothing is written to a log in an unknown state: no flush, no
		// indexes, no clean-shutdown marker, so the next Open recovers it.
		l.mu.Lock()
		l.closed = true
		l.notifyLocked()
		l.mu.Unlock()
		l.dropAll()
		return nil
	}
	err := l.flushAll()
	l.mu.Lock()
	l.closed = true
	l.notifyLocked()
	act := l.active()
	act.act.finish()
	idx, tidx := act.act.idx, act.act.tidx
	l.mu.Unlock()
	// markerPresent: nothing was appended since a clean open, so the active
	// segment's index files and the marker on disk are still right.
	l.markerMu.Lock()
	unchanged := l.markerPresent
	l.markerMu.Unlock()
	if err == nil && !unchanged {
		err = l.writeIndexFiles(act, idx, tidx)
		if err == nil {
			err = l.writeCleanMarker(act)
		}
	}
	l.dropAll()
	if err != nil {
		return fmt.Errorf("log %s: close: %w", l.dir, err)
	}
	return nil
}

// Delete closes the log and removes its directory (DeleteTopics).
func (l *Log) Delete() error {
	l.maintMu.Lock()
	l.appendMu.Lock()
	l.bg.Wait()
	l.mu.Lock()
	l.closed = true
	l.notifyLocked()
	l.mu.Unlock()
	l.appendMu.Unlock()
	l.maintMu.Unlock()
	l.dropAll()
	if err := l.fs.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("log %s: delete: %w", l.dir, err)
	}
	return nil
}

// dropAll closes every cached file of this log (once unused).
func (l *Log) dropAll() {
	l.mu.RLock()
	segs := append([]*segment(nil), l.segs...)
	l.mu.RUnlock()
	for _, s := range segs {
		l.files.drop(s)
	}
}

func (l *Log) checkOpenLocked() error {
	if l.closed {
		return fmt.Errorf("log %s: %w", l.dir, ErrClosed)
	}
	return l.offline
}

// Offline returns nil while the log works, and after a storage failure
// left its files in an unknown state an error wrapping ErrOffline that
// names the partition and the failure. An offline log refuses appends,
// reads, flushes and maintenance with that error until it is closed and
// opened again (Open recovers it).
func (l *Log) Offline() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.offline
}

// goOffline takes the log offline because of cause and returns the error
// Offline will return. Only the first call has an effect.
func (l *Log) goOffline(cause error) error {
	l.mu.Lock()
	if l.offline != nil {
		err := l.offline
		l.mu.Unlock()
		return err
	}
	l.offline = fmt.Errorf("log %s: %w: %w", l.dir, ErrOffline, cause)
	err := l.offline
	l.notifyLocked()
	l.mu.Unlock()
	l.logger.Error("partition log taken offline: its files are in an unknown state; reopen (restart) to recover", zap.Error(cause))
	if l.onOffline != nil {
		l.onOffline(l, err)
	}
	return err
}
