package log

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"sort"

	"go.uber.org/zap"

	"weir/broker/log/vfs"
)

// CompactStats reports a compaction pass.
type CompactStats struct {
	SegmentsCleaned int   // segments rewritten
	RecordsRemoved  int64 // superseded records and expired tombstones dropped
	BytesBefore     int64 // size of the rewritten segments before
	BytesAfter      int64 // and after
}

// maxCompactKeys bounds the key map of one pass (about 40 bytes a key); a
// pass covers as many sealed segments as fit and the next pass goes on.
const maxCompactKeys = 4 << 20

var compactSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

type keyHash [2]uint64

func hashKey(k []byte) keyHash {
	return keyHash{maphash.Bytes(compactSeeds[0], k), maphash.Bytes(compactSeeds[1], k)}
}

// MaybeCompact runs Compact if the log is compacted and it is due: the
// dirty part of its sealed segments (those not yet compacted, below the
// last stable offset) is at least min.cleanable.dirty.ratio of them,
// or its oldest dirty segment waited longer than max.compaction.lag.ms,
// or delete.retention.ms passed since the last pass (so tombstones can
// expire). The Manager's cleaner calls it (maybeCompact, with the
// cleaner's broker settings).
func (l *Log) MaybeCompact() (CompactStats, error) {
	return l.maybeCompact(cleanerPass{maxKeys: maxCompactKeys})
}

// cleanerPass carries the broker-wide cleaner settings into one pass.
type cleanerPass struct {
	maxKeys  int           // log.cleaner.dedupe.buffer.size as keys
	throttle func(n int64) // log.cleaner.io.max.bytes.per.second; nil = none
}

func (l *Log) maybeCompact(p cleanerPass) (CompactStats, error) {
	l.mu.RLock()
	cfg := l.cfg
	closed := l.closed || l.offline != nil
	var newest int64 = -1
	if len(l.segs) > 1 {
		newest = l.segs[len(l.segs)-2].base
	}
	l.mu.RUnlock()
	if closed || !cfg.Compact || newest < 0 {
		return CompactStats{}, nil
	}
	l.maintMu.Lock()
	due := l.now().Sub(l.lastCompact) >= cfg.DeleteRetentionMs
	cleaned := l.cleanedThrough
	l.maintMu.Unlock()
	if !due && newest >= cleaned {
		ratio, firstDirty := l.dirtyRatio(cleaned)
		due = ratio > 0 && ratio >= cfg.MinCleanableDirtyRatio
		if !due && firstDirty != nil && cfg.MaxCompactionLagMs > 0 {
			// Kafka: a segment dirty for longer than max.compaction.lag.ms
			// is cleaned whatever the ratio.
			if ts, err := l.segMaxTs(firstDirty); err == nil && ts <= l.nowMs()-cfg.MaxCompactionLagMs.Milliseconds() {
				due = true
			}
		}
	}
	if !due {
		return CompactStats{}, nil
	}
	return l.compact(p)
}

// dirtyRatio is Kafka's cleanable ratio: the bytes of the sealed segments
// from cleaned on (below the last stable offset) over the bytes of all
// sealed segments below it; with the first dirty segment.
func (l *Log) dirtyRatio(cleaned int64) (float64, *segment) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	limit := l.compactLimitLocked()
	var clean, dirty int64
	var first *segment
	for i, s := range l.segs[:len(l.segs)-1] {
		if l.segs[i+1].base > limit {
			break
		}
		if s.base >= cleaned {
			dirty += s.size
			if first == nil {
				first = s
			}
		} else {
			clean += s.size
		}
	}
	if dirty == 0 {
		return 0, nil
	}
	return float64(dirty) / float64(clean+dirty), first
}

// Compact keeps the last record per key in the sealed segments (never the
// active one, never a segment reaching the last stable offset: see
// SetFirstUnstableOffset), drops the batches of aborted transactions
// (they neither survive nor shadow a key), drops tombstones (null values) whose timestamp is older than
// delete.retention.ms, and keeps every surviving record's offset. Segments
// are rewritten one by one into .cleaned files and swapped in under a short
// lock, so appends and reads go on meanwhile; readers holding a Section of
// an old segment keep reading the old file. Rewritten compressed batches are
// re-compressed with their original codec. Control batches are kept as they
// are. Only segments whose max timestamp is older than
// min.compaction.lag.ms are compacted.
func (l *Log) Compact() (CompactStats, error) {
	return l.compact(cleanerPass{maxKeys: maxCompactKeys})
}

