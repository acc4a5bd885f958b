package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"go.uber.org/zap"

	"weir/broker/log/vfs"
)

// AppendInfo describes an append.
type AppendInfo struct {
	FirstOffset, LastOffset int64 // offsets assigned
	MaxTimestamp            int64 // max timestamp over the appended batches
	LogAppendTime           int64 // broker time used (-1 unless a batch uses LogAppendTime)
	NumRecords              int32
}

// Append validates (magic 2, length, CRC32C) and appends one or more
// concatenated RecordBatch v2 byte slices, stamping each batch's baseOffset
// and partitionLeaderEpoch in place (b is modified). It returns
// ErrCorruptBatch (wrapped, naming what is wrong) and writes nothing if any
// batch is bad. A failed write (e.g. ErrDiskFull) leaves the log as it was:
// the segment is cut back to its size before the append; if that fails, or
// the flush that flush.messages asks for fails, the log goes offline
// (ErrOffline; see Offline).
func (l *Log) Append(b []byte, leaderEpoch int32) (AppendInfo, error) {
	hs, err := splitBatches(b)
	if err != nil {
		return AppendInfo{}, fmt.Errorf("log %s: append: %w", l.dir, err)
	}
	l.appendMu.Lock()
	info, needFlush, err := l.appendLocked(b, hs, leaderEpoch, false)
	l.appendMu.Unlock()
	if err != nil {
		return info, fmt.Errorf("log %s: append: %w", l.dir, err)
	}
	if needFlush {
		if err := l.Flush(); err != nil {
			return info, err
		}
	}
	return info, nil
}

// AppendReplica appends batches fetched from the partition leader as they
// are: base offsets and leader epochs are kept (a follower's log is a copy
// of the leader's), CRCs are checked as in Append. Batches wholly below
// the log end offset are skipped (a refetch); a batch that straddles it,
// or offsets that go backwards, are ErrCorruptBatch. Offsets may jump
// forward (compacted leaders). It returns the offsets appended (FirstOffset
// > LastOffset when everything was skipped).
func (l *Log) AppendReplica(b []byte) (AppendInfo, error) {
	hs, err := splitBatches(b)
	if err != nil {
		return AppendInfo{}, fmt.Errorf("log %s: replica append: %w", l.dir, err)
	}
	l.appendMu.Lock()
	leo := l.EndOffset()
	skip := 0
	for _, h := range hs {
		if h.LastOffset() >= leo {
			break
		}
		b = b[h.Size():]
		skip++
	}
	hs = hs[skip:]
	if len(hs) == 0 {
		l.appendMu.Unlock()
		return AppendInfo{FirstOffset: leo, LastOffset: leo - 1, LogAppendTime: -1, MaxTimestamp: -1}, nil
	}
	if hs[0].BaseOffset < leo {
		l.appendMu.Unlock()
		return AppendInfo{}, fmt.Errorf("log %s: replica append: %w: batch %d..%d straddles the log end offset %d",
			l.dir, ErrCorruptBatch, hs[0].BaseOffset, hs[0].LastOffset(), leo)
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].BaseOffset <= hs[i-1].LastOffset() {
			l.appendMu.Unlock()
			return AppendInfo{}, fmt.Errorf("log %s: replica append: %w: batch at %d after batch ending at %d",
				l.dir, ErrCorruptBatch, hs[i].BaseOffset, hs[i-1].LastOffset())
		}
	}
	info, needFlush, err := l.appendLocked(b, hs, -1, true)
	l.appendMu.Unlock()
	if err != nil {
		return info, fmt.Errorf("log %s: replica append: %w", l.dir, err)
	}
	if needFlush {
		if err := l.Flush(); err != nil {
			return info, err
		}
	}
	return info, nil
}

