package streams

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Repartition deduplication
//
// A record written to a repartition topic carries the header SourceHeader:
//
//	source header  version 1 | uvarint len(topic) | topic | uvarint partition
//	               | uvarint offset | uvarint seq
//
// topic/partition is the writing task's input partition, offset the input
// record the write came from, seq its index among the repartition writes
// that input record caused (FlatMap, Branch + Merge...). The first part,
// up to the partition, identifies the source; (offset, seq) is a position
// that grows strictly with every write of that source's task.
//
// The task reading the repartition topic keeps, per store and per source,
// the highest position it applied, and skips a record at or below it: a
// copy written again by a replay. Replays write the same records in the
// same order (operators are deterministic, the producer is idempotent so a
// partition keeps each writer's order), so every copy comes after its
// original in the repartition partition and is skipped. The positions are
// part of each store's changelog marker (and clean-close checkpoint), so
// they restore together with the entries the marker covers: a restored
// store and its positions describe the same records.
const SourceHeader = "weir.streams.src"

var errBadSource = errors.New("malformed source positions")

// srcPos is a position in a source's sequence of repartition writes.
type srcPos struct {
	off int64
	seq uint64
	id  string // the source id it is stored under (dedupe's cache)
}

func (p srcPos) after(q srcPos) bool { return p.off > q.off || (p.off == q.off && p.seq > q.seq) }

// sourceID is the identifying prefix of a task's source header values.
func sourceID(topic string, p int32) []byte {
	b := []byte{1}
	b = binary.AppendUvarint(b, uint64(len(topic)))
	b = append(b, topic...)
	return binary.AppendUvarint(b, uint64(p))
}

// sourceHeader is the header for the task's current input record and next
// sequence number. Values are carved from a shared chunk (one allocation
// per many records; a chunk lives until its last record is acknowledged).
func (t *task) sourceHeader() kgo.RecordHeader {
	need := len(t.srcID) + 2*binary.MaxVarintLen64
	if cap(t.hdrBuf)-len(t.hdrBuf) < need {
		t.hdrBuf = make([]byte, 0, max(16<<10, need))
	}
	start := len(t.hdrBuf)
	v := append(t.hdrBuf, t.srcID...)
	v = binary.AppendUvarint(v, uint64(t.curOffset))
	v = binary.AppendUvarint(v, t.seq)
	t.seq++
	t.hdrBuf = v
	return kgo.RecordHeader{Key: SourceHeader, Value: v[start:len(v):len(v)]}
}

// withSource returns hs plus the source header, in a new slice (carved,
// like the values, from a shared chunk when hs is empty).
func (t *task) withSource(hs []kgo.RecordHeader) []kgo.RecordHeader {
	h := t.sourceHeader()
	if len(hs) > 0 {
		out := make([]kgo.RecordHeader, len(hs), len(hs)+1)
		copy(out, hs)
		return append(out, h)
	}
	if len(t.hdrs) == cap(t.hdrs) {
		t.hdrs = make([]kgo.RecordHeader, 0, 256)
	}
	t.hdrs = append(t.hdrs, h)
	n := len(t.hdrs)
	return t.hdrs[n-1 : n : n]
}

// parseSource splits a source header value into its source id and
// position.
func parseSource(v []byte) (id []byte, pos srcPos, ok bool) {
	if len(v) < 1 || v[0] != 1 {
		return nil, pos, false
	}
	i := 1
	l, n := binary.Uvarint(v[i:])
	if n <= 0 || l > uint64(len(v)-i-n) {
		return nil, pos, false
	}
	i += n + int(l)
	if _, n = binary.Uvarint(v[i:]); n <= 0 {
		return nil, pos, false
	}
	i += n
	id = v[:i]
	off, n := binary.Uvarint(v[i:])
	if n <= 0 {
		return nil, pos, false
	}
	i += n
	seq, n := binary.Uvarint(v[i:])
	if n <= 0 || i+n != len(v) {
		return nil, pos, false
	}
	return id, srcPos{off: int64(off), seq: seq}, true
}

// takeSource finds the source header among hs (the runtime appends it
// last) and returns hs without it.
func takeSource(hs []kgo.RecordHeader) (rest []kgo.RecordHeader, v []byte, found bool) {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Key == SourceHeader {
			if i == len(hs)-1 {
				return hs[:i:i], hs[i].Value, true
			}
			return slices.Delete(slices.Clone(hs), i, i+1), hs[i].Value, true
		}
	}
	return hs, nil, false
}

// dedupe applies a repartition record's source position to every store of
// the task: a store for which it is not new marks the record as a
// duplicate (skip), the others advance. It reports whether every store
// already has it.
func (t *task) dedupe(id []byte, pos srcPos) bool {
	all := true
	for _, s := range t.stores {
		var p *srcPos
		if s.lastPos != nil && string(s.lastID) == string(id) {
			p = s.lastPos // consecutive records mostly come from one source
		} else if p = s.seen[string(id)]; p != nil {
			s.lastID, s.lastPos = p.id, p
		}
		switch {
		case p == nil:
			if s.seen == nil {
				s.seen = make(map[string]*srcPos)
			}
			np := &srcPos{off: pos.off, seq: pos.seq, id: string(id)}
			s.seen[np.id] = np
			s.lastID, s.lastPos = np.id, np
			s.dup = false
		case pos.after(*p):
			p.off, p.seq = pos.off, pos.seq
			s.dup = false
		default:
			s.dup = true
		}
		all = all && s.dup
	}
	return all
}

// encodePositions appends positions (sorted by source, for stable
// markers): uvarint count, then per source uvarint len(id), id, uvarint
// offset, uvarint seq.
func encodePositions(b []byte, seen map[string]*srcPos) []byte {
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, strings.Compare)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		p := seen[id]
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
		b = binary.AppendUvarint(b, uint64(p.off))
		b = binary.AppendUvarint(b, p.seq)
	}
	return b
}

// decodePositions reads what encodePositions wrote and returns the rest.
func decodePositions(b []byte) (map[string]*srcPos, []byte, error) {
	n, m := binary.Uvarint(b)
	if m <= 0 || n > uint64(len(b)) {
		return nil, nil, errBadSource
	}
	b = b[m:]
	var seen map[string]*srcPos
	if n > 0 {
		seen = make(map[string]*srcPos, n)
	}
	for range n {
		l, m := binary.Uvarint(b)
		if m <= 0 || l > uint64(len(b)-m) {
			return nil, nil, errBadSource
		}
		id := string(b[m : m+int(l)])
		b = b[m+int(l):]
		off, m := binary.Uvarint(b)
		if m <= 0 {
			return nil, nil, errBadSource
		}
		b = b[m:]
		seq, m := binary.Uvarint(b)
		if m <= 0 {
			return nil, nil, errBadSource
		}
		b = b[m:]
		seen[id] = &srcPos{off: int64(off), seq: seq, id: id}
	}
	return seen, b, nil
}