func (l *Log) compact(p cleanerPass) (CompactStats, error) {
	if p.maxKeys <= 0 {
		p.maxKeys = maxCompactKeys
	}
	l.maintMu.Lock()
	defer l.maintMu.Unlock()
	var st CompactStats
	l.mu.RLock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.RUnlock()
		return st, err
	}
	cfg := l.cfg
	segs := append([]*segment(nil), l.segs[:len(l.segs)-1]...)
	// Only segments wholly below the last stable offset: data of an
	// open transaction must not shadow committed records (Kafka's
	// firstUncleanableDirtyOffset).
	limit := l.compactLimitLocked()
	for i := range segs {
		if next := l.segs[i+1].base; next > limit {
			segs = segs[:i]
			break
		}
	}
	aborted := abortedByProducer(l.aborted)
	l.mu.RUnlock()
	if !cfg.Compact || len(segs) == 0 {
		return st, nil
	}
	now := l.nowMs()
	lagCutoff := now - cfg.MinCompactionLagMs.Milliseconds()
	eligible := 0
	for _, s := range segs {
		ts, err := l.segMaxTs(s)
		if err != nil {
			return st, err
		}
		if cfg.MinCompactionLagMs > 0 && ts > lagCutoff {
			break
		}
		eligible++
	}
	segs = segs[:eligible]
	keys := map[keyHash]int64{}
	covered := 0
	for _, s := range segs {
		if len(keys) >= p.maxKeys {
			break
		}
		if err := l.eachRecord(s, aborted, func(h BatchHeader, r *rawRecord) {
			if r.rec.Key != nil {
				keys[hashKey(r.rec.Key)] = h.BaseOffset + int64(r.rec.OffsetDelta)
			}
		}); err != nil {
			return st, err
		}
		covered++
	}
	segs = segs[:covered]
	tombCutoff := now - cfg.DeleteRetentionMs.Milliseconds()
	for _, s := range segs {
		before := st.BytesBefore + st.BytesAfter
		if err := l.compactSegment(s, keys, aborted, tombCutoff, &st); err != nil {
			return st, err
		}
		if p.throttle != nil {
			p.throttle(st.BytesBefore + st.BytesAfter - before)
		}
	}
	if len(segs) > 0 {
		l.mu.RLock()
		// By base: a rewritten segment is a new *segment with the same base.
		base := segs[len(segs)-1].base
		if i := l.segIndexLocked(base); i < len(l.segs) && l.segs[i].base == base && i+1 < len(l.segs) {
			l.cleanedThrough = l.segs[i+1].base
		}
		l.mu.RUnlock()
	}
	l.lastCompact = l.now()
	if st.SegmentsCleaned > 0 {
		l.logger.Info("compacted", zap.Int("segments", st.SegmentsCleaned), zap.Int64("records_removed", st.RecordsRemoved),
			zap.Int64("bytes_before", st.BytesBefore), zap.Int64("bytes_after", st.BytesAfter))
	}
	return st, nil
}

// sealedView references sealed segment s (nil if it is gone).
func (l *Log) sealedView(s *segment) (*segView, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i := l.segPosLocked(s)
	if i < 0 {
		return nil, nil
	}
	return l.viewLocked(i)
}

// eachRecord calls fn for every record of every non-control batch of s
// that is not part of an aborted transaction.
func (l *Log) eachRecord(s *segment, aborted abortedIndex, fn func(BatchHeader, *rawRecord)) error {
	v, err := l.sealedView(s)
	if err != nil || v == nil {
		return err
	}
	defer v.release()
	sc := newScanner(v.h.f, 0, v.size, recoveryChunk)
	sc.withBody = true
	for {
		h, _, body, err := sc.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("log %s: compaction: segment %d: %w", l.dir, s.base, err)
		}
		if h.IsControl() || aborted.has(h) {
			continue
		}
		recs, err := batchRecords(body, h)
		if err != nil {
			return fmt.Errorf("log %s: compaction: segment %d: %w", l.dir, s.base, err)
		}
		for i := range recs {
			fn(h, &recs[i])
		}
	}
}

