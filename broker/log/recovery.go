package log

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"weir/broker/log/vfs"
)

const (
	cleanMarkerName = ".clean-shutdown"
	checkpointName  = "checkpoint"
	// recoveryChunk is the read window used when validating a segment.
	recoveryChunk = 1 << 20
	// scanChunk is the read window for header-only scans.
	scanChunk = 16 << 10
)

type checkpoint struct {
	recoveryPoint, logStart, hw int64
}

func (l *Log) readCheckpoint() checkpoint {
	var ck checkpoint
	data, err := vfs.ReadFile(l.fs, path.Join(l.dir, checkpointName))
	if err != nil {
		if !isNotExist(err) {
			l.logger.Warn("unreadable checkpoint; recovering from the start", zap.Error(err))
		}
		return ck
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			continue
		}
		switch k {
		case "recovery-point":
			ck.recoveryPoint = n
		case "log-start-offset":
			ck.logStart = n
		case "high-watermark":
			ck.hw = n
		}
	}
	return ck
}

// writeCheckpoint persists recovery point, log start offset and HW.
// Writers are serialized: the flush after a roll and retention can write
// at the same time, and each reads the state it writes under ckMu, so a
// later state is never overwritten by an earlier one.
func (l *Log) writeCheckpoint(durable bool) error {
	l.ckMu.Lock()
	defer l.ckMu.Unlock()
	l.mu.RLock()
	ck := checkpoint{l.recoveryPoint, l.logStart, l.hw}
	written := l.ckWritten
	l.mu.RUnlock()
	if ck == written {
		return nil // unchanged (idle partitions cost no I/O)
	}
	data := fmt.Appendf(nil, "recovery-point %d\nlog-start-offset %d\nhigh-watermark %d\n", ck.recoveryPoint, ck.logStart, ck.hw)
	if err := vfs.WriteFileAtomic(l.fs, l.dir, path.Join(l.dir, checkpointName), data, durable); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	l.mu.Lock()
	l.ckWritten = ck
	l.mu.Unlock()
	return nil
}

func (l *Log) writeCleanMarker(act *segment) error {
	f, err := l.fs.Create(path.Join(l.dir, cleanMarkerName))
	if err != nil {
		return fmt.Errorf("write clean-shutdown marker: %w", err)
	}
	return f.Close()
}

