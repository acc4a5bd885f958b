package log

import (
	"errors"
	"fmt"
	"io"
	"math"

	"go.uber.org/zap"

	"weir/broker/log/vfs"
)

// segView is a consistent snapshot of one segment for a reader: its cached
// file (referenced), its size and its offset/time indexes.
type segView struct {
	seg *segment
	// maxRel bounds relative offsets in the indexes (next segment's base).
	maxRel int64
	h      *handle
	size   int64
	idx    []byte
	tidx   []byte
	// sc is the scanner of the last findBatch; extend reuses its window.
	sc *batchScanner
}

func (v *segView) release() {
	if v.h != nil {
		v.h.release()
		v.h = nil
	}
}

// viewLocked takes a reference on segment i. l.mu must be held (read or
// write), so the segment cannot be deleted or replaced meanwhile.
func (l *Log) viewLocked(i int) (*segView, error) {
	s := l.segs[i]
	h, err := l.files.acquire(s, s.act != nil)
	if err != nil {
		return nil, fmt.Errorf("log %s: open segment %d: %w", l.dir, s.base, err)
	}
	v := &segView{seg: s, h: h, size: s.size, maxRel: math.MaxUint32}
	if i+1 < len(l.segs) {
		v.maxRel = l.segs[i+1].base - s.base - 1
	}
	if s.act != nil {
		v.idx, v.tidx = s.act.idx, s.act.tidx
		v.size = s.act.size
	}
	return v, nil
}

// indexes returns the offset and time index of a sealed view, loading and
// validating them on first use (rebuilding them from the log if invalid).
func (l *Log) indexes(v *segView) error {
	if v.seg.act != nil || v.idx != nil || v.tidx != nil {
		return nil
	}
	h := v.h
	h.idxMu.Lock()
	defer h.idxMu.Unlock()
	if !h.idxLoaded {
		if err := l.loadIndexes(h, v.size, v.maxRel); err != nil {
			return err
		}
		h.idxLoaded = true
	}
	v.idx, v.tidx = h.idx, h.tidx
	return nil
}

func (l *Log) loadIndexes(h *handle, size, maxRel int64) error {
	s := h.seg
	idx, r1, err1 := vfs.MapFile(l.fs, s.path(indexSuffix))
	tidx, r2, err2 := vfs.MapFile(l.fs, s.path(timeIndexSuffix))
	err := errors.Join(err1, err2)
	if err == nil {
		err = validateOffsetIndex(idx, size, maxRel)
	}
	if err == nil {
		err = validateTimeIndex(tidx, size, maxRel)
	}
	if err == nil {
		h.idx, h.tidx = idx, tidx
		h.releases = append(h.releases, r1, r2)
		return nil
	}
	if r1 != nil {
		r1()
	}
	if r2 != nil {
		r2()
	}
	return l.rebuildIndexes(h, size, err)
}

// rebuildIndexes rebuilds a sealed segment's indexes by scanning its log.
// h.idxMu must be held.
func (l *Log) rebuildIndexes(h *handle, size int64, cause error) error {
	s := h.seg
	l.logger.Warn("rebuilding segment indexes", zap.Int64("segment", s.base), zap.NamedError("cause", cause))
	b := newIndexBuilder(s.base, l.Config().IndexIntervalBytes)
	sc := newScanner(h.f, 0, size, scanChunk)
	for {
		hd, pos, _, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("log %s: rebuild index of segment %d: %w", l.dir, s.base, err)
		}
		b.add(hd, pos)
	}
	b.finish()
	for _, r := range h.releases {
		r()
	}
	h.releases = nil
	h.idx, h.tidx = b.idx, b.tidx
	h.idxLoaded = true
	if err := l.writeIndexFiles(s, b.idx, b.tidx); err != nil {
		l.logger.Warn("could not rewrite rebuilt index", zap.Error(err))
	}
	return nil
}

