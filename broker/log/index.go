package log

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// Offset index (.index): a sparse, sorted array of 8-byte entries
//
//	relOffset uint32 (batch base offset - segment base offset)
//	position  uint32 (byte position of that batch in the .log file)
//
// Time index (.timeindex): a sorted array of 12-byte entries
//
//	timestamp int64  (largest batch max timestamp seen so far in the segment)
//	relOffset uint32 (base offset - segment base of the batch that was being
//	                  appended when the entry was made)
//
// An entry (T, rel) promises that every batch with base <= base+rel has a max
// timestamp <= T, so a lookup for the first record with timestamp >= ts can
// start scanning at the batch of the largest entry with T < ts.
const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

func offsetEntry(idx []byte, i int) (rel, pos uint32) {
	e := idx[i*offsetEntrySize:]
	return binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:])
}

func timeEntry(tidx []byte, i int) (ts int64, rel uint32) {
	e := tidx[i*timeEntrySize:]
	return int64(binary.BigEndian.Uint64(e)), binary.BigEndian.Uint32(e[8:])
}

// lookupOffset returns the largest entry whose relOffset <= rel (ok=false,
// position 0 if none).
func lookupOffset(idx []byte, rel uint32) (entryRel uint32, pos int64, ok bool) {
	n := len(idx) / offsetEntrySize
	i := sort.Search(n, func(i int) bool { r, _ := offsetEntry(idx, i); return r > rel }) - 1
	if i < 0 {
		return 0, 0, false
	}
	r, p := offsetEntry(idx, i)
	return r, int64(p), true
}

// lastEntryBefore returns the largest entry position p with p <= maxPos and
// whose base offset (base+rel) < maxOffset, or -1.
func lastEntryBefore(idx []byte, base, maxPos, maxOffset int64) int64 {
	n := len(idx) / offsetEntrySize
	i := sort.Search(n, func(i int) bool {
		r, p := offsetEntry(idx, i)
		return int64(p) > maxPos || base+int64(r) >= maxOffset
	}) - 1
	if i < 0 {
		return -1
	}
	_, pos := offsetEntry(idx, i)
	return int64(pos)
}

// lookupTime returns the relOffset of the largest time entry with T < ts.
func lookupTime(tidx []byte, ts int64) (rel uint32, ok bool) {
	n := len(tidx) / timeEntrySize
	i := sort.Search(n, func(i int) bool { t, _ := timeEntry(tidx, i); return t >= ts }) - 1
	if i < 0 {
		return 0, false
	}
	_, rel = timeEntry(tidx, i)
	return rel, true
}

// validateOffsetIndex checks an index file against the size of its log:
// whole entries, strictly increasing offsets and positions, positions within
// the log.
func validateOffsetIndex(idx []byte, logSize int64, maxRel int64) error {
	if len(idx)%offsetEntrySize != 0 {
		return fmt.Errorf("%w: offset index size %d is not a multiple of %d", ErrCorruptIndex, len(idx), offsetEntrySize)
	}
	n := len(idx) / offsetEntrySize
	var lastRel, lastPos uint32
	for i := 0; i < n; i++ {
		rel, pos := offsetEntry(idx, i)
		if i > 0 && (rel <= lastRel || pos <= lastPos) {
			return fmt.Errorf("%w: offset index entry %d (%d,%d) not after (%d,%d)", ErrCorruptIndex, i, rel, pos, lastRel, lastPos)
		}
		if int64(rel) > maxRel {
			return fmt.Errorf("%w: offset index entry %d offset %d beyond the segment", ErrCorruptIndex, i, rel)
		}
		if int64(pos)+BatchHeaderSize > logSize {
			return fmt.Errorf("%w: offset index entry %d position %d beyond log size %d", ErrCorruptIndex, i, pos, logSize)
		}
		lastRel, lastPos = rel, pos
	}
	return nil
}

// validateTimeIndex checks whole entries and increasing timestamps and
// offsets; a non-empty log must have at least one entry.
func validateTimeIndex(tidx []byte, logSize int64, maxRel int64) error {
	if len(tidx)%timeEntrySize != 0 {
		return fmt.Errorf("%w: time index size %d is not a multiple of %d", ErrCorruptIndex, len(tidx), timeEntrySize)
	}
	if logSize > 0 && len(tidx) == 0 {
		return fmt.Errorf("%w: empty time index for a %d-byte log", ErrCorruptIndex, logSize)
	}
	n := len(tidx) / timeEntrySize
	var lastTs int64
	var lastRel uint32
	for i := 0; i < n; i++ {
		ts, rel := timeEntry(tidx, i)
		if int64(rel) > maxRel {
			return fmt.Errorf("%w: time index entry %d offset %d beyond the segment", ErrCorruptIndex, i, rel)
		}
		if i > 0 && (ts <= lastTs || rel < lastRel) {
			return fmt.Errorf("%w: time index entry %d (%d,%d) not after (%d,%d)", ErrCorruptIndex, i, ts, rel, lastTs, lastRel)
		}
		lastTs, lastRel = ts, rel
	}
	return nil
}

// indexBuilder maintains the in-memory offset and time index of a segment as
// batches are appended (or scanned during recovery).
type indexBuilder struct {
	base       int64
	interval   int64
	idx        []byte
	tidx       []byte
	size       int64 // bytes of log covered
	bytesSince int64 // bytes since the last offset index entry
	maxTs      int64 // max timestamp over all batches (math.MinInt64 if none)
	lastTs     int64 // timestamp of the last time index entry
	lastRel    uint32
	nextOffset int64 // last offset + 1 of the last batch (base if none)
	firstTs    int64 // max timestamp of the first batch (roll-by-time base)
	batches    int64
}

func newIndexBuilder(base int64, interval int32) *indexBuilder {
	return &indexBuilder{base: base, interval: int64(interval), maxTs: math.MinInt64, lastTs: math.MinInt64, nextOffset: base, firstTs: -1}
}

// add records a batch written at pos (which must equal b.size).
func (b *indexBuilder) add(h BatchHeader, pos int64) {
	rel := uint32(h.BaseOffset - b.base)
	if h.MaxTimestamp > b.maxTs {
		b.maxTs = h.MaxTimestamp
	}
	if b.bytesSince >= b.interval && pos > 0 {
		b.idx = binary.BigEndian.AppendUint32(b.idx, rel)
		b.idx = binary.BigEndian.AppendUint32(b.idx, uint32(pos))
		b.bytesSince = 0
		if b.maxTs > b.lastTs {
			b.appendTime(b.maxTs, rel)
		}
	}
	if b.batches == 0 {
		b.firstTs = h.MaxTimestamp
	}
	b.batches++
	b.bytesSince += h.Size()
	b.size = pos + h.Size()
	b.lastRel = rel
	if h.LastOffset()+1 > b.nextOffset {
		b.nextOffset = h.LastOffset() + 1
	}
}

func (b *indexBuilder) appendTime(ts int64, rel uint32) {
	b.tidx = binary.BigEndian.AppendUint64(b.tidx, uint64(ts))
	b.tidx = binary.BigEndian.AppendUint32(b.tidx, rel)
	b.lastTs = ts
}

// finish appends a final time index entry covering the segment's max
// timestamp, so a sealed segment's max timestamp is its last entry.
func (b *indexBuilder) finish() {
	if b.batches > 0 && b.maxTs > b.lastTs {
		b.appendTime(b.maxTs, b.lastRel)
	}
}
