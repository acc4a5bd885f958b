package kafka

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Record batch v2 header layout (see kafka-compat.md).
const (
	batchHeaderSize    = 61
	offLength          = 8
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

	attrCodecMask     = 0x07
	attrTransactional = 0x10
	attrControl       = 0x20

	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

// batchView is what Produce needs of one batch header.
type batchView struct {
	size            int
	attributes      int16
	lastOffsetDelta int32
	firstTimestamp  int64
	maxTimestamp    int64
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
	numRecords      int32
}

func (b *batchView) codec() int8 { return int8(b.attributes & attrCodecMask) }

// produceError is a Kafka error for one partition of a Produce request,
// with a message for v8+ responses.
type produceError struct {
	err *kerr.Error
	msg string
}

func perr(e *kerr.Error, format string, args ...any) *produceError {
	return &produceError{err: e, msg: fmt.Sprintf(format, args...)}
}

// produceLimits are the per-topic limits a Produce request is checked
// against.
type produceLimits struct {
	version         int16 // Produce request version
	maxMessageBytes int32 // max.message.bytes
	nowMs           int64
	beforeMaxMs     int64 // message.timestamp.before.max.ms
	afterMaxMs      int64 // message.timestamp.after.max.ms
	logAppendTime   bool
}

// validateBatches walks the concatenated record batches of one partition
// and checks them the way Kafka's LogValidator does, without copying or
// allocating: header fields, sizes, codec, record counts, timestamps, and
// for uncompressed batches the record framing. The CRC is checked by the
// log's Append. fn is called for each valid batch.
func validateBatches(b []byte, lim *produceLimits, fn func(*batchView)) *produceError {
	if len(b) == 0 {
		return perr(kerr.CorruptMessage, "no record batch")
	}
	for len(b) > 0 {
		if len(b) < batchHeaderSize {
			return perr(kerr.CorruptMessage, "truncated record batch: %d bytes, header needs %d", len(b), batchHeaderSize)
		}
		if magic := int8(b[offMagic]); magic != 2 {
			return perr(kerr.CorruptMessage, "record batch magic %d: only v2 (magic 2) batches are accepted", magic)
		}
		length := int32(binary.BigEndian.Uint32(b[offLength:]))
		size := int64(length) + 12
		if length < batchHeaderSize-12 || size > int64(len(b)) {
			return perr(kerr.CorruptMessage, "record batch length %d does not match the %d bytes sent", length, len(b))
		}
		if size > int64(lim.maxMessageBytes) {
			return perr(kerr.MessageTooLarge, "record batch of %d bytes exceeds max.message.bytes %d", size, lim.maxMessageBytes)
		}
		v := batchView{
			size:            int(size),
			attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
			lastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
			firstTimestamp:  int64(binary.BigEndian.Uint64(b[offFirstTimestamp:])),
			maxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
			producerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
			producerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
			baseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
			numRecords:      int32(binary.BigEndian.Uint32(b[offNumRecords:])),
		}
		if v.attributes&attrControl != 0 {
			return perr(kerr.InvalidRecord, "clients may not send control batches")
		}
		switch c := v.codec(); c {
		case codecNone, codecGzip, codecSnappy, codecLZ4:
		case codecZstd:
			if lim.version < 7 {
				return perr(kerr.UnsupportedCompressionType, "zstd needs Produce v7+, got v%d", lim.version)
			}
		default:
			return perr(kerr.CorruptMessage, "unknown compression codec %d", c)
		}
		if v.numRecords <= 0 || v.lastOffsetDelta != v.numRecords-1 {
			return perr(kerr.InvalidRecord, "record batch has %d records but lastOffsetDelta %d", v.numRecords, v.lastOffsetDelta)
		}
		if v.producerID < 0 && v.attributes&attrTransactional != 0 {
			return perr(kerr.InvalidRecord, "transactional batch without a producer id")
		}
		payload := b[batchHeaderSize:size]
		if v.codec() == codecNone {
			if pe := checkRecords(payload, v.numRecords); pe != nil {
				return pe
			}
		}
		if !lim.logAppendTime {
			if lim.afterMaxMs >= 0 && v.maxTimestamp-lim.nowMs > lim.afterMaxMs {
				return perr(kerr.InvalidTimestamp, "timestamp %d is more than message.timestamp.after.max.ms (%d) after the broker's time %d", v.maxTimestamp, lim.afterMaxMs, lim.nowMs)
			}
			if lim.beforeMaxMs >= 0 && v.firstTimestamp >= 0 && lim.nowMs-v.firstTimestamp > lim.beforeMaxMs {
				return perr(kerr.InvalidTimestamp, "timestamp %d is more than message.timestamp.before.max.ms (%d) before the broker's time %d", v.firstTimestamp, lim.beforeMaxMs, lim.nowMs)
			}
		}
		fn(&v)
		b = b[size:]
	}
	return nil
}

// checkRecords walks the records of an uncompressed batch: each is a
// varint length and that many bytes, starting with attributes (int8), a
// timestamp delta (varlong) and an offset delta (varint) that must count
// 0, 1, 2, ...; there must be exactly n of them filling the payload.
func checkRecords(p []byte, n int32) *produceError {
	for i := int32(0); i < n; i++ {
		l, k := kbin.Varint(p)
		if k <= 0 || l < 3 || int64(l) > int64(len(p)-k) {
			return perr(kerr.CorruptMessage, "record %d: bad length", i)
		}
		rec := p[k : k+int(l)]
		p = p[k+int(l):]
		rec = rec[1:] // attributes
		_, k = kbin.Varlong(rec)
		if k <= 0 {
			return perr(kerr.CorruptMessage, "record %d: bad timestamp delta", i)
		}
		od, k2 := kbin.Varint(rec[k:])
		if k2 <= 0 {
			return perr(kerr.CorruptMessage, "record %d: bad offset delta", i)
		}
		if od != i {
			return perr(kerr.InvalidRecord, "record %d has offset delta %d: inner offsets must be 0, 1, 2, ...", i, od)
		}
	}
	if len(p) != 0 {
		return perr(kerr.CorruptMessage, "%d bytes after the batch's %d records", len(p), n)
	}
	return nil
}