// ensureDirty removes the clean-shutdown marker (durably) before the first
// mutation of the active segment after a clean open.
func (l *Log) ensureDirty() error {
	l.markerMu.Lock()
	defer l.markerMu.Unlock()
	if !l.markerPresent {
		return nil
	}
	if err := l.fs.Remove(path.Join(l.dir, cleanMarkerName)); err != nil && !isNotExist(err) {
		return fmt.Errorf("remove clean-shutdown marker: %w", err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	l.markerPresent = false
	return nil
}

// finishSwaps completes compaction swaps that were committed (a .log.swap
// exists) and removes uncommitted leftovers (.cleaned, .tmp, stray .swap).
func (l *Log) finishSwaps(names []string) error {
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, n := range names {
		base, ok := parseSegmentName(strings.TrimSuffix(n, swapSuffix), logSuffix)
		if !ok || !strings.HasSuffix(n, swapSuffix) {
			continue
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
			final := segmentName(base, suf)
			swap := final + swapSuffix
			if have[swap] {
				if err := l.fs.Rename(path.Join(l.dir, swap), path.Join(l.dir, final)); err != nil {
					return fmt.Errorf("finish compaction swap of %s: %w", swap, err)
				}
				delete(have, swap)
				l.logger.Info("completed interrupted compaction swap", zap.String("file", final))
			} else if suf != logSuffix {
				// The index was already renamed or never made: rebuild it.
				l.fs.Remove(path.Join(l.dir, final))
			}
		}
	}
	for n := range have {
		if strings.HasSuffix(n, swapSuffix) || strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, tmpSuffix) {
			if err := l.fs.Remove(path.Join(l.dir, n)); err != nil && !isNotExist(err) {
				return fmt.Errorf("remove leftover %s: %w", n, err)
			}
		}
	}
	return nil
}

// load reads the directory and brings the log to a consistent state.
func (l *Log) load() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	if err := l.finishSwaps(names); err != nil {
		return err
	}
	if names, err = l.fs.List(l.dir); err != nil {
		return err
	}
	ck := l.readCheckpoint()
	l.ckWritten = ck
	clean := false
	logs := map[int64]bool{}
	for _, n := range names {
		if n == cleanMarkerName {
			clean = true
		}
		if base, ok := parseSegmentName(n, logSuffix); ok {
			logs[base] = true
		}
	}
	for _, n := range names {
		for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if base, ok := parseSegmentName(n, suf); ok && !logs[base] {
				l.fs.Remove(path.Join(l.dir, n)) // orphan index
			}
		}
	}
	for _, n := range names {
		base, ok := parseSegmentName(n, logSuffix)
		if !ok {
			continue
		}
		s := &segment{fs: l.fs, dir: l.dir, base: base}
		fi, err := l.fs.Stat(path.Join(l.dir, n))
		if err != nil {
			return err
		}
		s.size = fi.Size()
		l.segs = append(l.segs, s)
	}
	fresh := len(l.segs) == 0
	if fresh {
		s := &segment{fs: l.fs, dir: l.dir, base: ck.logStart, rollTs: l.nowMs()}
		f, err := l.fs.Create(s.path(logSuffix))
		if err != nil {
			return err
		}
		f.Close()
		l.segs = []*segment{s}
		clean = false
	}
	l.logStart = max(ck.logStart, l.segs[0].base)
	act := l.active()
	act.rollTs = l.nowMs()
	if clean {
		if err := l.loadActiveClean(act); err != nil {
			l.logger.Warn("active segment inconsistent after clean shutdown; recovering it", zap.Error(err))
			clean = false
		}
	}
	if clean {
		l.markerPresent = true
		l.recoveryPoint = l.leo
	} else {
		began := time.Now()
		rep, err := l.recover(ck.recoveryPoint)
		if err != nil {
			return err
		}
		if !fresh {
			l.logRecovery(rep, time.Since(began))
		}
		l.recoveryPoint = min(ck.recoveryPoint, l.leo)
		if l.recoveryPoint < l.logStart {
			l.recoveryPoint = l.logStart
		}
		// A stale marker (e.g. removal not yet durable) must not survive.
		if err := l.fs.Remove(path.Join(l.dir, cleanMarkerName)); err != nil && !isNotExist(err) {
			return err
		}
	}
	if l.logStart > l.leo {
		l.logStart = l.leo
	}
	l.hw = max(min(ck.hw, l.leo), l.logStart)
	if !clean {
		l.ckWritten = checkpoint{} // state changed by recovery: rewrite
	}
	return nil
}

// loadActiveClean loads the active segment's indexes from disk after a clean
// shutdown and validates the tail after the last index entry.
func (l *Log) loadActiveClean(s *segment) error {
	idx, err := vfs.ReadFile(l.fs, s.path(indexSuffix))
	if err != nil && !(isNotExist(err) && s.size == 0) {
		return err
	}
	tidx, err := vfs.ReadFile(l.fs, s.path(timeIndexSuffix))
	if err != nil && !(isNotExist(err) && s.size == 0) {
		return err
	}
	if err := validateOffsetIndex(idx, s.size, math.MaxUint32); err != nil {
		return err
	}
	if err := validateTimeIndex(tidx, s.size, math.MaxUint32); err != nil {
		return err
	}
	f, err := l.fs.Open(s.path(logSuffix))
	if err != nil {
		return err
	}
	defer f.Close()
	b := newIndexBuilder(s.base, l.cfg.IndexIntervalBytes)
	b.idx, b.tidx = idx, tidx
	var from int64
	if n := len(idx) / offsetEntrySize; n > 0 {
		rel, pos := offsetEntry(idx, n-1)
		from = int64(pos)
		b.size, b.lastRel, b.batches = from, rel, 1
	}
	if n := len(tidx) / timeEntrySize; n > 0 {
		b.lastTs, _ = timeEntry(tidx, n-1)
		b.maxTs = b.lastTs
	}
	sc := newScanner(f, from, s.size, scanChunk)
	sc.checkCRC = true
	sc.minBase = s.base
	first := true
	for {
		h, pos, _, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if first && from > 0 && h.BaseOffset != s.base+int64(b.lastRel) {
			return fmt.Errorf("%w: last index entry points at offset %d, batch has %d", ErrCorruptIndex, s.base+int64(b.lastRel), h.BaseOffset)
		}
		first = false
		bs := b.batches
		b.add(h, pos)
		if pos == from && from > 0 {
			b.batches = bs // re-added the indexed batch
		}
	}
	if s.size > 0 {
		var hb [BatchHeaderSize]byte
		if _, err := f.ReadAt(hb[:], 0); err != nil {
			return err
		}
		h, err := ParseBatchHeader(hb[:])
		if err != nil {
			return err
		}
		b.firstTs = h.MaxTimestamp
	}
	s.act = b
	s.maxTs, s.maxTsKnown = b.maxTs, true
	l.leo = max(b.nextOffset, s.base)
	return nil
}