// appendLocked writes hs (the batches of b). keep leaves base offsets and
// leader epochs as they are (replica appends); otherwise they are stamped
// with the next offsets and epoch. appendMu held.
func (l *Log) appendLocked(b []byte, hs []BatchHeader, epoch int32, keep bool) (AppendInfo, bool, error) {
	l.mu.RLock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.RUnlock()
		return AppendInfo{}, false, err
	}
	cfg, act, leo := l.cfg, l.active(), l.leo
	l.mu.RUnlock()
	if err := l.ensureDirty(); err != nil {
		return AppendInfo{}, false, err
	}
	now := l.nowMs()
	var span int64
	for _, h := range hs {
		span += int64(h.LastOffsetDelta) + 1
	}
	last := leo + span - 1
	if keep {
		last = hs[len(hs)-1].LastOffset()
	}
	size := act.act.size
	if size > 0 && (size+int64(len(b)) > cfg.SegmentBytes ||
		now-act.rollTs >= cfg.SegmentMs.Milliseconds() ||
		last-act.base > math.MaxUint32) {
		var err error
		if act, err = l.rollLocked(); err != nil {
			return AppendInfo{}, false, err
		}
		size = 0
	}
	info := AppendInfo{FirstOffset: leo, LogAppendTime: -1, MaxTimestamp: -1}
	if keep {
		info.FirstOffset = hs[0].BaseOffset
	}
	next := leo
	pos := 0
	for i := range hs {
		h := &hs[i]
		bb := b[pos : pos+int(h.Size())]
		if keep {
			next = h.BaseOffset
		} else {
			binary.BigEndian.PutUint64(bb, uint64(next))
			binary.BigEndian.PutUint32(bb[OffEpoch:], uint32(epoch))
			h.BaseOffset, h.PartitionLeaderEpoch = next, epoch
		}
		if cfg.LogAppendTime && !keep {
			h.Attributes |= AttrLogAppendTime
			h.MaxTimestamp = now
			binary.BigEndian.PutUint16(bb[OffAttributes:], uint16(h.Attributes))
			binary.BigEndian.PutUint64(bb[OffMaxTimestamp:], uint64(now))
			setCRC(bb)
			info.LogAppendTime = now
		}
		info.MaxTimestamp = max(info.MaxTimestamp, h.MaxTimestamp)
		info.NumRecords += h.NumRecords
		next += int64(h.LastOffsetDelta) + 1
		pos += int(h.Size())
	}
	info.LastOffset = next - 1

	hd, err := l.files.acquire(act, true)
	if err != nil {
		return AppendInfo{}, false, err
	}
	if _, err := hd.f.WriteAt(b, size); err != nil {
		// Whatever the write reported, part of b may be in the file (a
		// write failing with ENOSPC can leave some bytes and report none):
		// cut back to the last good position so no later append or roll
		// leaves them behind. If that fails too the file holds unknown
		// bytes: go offline rather than append after them.
		cut := hd.f.Truncate(size)
		if cut == nil {
			var now int64
			if now, cut = hd.f.Size(); cut == nil && now != size {
				cut = fmt.Errorf("segment is %d bytes after truncating to %d", now, size)
			}
		}
		hd.release()
		if cut != nil {
			return AppendInfo{}, false, l.goOffline(fmt.Errorf(
				"write of %d bytes at position %d of segment %d failed (%w) and cutting it back failed: %w",
				len(b), size, act.base, err, cut))
		}
		if errors.Is(err, vfs.ErrNoSpace) {
			return AppendInfo{}, false, fmt.Errorf("%w: %w", ErrDiskFull, err)
		}
		return AppendInfo{}, false, err
	}
	hd.release()

	l.mu.Lock()
	first := act.act.batches == 0
	p := size
	for _, h := range hs {
		act.act.add(h, p)
		p += h.Size()
	}
	act.size = act.act.size
	act.maxTs, act.maxTsKnown = act.act.maxTs, true
	if first {
		act.rollTs = now
	}
	l.leo = next
	epochsChanged := false
	for _, h := range hs {
		if l.addEpochLocked(h.PartitionLeaderEpoch, h.BaseOffset) {
			epochsChanged = true
		}
	}
	l.notifyLocked()
	needFlush := l.leo-l.recoveryPoint >= cfg.FlushMessages
	l.mu.Unlock()
	if epochsChanged {
		if err := l.writeEpochs(); err != nil {
			// The cache is rebuilt from the batches at the next Open.
			l.logger.Warn("writing the leader-epoch checkpoint failed", zap.Error(err))
		}
	}
	return info, needFlush, nil
}

// rollLocked seals the active segment (writing its indexes) and starts a new
// one at the log end offset. appendMu must be held.
func (l *Log) rollLocked() (*segment, error) {
	l.mu.Lock()
	old := l.active()
	old.act.finish()
	idx, tidx := old.act.idx, old.act.tidx
	newBase := l.leo
	interval := l.cfg.IndexIntervalBytes
	l.mu.Unlock()
	if err := l.writeIndexFiles(old, idx, tidx); err != nil {
		return nil, err
	}
	ns := &segment{fs: l.fs, dir: l.dir, base: newBase, act: newIndexBuilder(newBase, interval), rollTs: l.nowMs(), maxTs: math.MinInt64, maxTsKnown: true}
	f, err := l.fs.Create(ns.path(logSuffix))
	if err != nil {
		return nil, fmt.Errorf("roll: create segment %d: %w", newBase, err)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	old.maxTs, old.maxTsKnown = old.act.maxTs, true
	old.size = old.act.size
	old.act = nil
	l.segs = append(l.segs, ns)
	l.mu.Unlock()
	// Like Kafka, flush a rolled segment in the background so the recovery
	// point (and so recovery work after a crash) stays near the active segment.
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		if err := l.Flush(); err != nil && !errors.Is(err, ErrClosed) {
			l.logger.Warn("flush after roll failed", zap.Error(err))
		}
	}()
	return ns, nil
}

// Roll seals the active segment if it is not empty and starts a new one.
func (l *Log) Roll() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.RLock()
	err := l.checkOpenLocked()
	empty := l.active().act.size == 0
	l.mu.RUnlock()
	if err != nil || empty {
		return err
	}
	_, err = l.rollLocked()
	return err
}

// MaybeRoll rolls the active segment if segment.ms has elapsed since its
// first batch (the Manager calls it for idle partitions).
func (l *Log) MaybeRoll() error {
	l.mu.RLock()
	act, cfg := l.active(), l.cfg
	due := !l.closed && l.offline == nil && act.act.size > 0 && l.nowMs()-act.rollTs >= cfg.SegmentMs.Milliseconds()
	l.mu.RUnlock()
	if !due {
		return nil
	}
	return l.Roll()
}