// findBatch returns the position and header of the first batch in v whose
// last offset >= offset, or found=false if the segment has none.
func (l *Log) findBatch(v *segView, offset int64) (pos int64, h BatchHeader, found bool, err error) {
	if err := l.indexes(v); err != nil {
		return 0, h, false, err
	}
	rel := offset - v.seg.base
	if rel < 0 {
		rel = 0
	}
	if rel > math.MaxUint32 {
		rel = math.MaxUint32
	}
	entryRel, start, indexed := lookupOffset(v.idx, uint32(rel))
	for attempt := 0; ; attempt++ {
		sc := newScanner(v.h.f, start, v.size, 4<<10+BatchHeaderSize)
		sc.minBase = v.seg.base
		v.sc = sc
		for first := true; ; first = false {
			h, pos, _, err = sc.next()
			if err == io.EOF {
				return 0, h, false, nil
			}
			if err == nil && first && indexed && h.BaseOffset != v.seg.base+int64(entryRel) {
				err = fmt.Errorf("%w: index entry for offset %d points at a batch with base %d", ErrCorruptIndex, v.seg.base+int64(entryRel), h.BaseOffset)
			}
			if err != nil {
				break
			}
			if h.LastOffset() >= offset {
				return pos, h, true, nil
			}
		}
		// A bad batch where the index pointed: the index may be stale.
		if attempt > 0 || v.seg.act != nil || !indexed {
			return 0, h, false, fmt.Errorf("log %s: segment %d: %w", l.dir, v.seg.base, err)
		}
		v.h.idxMu.Lock()
		rerr := l.rebuildIndexes(v.h, v.size, err)
		v.idx, v.tidx = v.h.idx, v.h.tidx
		v.h.idxMu.Unlock()
		if rerr != nil {
			return 0, h, false, rerr
		}
		entryRel, start, indexed = lookupOffset(v.idx, uint32(rel))
	}
}

// Read returns a Section of whole batches starting with the batch that
// contains offset, ending before the first batch whose base offset >=
// maxOffset and within maxBytes, except that the first batch is always
// returned whole even if larger than maxBytes. offset == EndOffset() (or >=
// maxOffset) gives an empty Section. offset < StartOffset() or >
// EndOffset() gives ErrOffsetOutOfRange. The caller must Release() the
// Section.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64) (*Section, error) {
	l.mu.RLock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.RUnlock()
		return nil, err
	}
	if offset < l.logStart || offset > l.leo {
		start, end := l.logStart, l.leo
		l.mu.RUnlock()
		return nil, fmt.Errorf("log %s: offset %d not in [%d, %d]: %w", l.dir, offset, start, end, ErrOffsetOutOfRange)
	}
	if offset == l.leo || offset >= maxOffset {
		l.mu.RUnlock()
		return &Section{}, nil
	}
	i := l.segIndexLocked(offset)
	v, err := l.viewLocked(i)
	l.mu.RUnlock()
	for {
		if err != nil {
			return nil, err
		}
		pos, h, found, ferr := l.findBatch(v, offset)
		if ferr != nil {
			v.release()
			return nil, ferr
		}
		if found {
			return l.extend(v, pos, h, maxBytes, maxOffset)
		}
		// Nothing at or after offset in this segment (compaction gap or a
		// segment boundary): continue in the next segment.
		base := v.seg.base
		v.release()
		l.mu.RLock()
		if err = l.checkOpenLocked(); err == nil {
			j := l.segIndexLocked(base) + 1
			if j >= len(l.segs) {
				l.mu.RUnlock()
				return &Section{}, nil
			}
			v, err = l.viewLocked(j)
		}
		l.mu.RUnlock()
	}
}