// recoveryReport is what recovery found, logged in one line per partition.
type recoveryReport struct {
	from            int64 // recovery point it started from
	segments        int   // segments validated batch by batch
	bytes           int64 // bytes validated
	tails           int   // sealed segments below the recovery point whose tail was checked
	cutBytes        int64 // bytes cut (torn or corrupt)
	cutSegments     []string
	deletedSegments int
	firstBad        error
}

// recover brings the log to a consistent state after an unclean shutdown.
// It validates every batch (header, CRC32C, increasing offsets) of the
// segments from the one holding offset rp on, truncates the log at the first
// bad batch (deleting later segments) and rebuilds their indexes. Sealed
// segments below rp were synced, but a failed write of an older version
// could have left a torn tail beyond their last batch: their tails (from
// the last index entry) are checked too and cut.
func (l *Log) recover(rp int64) (*recoveryReport, error) {
	rep := &recoveryReport{from: rp}
	i0 := l.segIndexLocked(rp)
	for i := 0; i < i0; i++ {
		if err := l.checkSealedTail(l.segs[i], rep); err != nil {
			return rep, err
		}
	}
	next := l.segs[i0].base
	for i := i0; i < len(l.segs); i++ {
		s := l.segs[i]
		b, validEnd, err := l.scanSegment(s, true, max(next, s.base))
		if err != nil && !errors.Is(err, ErrCorruptBatch) {
			return rep, err
		}
		rep.segments++
		rep.bytes += validEnd
		if validEnd < s.size {
			rep.cutBytes += s.size - validEnd
			rep.cutSegments = append(rep.cutSegments, segmentName(s.base, logSuffix))
			if rep.firstBad == nil {
				rep.firstBad = err
			}
			if err := l.truncateFile(s, validEnd); err != nil {
				return rep, err
			}
			for _, later := range l.segs[i+1:] {
				rep.cutBytes += later.size
				rep.deletedSegments++
				if err := l.removeSegmentFiles(later); err != nil {
					return rep, err
				}
			}
			l.segs = l.segs[:i+1]
		}
		s.maxTs, s.maxTsKnown = b.maxTs, true
		if i < len(l.segs)-1 {
			b.finish()
			s.maxTs = b.maxTs
			if err := l.rewriteIndexFiles(s, b.idx, b.tidx); err != nil {
				return rep, err
			}
		} else {
			s.act = b
		}
		next = max(b.nextOffset, next)
	}
	l.leo = max(next, l.active().base)
	return rep, nil
}

// checkSealedTail validates the batches of sealed segment s from its last
// offset-index entry to the end of the file (the whole file if its index is
// missing or does not fit), and cuts a torn or corrupt tail.
func (l *Log) checkSealedTail(s *segment, rep *recoveryReport) error {
	rep.tails++
	var from int64
	if idx, err := vfs.ReadFile(l.fs, s.path(indexSuffix)); err == nil &&
		validateOffsetIndex(idx, s.size, math.MaxUint32) == nil {
		if n := len(idx) / offsetEntrySize; n > 0 {
			_, pos := offsetEntry(idx, n-1)
			from = int64(pos)
		}
	}
	f, err := l.fs.Open(s.path(logSuffix))
	if err != nil {
		return err
	}
	sc := newScanner(f, from, s.size, scanChunk)
	sc.checkCRC = true
	sc.minBase = s.base
	for {
		_, _, _, err = sc.next()
		if err != nil {
			break
		}
	}
	f.Close()
	rep.bytes += sc.pos - from
	if err == io.EOF {
		return nil
	}
	if !errors.Is(err, ErrCorruptBatch) {
		return err
	}
	// Bad bytes in a sealed segment: validate all of it, cut at the first
	// bad batch and rewrite its indexes. Later segments are kept: they
	// begin at their own base offsets, written after this segment was sealed.
	b, validEnd, serr := l.scanSegment(s, true, s.base)
	if serr != nil && !errors.Is(serr, ErrCorruptBatch) {
		return serr
	}
	rep.segments++
	rep.cutBytes += s.size - validEnd
	rep.cutSegments = append(rep.cutSegments, segmentName(s.base, logSuffix))
	if rep.firstBad == nil {
		rep.firstBad = serr
	}
	if err := l.truncateFile(s, validEnd); err != nil {
		return err
	}
	b.finish()
	s.maxTs, s.maxTsKnown = b.maxTs, true
	l.files.drop(s)
	return l.writeIndexFiles(s, b.idx, b.tidx)
}

