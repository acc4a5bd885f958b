package log

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Transaction markers: control batches (attributes control|transactional,
// sequence -1) holding one record whose key is Kafka's control record key
// (version int16 = 0, type int16: 0 abort, 1 commit) and whose value is
// the end-transaction marker (version int16 = 0, coordinator epoch int32),
// as Kafka's MemoryRecords.withEndTransactionMarker writes them.

// Control record types (Kafka's ControlRecordType).
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// EndTxnMarker is the content of a transaction marker.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// BuildEndTxnMarker returns a control batch holding marker m for a
// producer, timestamped ts (Unix ms), base offset 0 (the log stamps it).
func BuildEndTxnMarker(producerID int64, producerEpoch int16, m EndTxnMarker, ts int64) []byte {
	typ := ControlAbort
	if m.Commit {
		typ = ControlCommit
	}
	var rec []byte
	rec = append(rec, 0)             // record attributes
	rec = kbin.AppendVarlong(rec, 0) // timestamp delta
	rec = kbin.AppendVarint(rec, 0)  // offset delta
	rec = kbin.AppendVarint(rec, 4)  // key length
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint16(rec, uint16(typ))
	rec = kbin.AppendVarint(rec, 6) // value length
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint32(rec, uint32(m.CoordinatorEpoch))
	rec = kbin.AppendVarint(rec, 0) // headers

	b := make([]byte, BatchHeaderSize, BatchHeaderSize+5+len(rec))
	b = kbin.AppendVarint(b, int32(len(rec)))
	b = append(b, rec...)
	binary.BigEndian.PutUint32(b[OffLength:], uint32(len(b)-LengthFieldEnd))
	binary.BigEndian.PutUint32(b[OffEpoch:], 0xffffffff)
	b[OffMagic] = 2
	binary.BigEndian.PutUint16(b[OffAttributes:], uint16(AttrControl|AttrTransactional))
	binary.BigEndian.PutUint64(b[OffFirstTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[OffMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[OffProducerID:], uint64(producerID))
	binary.BigEndian.PutUint16(b[OffProducerEpoch:], uint16(producerEpoch))
	binary.BigEndian.PutUint32(b[OffBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[OffNumRecords:], 1)
	setCRC(b)
	return b
}

// ParseEndTxnMarker reads the marker of a control batch (the whole batch,
// header included, uncompressed as Kafka writes markers). ok is false for
// a control batch without records (compaction may leave one). An error
// (wrapping ErrCorruptBatch) says what is malformed: a compressed control
// batch, a record that does not parse, or a control type that is not a
// transaction marker.
func ParseEndTxnMarker(batch []byte) (m EndTxnMarker, ok bool, err error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return m, false, err
	}
	if !h.IsControl() {
		return m, false, fmt.Errorf("%w: batch at offset %d is not a control batch", ErrCorruptBatch, h.BaseOffset)
	}
	if h.Codec() != 0 {
		return m, false, fmt.Errorf("%w: control batch at offset %d is compressed (codec %d)", ErrCorruptBatch, h.BaseOffset, h.Codec())
	}
	if h.NumRecords == 0 {
		return m, false, nil
	}
	end := min(int64(len(batch)), h.Size())
	r := kbin.Reader{Src: batch[BatchHeaderSize:end]}
	n := r.Varint()
	body := r.Span(int(n))
	if r.Complete() != nil {
		return m, false, fmt.Errorf("%w: control batch at offset %d: record length %d does not fit", ErrCorruptBatch, h.BaseOffset, n)
	}
	rr := kbin.Reader{Src: body}
	rr.Int8()    // attributes
	rr.Varlong() // timestamp delta
	rr.Varint()  // offset delta
	key := rr.Span(int(rr.Varint()))
	val := rr.Span(int(rr.Varint()))
	if rr.Complete() != nil || len(key) < 4 || len(val) < 6 {
		return m, false, fmt.Errorf("%w: control batch at offset %d: record with a %d-byte key and %d-byte value (want 4 and 6)",
			ErrCorruptBatch, h.BaseOffset, len(key), len(val))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return m, false, fmt.Errorf("%w: control batch at offset %d: control key version %d", ErrCorruptBatch, h.BaseOffset, v)
	}
	switch typ := int16(binary.BigEndian.Uint16(key[2:])); typ {
	case ControlAbort, ControlCommit:
		m.Commit = typ == ControlCommit
	default:
		return m, false, fmt.Errorf("%w: control batch at offset %d: control type %d is not a transaction marker", ErrCorruptBatch, h.BaseOffset, typ)
	}
	if v := int16(binary.BigEndian.Uint16(val)); v < 0 {
		return m, false, fmt.Errorf("%w: control batch at offset %d: marker version %d", ErrCorruptBatch, h.BaseOffset, v)
	}
	m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(val[2:]))
	return m, true, nil
}
