package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Record batch v2 layout (big-endian), 61-byte header then records:
//
//	off  size field
//	  0     8 baseOffset            (stamped by the log)
//	  8     4 length                (bytes after this field)
//	 12     4 partitionLeaderEpoch  (stamped by the log)
//	 16     1 magic (2)
//	 17     4 crc  CRC32C of bytes [21, end)
//	 21     2 attributes
//	 23     4 lastOffsetDelta
//	 27     8 firstTimestamp
//	 35     8 maxTimestamp
//	 43     8 producerId
//	 51     2 producerEpoch
//	 53     4 baseSequence
//	 57     4 numRecords
//	 61       records (compressed as a whole if the codec bits are set)
const (
	batchHeaderSize    = 61
	offLength          = 8
	offEpoch           = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57
	// lengthFieldEnd is the size of baseOffset+length: a batch occupies
	// lengthFieldEnd+Length bytes.
	lengthFieldEnd = 12
	// maxBatchLength bounds the length field so a corrupt header cannot make
	// a reader allocate gigabytes.
	maxBatchLength = 1<<30 - lengthFieldEnd
)

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the parsed 61-byte RecordBatch v2 header.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// LastOffset is the offset of the last record the batch covers.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Size is the number of bytes the whole batch occupies.
func (h BatchHeader) Size() int64 { return lengthFieldEnd + int64(h.Length) }

// Codec is the compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
func (h BatchHeader) Codec() int8 { return int8(h.Attributes & attrCodecMask) }

// IsControl reports a control batch (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// IsTransactional reports a transactional batch.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// ParseBatchHeader parses and sanity-checks the 61-byte header at the start of
// b. It returns an error wrapping ErrCorruptBatch (never panics) when b is
// short or the header is impossible. It does not check the CRC.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < batchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, need a %d-byte header", ErrCorruptBatch, len(b), batchHeaderSize)
	}
	h := BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[0:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offNumRecords:])),
	}
	switch {
	case h.Magic != 2:
		return h, fmt.Errorf("%w: magic %d, want 2", ErrCorruptBatch, h.Magic)
	case h.Length < batchHeaderSize-lengthFieldEnd || h.Length > maxBatchLength:
		return h, fmt.Errorf("%w: length %d out of range", ErrCorruptBatch, h.Length)
	case h.BaseOffset < 0:
		return h, fmt.Errorf("%w: negative base offset %d", ErrCorruptBatch, h.BaseOffset)
	case h.LastOffsetDelta < 0:
		return h, fmt.Errorf("%w: negative lastOffsetDelta %d", ErrCorruptBatch, h.LastOffsetDelta)
	case h.NumRecords < 0 || (h.NumRecords > 0 && h.LastOffsetDelta < h.NumRecords-1):
		return h, fmt.Errorf("%w: %d records but lastOffsetDelta %d", ErrCorruptBatch, h.NumRecords, h.LastOffsetDelta)
	}
	return h, nil
}

// batchCRC computes the CRC32C a batch's header should carry.
func batchCRC(batch []byte) uint32 { return crc32.Checksum(batch[offAttributes:], castagnoli) }

// ParseBatch parses the header of the batch at the start of b, checks that b
// holds the whole batch and that its CRC32C matches, and returns the header.
// b may hold more bytes after the batch.
func ParseBatch(b []byte) (BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, err
	}
	if int64(len(b)) < h.Size() {
		return h, fmt.Errorf("%w: batch at offset %d is %d bytes, only %d present", ErrCorruptBatch, h.BaseOffset, h.Size(), len(b))
	}
	if got := batchCRC(b[:h.Size()]); got != h.CRC {
		return h, fmt.Errorf("%w: batch at offset %d: crc32c %08x, header says %08x", ErrCorruptBatch, h.BaseOffset, got, h.CRC)
	}
	return h, nil
}

// setCRC recomputes and stores the CRC of a whole batch.
func setCRC(batch []byte) {
	binary.BigEndian.PutUint32(batch[offCRC:], batchCRC(batch))
}

// splitBatches validates that b is a sequence of whole, CRC-valid batches
// and returns their headers.
func splitBatches(b []byte) ([]BatchHeader, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: no batches", ErrCorruptBatch)
	}
	var hs []BatchHeader
	for pos := 0; pos < len(b); {
		h, err := ParseBatch(b[pos:])
		if err != nil {
			return nil, fmt.Errorf("batch %d at byte %d: %w", len(hs), pos, err)
		}
		hs = append(hs, h)
		pos += int(h.Size())
	}
	return hs, nil
}