// logRecovery says in one line what recovery of this partition found.
func (l *Log) logRecovery(rep *recoveryReport, took time.Duration) {
	fields := []zap.Field{
		zap.Int64("recovery_point", rep.from), zap.Int64("log_end_offset", l.leo),
		zap.Int("segments_validated", rep.segments), zap.Int("sealed_tails_checked", rep.tails),
		zap.Int64("bytes_validated", rep.bytes), zap.Duration("took", took),
	}
	if rep.cutBytes == 0 {
		l.logger.Info("recovered partition log after an unclean shutdown: every batch valid", fields...)
		return
	}
	fields = append(fields, zap.Int64("bytes_cut", rep.cutBytes), zap.Strings("segments_cut", rep.cutSegments),
		zap.Int("segments_deleted", rep.deletedSegments), zap.NamedError("first_bad", rep.firstBad))
	l.logger.Warn("recovered partition log after an unclean shutdown: cut torn or corrupt data", fields...)
}

var recoveryBufs = sync.Pool{New: func() any { b := make([]byte, 0, recoveryChunk); return &b }}

// scanSegment reads a whole segment, building its indexes. It returns the
// size of the valid prefix; err (wrapping ErrCorruptBatch) says why the rest
// is invalid.
func (l *Log) scanSegment(s *segment, crc bool, minBase int64) (*indexBuilder, int64, error) {
	b := newIndexBuilder(s.base, l.cfg.IndexIntervalBytes)
	f, err := l.fs.Open(s.path(logSuffix))
	if err != nil {
		return b, 0, err
	}
	defer f.Close()
	chunk := scanChunk
	if crc {
		chunk = recoveryChunk
	}
	sc := newScanner(f, 0, s.size, chunk)
	sc.checkCRC = crc
	sc.minBase = minBase
	if crc {
		// Recovery scans many segments: reuse the 1 MiB windows rather than
		// allocate (and zero) one per segment.
		bp := recoveryBufs.Get().(*[]byte)
		sc.buf = (*bp)[:0]
		defer func() { *bp = sc.buf[:0]; recoveryBufs.Put(bp) }()
	}
	for {
		h, pos, _, err := sc.next()
		if err == io.EOF {
			return b, s.size, nil
		}
		if err != nil {
			return b, pos, err
		}
		b.add(h, pos)
	}
}

func (l *Log) truncateFile(s *segment, size int64) error {
	f, err := l.fs.OpenReadWrite(s.path(logSuffix))
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("truncate %s: %w", s.path(logSuffix), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	s.size = size
	return f.Close()
}

// writeIndexFiles replaces a segment's index files atomically (not synced:
// indexes are rebuilt from the log if lost).
func (l *Log) writeIndexFiles(s *segment, idx, tidx []byte) error {
	if err := vfs.WriteFileAtomic(l.fs, l.dir, s.path(indexSuffix), idx, false); err != nil {
		return fmt.Errorf("write index of segment %d: %w", s.base, err)
	}
	if err := vfs.WriteFileAtomic(l.fs, l.dir, s.path(timeIndexSuffix), tidx, false); err != nil {
		return fmt.Errorf("write time index of segment %d: %w", s.base, err)
	}
	return nil
}

// rewriteIndexFiles writes a sealed segment's rebuilt indexes unless the
// files on disk already hold exactly them (the usual case after a crash:
// replacing files by rename costs a writeback on ext4).
func (l *Log) rewriteIndexFiles(s *segment, idx, tidx []byte) error {
	old, err1 := vfs.ReadFile(l.fs, s.path(indexSuffix))
	oldT, err2 := vfs.ReadFile(l.fs, s.path(timeIndexSuffix))
	if err1 == nil && err2 == nil && bytes.Equal(old, idx) && bytes.Equal(oldT, tidx) {
		return nil
	}
	return l.writeIndexFiles(s, idx, tidx)
}

// removeSegmentFiles deletes a segment's files and forgets its cached file.
func (l *Log) removeSegmentFiles(s *segment) error {
	l.files.drop(s)
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := l.fs.Remove(s.path(suf)); err != nil && !isNotExist(err) {
			return fmt.Errorf("delete %s: %w", s.path(suf), err)
		}
	}
	return nil
}
