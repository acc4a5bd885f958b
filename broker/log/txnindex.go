package log

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"weir/broker/log/vfs"
)

// The aborted-transaction index: for every aborted transaction, Kafka's
// AbortedTxn entry in the ".txnindex" file of the segment holding its
// abort marker (Kafka's TransactionIndex). Entries are 34 bytes, big
// endian:
//
//	version i16 (0) | producerId i64 | firstOffset i64 | lastOffset i64 | lastStableOffset i64
//
// lastOffset is the marker's offset; lastStableOffset is the partition's
// last stable offset once the transaction ended. A read_committed Fetch
// answers the entries overlapping the range it returns
// (CollectAborted). The log keeps every entry in memory as well (a few
// dozen bytes per aborted transaction), sorted by lastOffset; the files
// are rewritten whole when an entry is added (aborts are rare), removed
// with their segment, cut on truncation, and read at Open. Entries are
// added by the producer state (broker/txn) when it applies an abort
// marker, during appends and when it replays the log, so a file lost in a
// crash is rebuilt from the markers.

const (
	txnIndexSuffix    = ".txnindex"
	abortedTxnSize    = 34
	abortedTxnVersion = 0
)

// AbortedTxn is one entry of the aborted-transaction index.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// EncodeTxnIndex encodes entries in Kafka's .txnindex format.
func EncodeTxnIndex(entries []AbortedTxn) []byte {
	b := make([]byte, 0, len(entries)*abortedTxnSize)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint16(b, abortedTxnVersion)
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(e.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastStableOffset))
	}
	return b
}

// DecodeTxnIndex parses a .txnindex file. A length that is not a multiple
// of the entry size, an unknown version, or an entry whose offsets are
// impossible is an error wrapping ErrCorruptIndex naming the entry.
func DecodeTxnIndex(b []byte) ([]AbortedTxn, error) {
	if len(b)%abortedTxnSize != 0 {
		return nil, fmt.Errorf("%w: transaction index of %d bytes is not a whole number of %d-byte entries", ErrCorruptIndex, len(b), abortedTxnSize)
	}
	out := make([]AbortedTxn, 0, len(b)/abortedTxnSize)
	for i := 0; len(b) > 0; i++ {
		if v := binary.BigEndian.Uint16(b); v != abortedTxnVersion {
			return nil, fmt.Errorf("%w: transaction index entry %d has version %d", ErrCorruptIndex, i, v)
		}
		e := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if e.ProducerID < 0 || e.FirstOffset < 0 || e.LastOffset < e.FirstOffset || e.LastStableOffset < 0 {
			return nil, fmt.Errorf("%w: transaction index entry %d is impossible: %+v", ErrCorruptIndex, i, e)
		}
		if n := len(out); n > 0 && e.LastOffset <= out[n-1].LastOffset {
			return nil, fmt.Errorf("%w: transaction index entry %d (last offset %d) is not after entry %d (%d)", ErrCorruptIndex, i, e.LastOffset, i-1, out[n-1].LastOffset)
		}
		out = append(out, e)
		b = b[abortedTxnSize:]
	}
	return out, nil
}

// AddAbortedTxn records an aborted transaction whose abort marker is at
// e.LastOffset (< the log end offset) and writes the .txnindex of the
// segment holding it. Adding an entry the index already has (same marker
// offset) does nothing, so replaying the log re-adds only missing ones.
func (l *Log) AddAbortedTxn(e AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	if err := l.checkOpenLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	if e.LastOffset >= l.leo || e.LastOffset < l.segs[0].base {
		l.mu.Unlock()
		return fmt.Errorf("log %s: aborted transaction marker at %d is outside the log [%d, %d)", l.dir, e.LastOffset, l.segs[0].base, l.leo)
	}
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= e.LastOffset })
	if i < len(l.aborted) && l.aborted[i].LastOffset == e.LastOffset {
		l.mu.Unlock()
		return nil
	}
	l.aborted = slices.Insert(l.aborted, i, e)
	seg := l.segs[l.segIndexLocked(e.LastOffset)]
	data := EncodeTxnIndex(l.abortedInLocked(seg))
	l.mu.Unlock()
	return l.writeTxnIndex(seg, data)
}

// abortedInLocked returns the entries whose marker is in segment s.
func (l *Log) abortedInLocked(s *segment) []AbortedTxn {
	end := int64(1<<63 - 1)
	if i := l.segPosLocked(s); i >= 0 && i+1 < len(l.segs) {
		end = l.segs[i+1].base
	}
	lo := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= s.base })
	hi := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= end })
	return slices.Clone(l.aborted[lo:hi])
}