// compactSegment rewrites s without superseded records and expired
// tombstones, if it has any, and swaps the result in.
func (l *Log) compactSegment(s *segment, keys map[keyHash]int64, aborted abortedIndex, tombCutoff int64, st *CompactStats) error {
	v, err := l.sealedView(s)
	if err != nil || v == nil {
		return err
	}
	defer v.release()
	cleaned := s.path(logSuffix) + cleanedSuffix
	out, err := l.fs.Create(cleaned)
	if err != nil {
		return fmt.Errorf("log %s: compaction: %w", l.dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			out.Close()
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				l.fs.Remove(s.path(suf) + cleanedSuffix)
			}
		}
	}()
	b := newIndexBuilder(s.base, l.Config().IndexIntervalBytes)
	sc := newScanner(v.h.f, 0, v.size, recoveryChunk)
	sc.withBody = true
	var pos int64
	var removed int64
	write := func(batch []byte) error {
		h, err := ParseBatch(batch)
		if err != nil {
			return err
		}
		if _, err := out.WriteAt(batch, pos); err != nil {
			return err
		}
		b.add(h, pos)
		pos += int64(len(batch))
		return nil
	}
	for {
		h, _, body, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("log %s: compaction: segment %d: %w", l.dir, s.base, err)
		}
		if h.IsControl() {
			if err := write(body); err != nil {
				return err
			}
			continue
		}
		if aborted.has(h) {
			// Data of an aborted transaction: dropped whole, as Kafka's
			// LogCleaner discards it (the marker and the index entry stay).
			removed += int64(h.NumRecords)
			continue
		}
		recs, err := batchRecords(body, h)
		if err != nil {
			return fmt.Errorf("log %s: compaction: segment %d: %w", l.dir, s.base, err)
		}
		keep := recs[:0:0]
		for _, r := range recs {
			off := h.BaseOffset + int64(r.rec.OffsetDelta)
			if r.rec.Key != nil {
				latest, seen := keys[hashKey(r.rec.Key)]
				if seen && latest != off {
					continue // superseded
				}
				if r.rec.Value == nil && h.FirstTimestamp+r.rec.TimestampDelta64 < tombCutoff {
					continue // expired tombstone
				}
			}
			keep = append(keep, r)
		}
		removed += int64(len(recs) - len(keep))
		switch {
		case len(keep) == len(recs):
			err = write(body)
		case len(keep) == 0:
		default:
			var nb []byte
			if nb, err = rebuildBatch(body, h, keep); err == nil {
				err = write(nb)
			}
		}
		if err != nil {
			return fmt.Errorf("log %s: compaction: segment %d: %w", l.dir, s.base, err)
		}
	}
	if removed == 0 {
		return nil // nothing to do; the deferred cleanup removes the file
	}
	b.finish()
	if err := out.Sync(); err != nil {
		return fmt.Errorf("log %s: compaction: sync: %w", l.dir, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	for suf, data := range map[string][]byte{indexSuffix: b.idx, timeIndexSuffix: b.tidx} {
		if err := writeWhole(l.fs, s.path(suf)+cleanedSuffix, data); err != nil {
			return fmt.Errorf("log %s: compaction: %w", l.dir, err)
		}
	}
	// Commit: .cleaned -> .swap (the .log.swap rename is the commit point).
	for _, suf := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
		if err := l.fs.Rename(s.path(suf)+cleanedSuffix, s.path(suf)+swapSuffix); err != nil {
			return fmt.Errorf("log %s: compaction: %w", l.dir, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log %s: compaction: %w", l.dir, err)
	}
	ok = true
	ns := &segment{fs: l.fs, dir: l.dir, base: s.base, size: pos, maxTs: b.maxTs, maxTsKnown: true}
	if b.batches == 0 {
		ns.maxTs = math.MinInt64
	}
	l.mu.Lock()
	i := l.segPosLocked(s)
	var serr error
	if i >= 0 {
		for _, suf := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
			if err := l.fs.Rename(s.path(suf)+swapSuffix, s.path(suf)); err != nil && serr == nil {
				serr = err
			}
		}
		if serr == nil {
			l.segs[i] = ns
		}
	}
	l.mu.Unlock()
	if serr != nil {
		return fmt.Errorf("log %s: compaction swap of segment %d: %w", l.dir, s.base, serr)
	}
	if i < 0 { // deleted meanwhile
		for _, suf := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
			l.fs.Remove(s.path(suf) + swapSuffix)
		}
		return nil
	}
	l.files.drop(s)
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log %s: compaction: %w", l.dir, err)
	}
	st.SegmentsCleaned++
	st.RecordsRemoved += removed
	st.BytesBefore += v.size
	st.BytesAfter += pos
	return nil
}

func writeWhole(fs vfs.FS, name string, data []byte) error {
	f, err := fs.Create(name)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// rebuildBatch writes a batch holding only keep, with the original base
// offset, lastOffsetDelta, timestamps, producer fields and codec, so every
// surviving record keeps its offset (gaps in offset deltas are legal).
func rebuildBatch(orig []byte, h BatchHeader, keep []rawRecord) ([]byte, error) {
	var raw []byte
	for _, r := range keep {
		raw = append(raw, r.raw...)
	}
	recs, err := compress(h.Codec(), raw)
	if err != nil {
		return nil, err
	}
	nb := make([]byte, BatchHeaderSize, BatchHeaderSize+len(recs))
	copy(nb, orig[:BatchHeaderSize])
	nb = append(nb, recs...)
	binary.BigEndian.PutUint32(nb[OffLength:], uint32(len(nb)-LengthFieldEnd))
	binary.BigEndian.PutUint32(nb[OffNumRecords:], uint32(len(keep)))
	setCRC(nb)
	return nb, nil
}

// abortedIndex answers whether a transactional batch belongs to an aborted
// transaction: producer id -> its aborted transactions, by offset.
type abortedIndex map[int64][]AbortedTxn

func abortedByProducer(es []AbortedTxn) abortedIndex {
	if len(es) == 0 {
		return nil
	}
	m := abortedIndex{}
	for _, e := range es { // sorted by LastOffset, so each list is too
		m[e.ProducerID] = append(m[e.ProducerID], e)
	}
	return m
}

func (a abortedIndex) has(h BatchHeader) bool {
	if a == nil || !h.IsTransactional() || h.IsControl() {
		return false
	}
	es := a[h.ProducerID]
	i := sort.Search(len(es), func(i int) bool { return es[i].LastOffset >= h.BaseOffset })
	return i < len(es) && es[i].FirstOffset <= h.BaseOffset
}
