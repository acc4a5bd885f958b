package log

import (
	"fmt"
	"io"
	"math"

	"go.uber.org/zap"
)

// segMaxTs returns the max timestamp of segment i's batches (math.MinInt64
// for an empty segment), loading it from the time index on first use.
func (l *Log) segMaxTs(s *segment) (int64, error) {
	l.mu.RLock()
	if s.maxTsKnown {
		ts := s.maxTs
		l.mu.RUnlock()
		return ts, nil
	}
	i := l.segPosLocked(s)
	if i < 0 {
		l.mu.RUnlock()
		return math.MinInt64, nil
	}
	v, err := l.viewLocked(i)
	l.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	defer v.release()
	if err := l.indexes(v); err != nil {
		return 0, err
	}
	ts := int64(math.MinInt64)
	if n := len(v.tidx) / timeEntrySize; n > 0 {
		ts, _ = timeEntry(v.tidx, n-1)
	}
	l.mu.Lock()
	s.maxTs, s.maxTsKnown = ts, true
	l.mu.Unlock()
	return ts, nil
}

// segPosLocked returns the index of s in l.segs or -1.
func (l *Log) segPosLocked(s *segment) int {
	i := l.segIndexLocked(s.base)
	if i < len(l.segs) && l.segs[i] == s {
		return i
	}
	return -1
}

// EnforceRetention deletes whole segments past retention.ms (their largest
// timestamp is older) or beyond retention.bytes, oldest first, never the
// active segment (an expired non-empty active segment is rolled first). It
// does nothing unless the cleanup policy includes delete.
func (l *Log) EnforceRetention() (deletedSegments int, err error) {
	l.maintMu.Lock()
	defer l.maintMu.Unlock()
	l.mu.RLock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.RUnlock()
		return 0, err
	}
	cfg := l.cfg
	segs := append([]*segment(nil), l.segs...)
	var total int64
	for _, s := range segs {
		total += s.size
	}
	l.mu.RUnlock()
	if !cfg.Delete {
		return 0, nil
	}
	cutoff := int64(math.MinInt64)
	if cfg.RetentionMs >= 0 {
		cutoff = l.nowMs() - cfg.RetentionMs.Milliseconds()
	}
	excess := int64(-1)
	if cfg.RetentionBytes >= 0 {
		excess = total - cfg.RetentionBytes
	}
	n := 0
	for _, s := range segs[:len(segs)-1] {
		ts, err := l.segMaxTs(s)
		if err != nil {
			return 0, err
		}
		byTime := ts < cutoff
		bySize := excess >= s.size
		if !byTime && !bySize {
			break
		}
		excess -= s.size
		n++
	}
	if n == len(segs)-1 && cfg.RetentionMs >= 0 {
		act := segs[len(segs)-1]
		l.mu.RLock()
		expired := act.size > 0 && act.maxTs < cutoff
		l.mu.RUnlock()
		if expired {
			if err := l.Roll(); err != nil {
				return 0, err
			}
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	if err := l.deletePrefix(n, -1); err != nil {
		return 0, err
	}
	l.logger.Info("retention deleted segments", zap.Int("segments", n))
	return n, nil
}

// deletePrefix removes the first n segments (never the active one) and
// advances the log start offset to at least the new first segment's base
// and at least newStart. maintMu must be held.
func (l *Log) deletePrefix(n int, newStart int64) error {
	l.mu.Lock()
	if n > len(l.segs)-1 {
		n = len(l.segs) - 1
	}
	del := append([]*segment(nil), l.segs[:n]...)
	l.segs = append([]*segment(nil), l.segs[n:]...)
	l.logStart = max(l.logStart, l.segs[0].base, newStart)
	l.hw = max(l.hw, l.logStart)
	l.recoveryPoint = max(l.recoveryPoint, l.logStart)
	l.mu.Unlock()
	if err := l.writeCheckpoint(true); err != nil {
		return fmt.Errorf("log %s: %w", l.dir, err)
	}
	for _, s := range del {
		if err := l.removeSegmentFiles(s); err != nil {
			return fmt.Errorf("log %s: %w", l.dir, err)
		}
	}
	return l.pruneTxnIndex()
}

// DeleteRecordsBefore advances the log start offset to offset (-1 means the
// high watermark), persists it, and deletes segments wholly below it. An
// offset above the high watermark is ErrOffsetOutOfRange. It returns the new
// log start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (newStart int64, err error) {
	l.maintMu.Lock()
	defer l.maintMu.Unlock()
	l.mu.RLock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.RUnlock()
		return 0, err
	}
	if offset < 0 {
		offset = l.hw
	}
	if offset > l.hw {
		hw := l.hw
		l.mu.RUnlock()
		return 0, fmt.Errorf("log %s: delete records before %d: above high watermark %d: %w", l.dir, offset, hw, ErrOffsetOutOfRange)
	}
	if offset <= l.logStart {
		s := l.logStart
		l.mu.RUnlock()
		return s, nil
	}
	n := 0
	for n+1 < len(l.segs) && l.segs[n+1].base <= offset {
		n++
	}
	l.mu.RUnlock()
	if err := l.deletePrefix(n, offset); err != nil {
		return 0, err
	}
	return l.StartOffset(), nil
}

