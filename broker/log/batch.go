package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Record batch v2 layout (big-endian), 61-byte header then records. This
// is weir's one definition of it: broker/kafka (Produce validation) and
// broker/txn use these names.
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
	BatchHeaderSize    = 61
	OffLength          = 8
	OffEpoch           = 12
	OffMagic           = 16
	OffCRC             = 17
	OffAttributes      = 21
	OffLastOffsetDelta = 23
	OffFirstTimestamp  = 27
	OffMaxTimestamp    = 35
	OffProducerID      = 43
	OffProducerEpoch   = 51
	OffBaseSequence    = 53
	OffNumRecords      = 57
	// LengthFieldEnd is the size of baseOffset+length: a batch occupies
	// LengthFieldEnd+Length bytes. The Off names are the byte offsets of
	// the header's fields.
	LengthFieldEnd = 12
	// maxBatchLength bounds the length field so a corrupt header cannot make
	// a reader allocate gigabytes.
	maxBatchLength = 1<<30 - LengthFieldEnd
)

// Attribute bits (AttrCodecMask selects a Codec constant).
const (
	AttrCodecMask     = 0x07
	AttrLogAppendTime = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
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
func (h BatchHeader) Size() int64 { return LengthFieldEnd + int64(h.Length) }

// Codec is the compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
func (h BatchHeader) Codec() int8 { return int8(h.Attributes & AttrCodecMask) }

// IsControl reports a control batch (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&AttrControl != 0 }

// IsTransactional reports a transactional batch.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// ReadBatchHeader decodes the 61-byte header at the start of b without
// checking it; b must hold BatchHeaderSize bytes (ParseBatchHeader checks).
func ReadBatchHeader(b []byte) BatchHeader {
	_ = b[BatchHeaderSize-1]
	return BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[0:])),
		Length:               int32(binary.BigEndian.Uint32(b[OffLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[OffEpoch:])),
		Magic:                int8(b[OffMagic]),
		CRC:                  binary.BigEndian.Uint32(b[OffCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[OffAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[OffLastOffsetDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[OffFirstTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[OffMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[OffProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[OffProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[OffBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[OffNumRecords:])),
	}
}

// ParseBatchHeader parses and sanity-checks the 61-byte header at the start of
// b. It returns an error wrapping ErrCorruptBatch (never panics) when b is
// short or the header is impossible. It does not check the CRC.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, need a %d-byte header", ErrCorruptBatch, len(b), BatchHeaderSize)
	}
	h := ReadBatchHeader(b)
	switch {
	case h.Magic != 2:
		return h, fmt.Errorf("%w: magic %d, want 2", ErrCorruptBatch, h.Magic)
	case h.Length < BatchHeaderSize-LengthFieldEnd || h.Length > maxBatchLength:
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
func batchCRC(batch []byte) uint32 { return crc32.Checksum(batch[OffAttributes:], castagnoli) }

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
	binary.BigEndian.PutUint32(batch[OffCRC:], batchCRC(batch))
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