// extend grows a section from the first batch at pos to as many whole
// batches as fit maxBytes and are below maxOffset.
func (l *Log) extend(v *segView, pos int64, first BatchHeader, maxBytes int32, maxOffset int64) (*Section, error) {
	if first.BaseOffset >= maxOffset {
		v.release()
		return &Section{}, nil
	}
	end := pos + first.Size()
	limit := pos + int64(maxBytes)
	if p := lastEntryBefore(v.idx, v.seg.base, limit, maxOffset); p > end {
		end = p // every batch between end and p fits and is below maxOffset
	}
	sc := v.sc
	if sc == nil {
		sc = newScanner(v.h.f, end, v.size, 4<<10+BatchHeaderSize)
	}
	sc.pos, sc.minBase = end, -1
	upper := int64(-1)
	for {
		h, p, _, err := sc.next()
		if err != nil {
			break
		}
		if p+h.Size() > limit || h.BaseOffset >= maxOffset {
			upper = h.BaseOffset
			break
		}
		end = p + h.Size()
	}
	return &Section{h: v.h, f: v.h.f, off: pos, n: end - pos, upper: upper}, nil
}

// ScanBatches calls fn with the header of every batch from the one holding
// offset from to the log end. It stops at the first error fn returns.
func (l *Log) ScanBatches(from int64, fn func(BatchHeader) error) error {
	return l.scanBatches(from, func(h BatchHeader, _ []byte) error { return fn(h) })
}

// ScanBatchesControl is ScanBatches that also hands fn the whole bytes of
// each control batch (nil for other batches), valid during the call:
// the producer state reads transaction markers with it.
func (l *Log) ScanBatchesControl(from int64, fn func(h BatchHeader, control []byte) error) error {
	return l.scanBatches(from, fn)
}

func (l *Log) scanBatches(from int64, fn func(BatchHeader, []byte) error) error {
	l.mu.RLock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.RUnlock()
		return err
	}
	if from < l.logStart {
		from = l.logStart
	}
	i := l.segIndexLocked(from)
	l.mu.RUnlock()
	for {
		l.mu.RLock()
		if i >= len(l.segs) {
			l.mu.RUnlock()
			return nil
		}
		v, err := l.viewLocked(i)
		l.mu.RUnlock()
		if err != nil {
			return err
		}
		pos, _, found, err := l.findBatch(v, from)
		if err != nil || !found {
			v.release()
			if err != nil {
				return err
			}
			i++
			continue
		}
		sc := newScanner(v.h.f, pos, v.size, scanChunk)
		for {
			h, pos, _, err := sc.next()
			if err == io.EOF {
				break
			}
			var body []byte
			if err == nil && h.IsControl() {
				body, err = sc.window(pos, int(h.Size()))
				if err != nil {
					err = readError("reading control batch", pos, err)
				}
			}
			if err == nil {
				err = fn(h, body)
			}
			if err != nil {
				v.release()
				return err
			}
			from = h.LastOffset() + 1
		}
		v.release()
		i++
	}
}

// Section is a byte range of a segment file holding whole record batches.
// It keeps the file open (a FileCache reference) until Release.
type Section struct {
	h        *handle
	f        vfs.File
	off, n   int64
	released bool
	upper    int64 // base offset of the batch after the section, 0 or -1 if not known
}

// UpperBound is the base offset of the first batch after the section when
// the read stopped at one (size or offset limit), else -1: no record of
// the section is at or past it (Kafka's fetchUpperBoundOffset, which
// bounds the aborted transactions a read_committed fetch returns).
func (s *Section) UpperBound() int64 {
	if s.upper <= 0 {
		return -1
	}
	return s.upper
}

// Len is the number of bytes in the section.
func (s *Section) Len() int64 { return s.n }

// ReadAt reads from the section (offsets relative to its start).
func (s *Section) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= s.n {
		return 0, io.EOF
	}
	if rem := s.n - off; int64(len(p)) > rem {
		n, err := s.f.ReadAt(p[:rem], s.off+off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return s.f.ReadAt(p, s.off+off)
}

// Bytes reads the whole section into memory.
func (s *Section) Bytes() ([]byte, error) {
	buf := make([]byte, s.n)
	if s.n == 0 {
		return buf, nil
	}
	n, err := s.ReadAt(buf, 0)
	if n == len(buf) {
		err = nil
	}
	return buf, err
}

// Release gives the section's file reference back. Calling it twice is safe
// (from one goroutine).
func (s *Section) Release() {
	if s.released {
		return
	}
	s.released = true
	if s.h != nil {
		s.h.release()
	}
}