// TruncateTo removes every batch holding offsets >= offset (a batch that
// straddles offset is removed whole) so the log end offset becomes <= offset.
// Followers use it to drop a divergent tail.
func (l *Log) TruncateTo(offset int64) error {
	l.maintMu.Lock()
	defer l.maintMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.bg.Wait()
	l.mu.RLock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.RUnlock()
		return err
	}
	if offset >= l.leo {
		l.mu.RUnlock()
		return nil
	}
	if offset < 0 {
		offset = 0
	}
	first := l.segs[0].base
	interval := l.cfg.IndexIntervalBytes
	l.mu.RUnlock()
	if err := l.ensureDirty(); err != nil {
		return fmt.Errorf("log %s: truncate: %w", l.dir, err)
	}
	if err := l.truncateTo(offset, first, interval); err != nil {
		return fmt.Errorf("log %s: truncate to %d: %w", l.dir, offset, err)
	}
	if err := l.pruneTxnIndex(); err != nil {
		return err
	}
	l.mu.Lock()
	changed := l.truncateEpochsLocked(l.leo)
	l.mu.Unlock()
	if changed {
		if err := l.writeEpochs(); err != nil {
			return err
		}
	}
	return l.writeCheckpoint(true)
}

// ResetTo empties the log and restarts it at offset: every segment is
// removed, and the log start, end, high watermark and recovery point all
// become offset; the leader-epoch cache is cleared. A follower uses it
// when the leader no longer has the records after the follower's log end
// (they were deleted by retention): it continues from the leader's log
// start.
func (l *Log) ResetTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("log %s: reset to %d: %w", l.dir, offset, ErrOffsetOutOfRange)
	}
	l.maintMu.Lock()
	defer l.maintMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.bg.Wait()
	l.mu.RLock()
	err := l.checkOpenLocked()
	interval := l.cfg.IndexIntervalBytes
	old := append([]*segment(nil), l.segs...)
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	if err := l.ensureDirty(); err != nil {
		return fmt.Errorf("log %s: reset: %w", l.dir, err)
	}
	ns := &segment{fs: l.fs, dir: l.dir, base: offset, act: newIndexBuilder(offset, interval), rollTs: l.nowMs(), maxTs: math.MinInt64, maxTsKnown: true}
	for _, s := range old {
		if s.base == offset {
			continue // replaced in place below
		}
		if err := l.removeSegmentFiles(s); err != nil {
			return fmt.Errorf("log %s: reset: %w", l.dir, err)
		}
	}
	f, err := l.fs.Create(ns.path(logSuffix))
	if err != nil {
		return fmt.Errorf("log %s: reset: %w", l.dir, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return fmt.Errorf("log %s: reset: %w", l.dir, err)
	}
	f.Close()
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := l.fs.Remove(ns.path(suf)); err != nil && !isNotExist(err) {
			return fmt.Errorf("log %s: reset: %w", l.dir, err)
		}
	}
	l.mu.Lock()
	l.aborted = nil
	l.segs = []*segment{ns}
	l.leo, l.logStart, l.hw, l.recoveryPoint = offset, offset, offset, offset
	l.epochs = nil
	l.notifyLocked()
	l.mu.Unlock()
	for _, s := range old {
		l.files.drop(s)
	}
	if err := l.writeEpochs(); err != nil {
		return err
	}
	return l.writeCheckpoint(true)
}