func (l *Log) writeTxnIndex(s *segment, data []byte) error {
	name := s.path(txnIndexSuffix)
	if len(data) == 0 {
		if err := l.fs.Remove(name); err != nil && !isNotExist(err) {
			return fmt.Errorf("log %s: removing %s: %w", l.dir, name, err)
		}
		return nil
	}
	if err := vfs.WriteFileAtomic(l.fs, l.dir, name, data, true); err != nil {
		return fmt.Errorf("log %s: writing %s: %w", l.dir, name, err)
	}
	return nil
}

// CollectAborted returns the aborted transactions a read_committed fetch
// of the offsets [from, upTo) must be told of: those whose marker is at or
// after from and whose first offset is below upTo (Kafka's
// collectAbortedTxns), ordered by marker offset. nil when there are none.
func (l *Log) CollectAborted(from, upTo int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= from })
	var out []AbortedTxn
	for ; i < len(l.aborted); i++ {
		e := l.aborted[i]
		if e.FirstOffset < upTo {
			out = append(out, e)
		}
		// No later entry can start below upTo (Kafka stops here too).
		if e.LastStableOffset >= upTo {
			break
		}
	}
	return out
}

// AbortedTxns returns every entry of the index (tests, tools).
func (l *Log) AbortedTxns() []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return slices.Clone(l.aborted)
}

// loadTxnIndexes reads the segments' .txnindex files at Open. Entries at or
// past the log end (a tail cut by recovery) are dropped and the file
// rewritten; an unreadable file is removed (its entries come back when the
// producer state replays the markers).
func (l *Log) loadTxnIndexes() error {
	l.aborted = nil
	for i, s := range l.segs {
		data, err := vfs.ReadFile(l.fs, s.path(txnIndexSuffix))
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", s.path(txnIndexSuffix), err)
		}
		es, err := DecodeTxnIndex(data)
		if err != nil {
			l.logger.Warn("removing unreadable transaction index; the producer state rebuilds it from the log")
			if err := l.fs.Remove(s.path(txnIndexSuffix)); err != nil && !isNotExist(err) {
				return err
			}
			continue
		}
		end := l.leo
		if i+1 < len(l.segs) {
			end = l.segs[i+1].base
		}
		keep := slices.DeleteFunc(slices.Clone(es), func(e AbortedTxn) bool { return e.LastOffset < s.base || e.LastOffset >= end })
		if n := len(l.aborted); n > 0 && len(keep) > 0 && keep[0].LastOffset <= l.aborted[n-1].LastOffset {
			keep = nil // out of order across segments: rebuilt from the log
		}
		if len(keep) != len(es) {
			if err := l.writeTxnIndex(s, EncodeTxnIndex(keep)); err != nil {
				return err
			}
		}
		l.aborted = append(l.aborted, keep...)
	}
	return nil
}

// pruneTxnIndex drops the entries outside the segments [first base, leo)
// after segments were deleted or the tail cut, and rewrites the last
// segment's file when it lost entries.
func (l *Log) pruneTxnIndex() error {
	l.mu.Lock()
	if len(l.aborted) == 0 {
		l.mu.Unlock()
		return nil
	}
	start, leo := l.segs[0].base, l.leo
	n := len(l.aborted)
	l.aborted = slices.DeleteFunc(l.aborted, func(e AbortedTxn) bool { return e.LastOffset < start })
	cut := len(l.aborted)
	l.aborted = slices.DeleteFunc(l.aborted, func(e AbortedTxn) bool { return e.LastOffset >= leo })
	tailCut := len(l.aborted) != cut
	act := l.active()
	data := EncodeTxnIndex(l.abortedInLocked(act))
	l.mu.Unlock()
	if n == len(l.aborted) || !tailCut {
		return nil
	}
	return l.writeTxnIndex(act, data)
}

// SetFirstUnstableOffset tells the log the first offset that is not yet
// stable (the earliest open or uncommitted transaction; -1: none): the
// producer state of a leader sets it, a follower passes on the leader's
// last stable offset. Compaction only cleans segments wholly below it.
func (l *Log) SetFirstUnstableOffset(off int64) {
	l.mu.Lock()
	l.firstUnstable = off
	l.mu.Unlock()
}

// FirstUnstableOffset is the value last given to SetFirstUnstableOffset
// (-1: none known).
func (l *Log) FirstUnstableOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.firstUnstable
}

// compactLimitLocked is the offset compaction stays below.
func (l *Log) compactLimitLocked() int64 {
	if l.firstUnstable >= 0 {
		return l.firstUnstable
	}
	return math.MaxInt64
}