func (l *Log) truncateTo(offset, first int64, interval int32) error {
	if offset <= first {
		// Nothing survives: start over with an empty segment at offset.
		ns := &segment{fs: l.fs, dir: l.dir, base: offset, act: newIndexBuilder(offset, interval), rollTs: l.nowMs(), maxTs: math.MinInt64, maxTsKnown: true}
		l.mu.Lock()
		old := l.segs
		l.mu.Unlock()
		for _, s := range old {
			if err := l.removeSegmentFiles(s); err != nil {
				return err
			}
		}
		f, err := l.fs.Create(ns.path(logSuffix))
		if err != nil {
			return err
		}
		f.Close()
		l.mu.Lock()
		l.segs = []*segment{ns}
		l.leo, l.logStart = offset, min(l.logStart, offset)
		l.hw, l.recoveryPoint = min(l.hw, offset), min(l.recoveryPoint, offset)
		l.notifyLocked()
		l.mu.Unlock()
		return nil
	}
	l.mu.RLock()
	i := l.segIndexLocked(offset)
	v, err := l.viewLocked(i)
	later := append([]*segment(nil), l.segs[i+1:]...)
	l.mu.RUnlock()
	if err != nil {
		return err
	}
	pos, h, found, err := l.findBatch(v, offset)
	size := v.size
	seg := v.seg
	v.release()
	if err != nil {
		return err
	}
	newLEO := offset
	if !found {
		pos = size
	} else if h.BaseOffset < offset {
		newLEO = h.BaseOffset
	}
	ns := &segment{fs: l.fs, dir: l.dir, base: seg.base, rollTs: seg.rollTs}
	if err := l.truncateFile(ns, pos); err != nil {
		return err
	}
	b, valid, err := l.scanSegment(ns, false, ns.base)
	if err != nil || valid != pos {
		return fmt.Errorf("rescanning truncated segment %d: %v", ns.base, err)
	}
	if err := l.writeIndexFiles(ns, b.idx, b.tidx); err != nil {
		return err
	}
	ns.act = b
	ns.maxTs, ns.maxTsKnown = b.maxTs, true
	l.mu.Lock()
	l.segs = append(l.segs[:i:i], ns)
	l.leo = max(newLEO, b.nextOffset)
	l.hw, l.recoveryPoint = min(l.hw, l.leo), min(l.recoveryPoint, l.leo)
	l.logStart = min(l.logStart, l.leo)
	l.notifyLocked()
	l.mu.Unlock()
	l.files.drop(seg)
	for _, s := range later {
		if err := l.removeSegmentFiles(s); err != nil {
			return err
		}
	}
	return nil
}

// OffsetForTimestamp returns the first offset whose record timestamp >= ts,
// found through the time index; ok=false if there is none. The returned
// timestamp is that record's timestamp (the batch's max timestamp if its
// records cannot be decoded).
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool, err error) {
	l.mu.RLock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.RUnlock()
		return 0, 0, false, err
	}
	segs := append([]*segment(nil), l.segs...)
	logStart := l.logStart
	l.mu.RUnlock()
	for _, s := range segs {
		mts, err := l.segMaxTs(s)
		if err != nil {
			return 0, 0, false, err
		}
		if mts < ts {
			continue
		}
		l.mu.RLock()
		i := l.segPosLocked(s)
		if i < 0 {
			l.mu.RUnlock()
			continue // deleted meanwhile
		}
		v, err := l.viewLocked(i)
		l.mu.RUnlock()
		if err != nil {
			return 0, 0, false, err
		}
		off, t, found, err := l.timestampInSegment(v, ts, logStart)
		v.release()
		if err != nil || found {
			return off, t, found, err
		}
	}
	return 0, 0, false, nil
}

func (l *Log) timestampInSegment(v *segView, ts, logStart int64) (int64, int64, bool, error) {
	if err := l.indexes(v); err != nil {
		return 0, 0, false, err
	}
	var start int64
	if rel, ok := lookupTime(v.tidx, ts); ok {
		pos, _, found, err := l.findBatch(v, v.seg.base+int64(rel))
		if err != nil {
			return 0, 0, false, err
		}
		if found {
			start = pos
		}
	}
	sc := newScanner(v.h.f, start, v.size, scanChunk)
	sc.withBody = true
	for {
		h, _, body, err := sc.next()
		if err == io.EOF {
			return 0, 0, false, nil
		}
		if err != nil {
			return 0, 0, false, err
		}
		if h.MaxTimestamp < ts || h.LastOffset() < logStart {
			continue
		}
		off, t := h.BaseOffset, h.MaxTimestamp
		if h.Attributes&AttrLogAppendTime == 0 {
			if recs, err := batchRecords(body, h); err == nil {
				for _, r := range recs {
					rts := h.FirstTimestamp + r.rec.TimestampDelta64
					ro := h.BaseOffset + int64(r.rec.OffsetDelta)
					if rts >= ts && ro >= logStart {
						off, t = ro, rts
						break
					}
				}
			}
		}
		return max(off, logStart), t, true, nil
	}
}
