package kafka

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"

	"weir/broker/log"
)

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
func validateBatches(b []byte, lim *produceLimits, fn func(log.BatchHeader)) *produceError {
	if len(b) == 0 {
		return perr(kerr.CorruptMessage, "no record batch")
	}
	for len(b) > 0 {
		if len(b) < log.BatchHeaderSize {
			return perr(kerr.CorruptMessage, "truncated record batch: %d bytes, header needs %d", len(b), log.BatchHeaderSize)
		}
		if magic := int8(b[log.OffMagic]); magic != 2 {
			return perr(kerr.CorruptMessage, "record batch magic %d: only v2 (magic 2) batches are accepted", magic)
		}
		length := int32(binary.BigEndian.Uint32(b[log.OffLength:]))
		size := log.LengthFieldEnd + int64(length)
		if length < log.BatchHeaderSize-log.LengthFieldEnd || size > int64(len(b)) {
			return perr(kerr.CorruptMessage, "record batch length %d does not match the %d bytes sent", length, len(b))
		}
		if size > int64(lim.maxMessageBytes) {
			return perr(kerr.MessageTooLarge, "record batch of %d bytes exceeds max.message.bytes %d", size, lim.maxMessageBytes)
		}
		v := log.ReadBatchHeader(b)
		if v.Attributes&log.AttrControl != 0 {
			return perr(kerr.InvalidRecord, "clients may not send control batches")
		}
		switch c := v.Codec(); c {
		case log.CodecNone, log.CodecGzip, log.CodecSnappy, log.CodecLZ4:
		case log.CodecZstd:
			if lim.version < 7 {
				return perr(kerr.UnsupportedCompressionType, "zstd needs Produce v7+, got v%d", lim.version)
			}
		default:
			return perr(kerr.CorruptMessage, "unknown compression codec %d", c)
		}
		if v.NumRecords <= 0 || v.LastOffsetDelta != v.NumRecords-1 {
			return perr(kerr.InvalidRecord, "record batch has %d records but lastOffsetDelta %d", v.NumRecords, v.LastOffsetDelta)
		}
		if v.ProducerID < 0 && v.Attributes&log.AttrTransactional != 0 {
			return perr(kerr.InvalidRecord, "transactional batch without a producer id")
		}
		payload := b[log.BatchHeaderSize:size]
		if v.Codec() == log.CodecNone {
			if pe := checkRecords(payload, v.NumRecords); pe != nil {
				return pe
			}
		}
		if !lim.logAppendTime {
			if lim.afterMaxMs >= 0 && v.MaxTimestamp-lim.nowMs > lim.afterMaxMs {
				return perr(kerr.InvalidTimestamp, "timestamp %d is more than message.timestamp.after.max.ms (%d) after the broker's time %d", v.MaxTimestamp, lim.afterMaxMs, lim.nowMs)
			}
			if lim.beforeMaxMs >= 0 && v.FirstTimestamp >= 0 && lim.nowMs-v.FirstTimestamp > lim.beforeMaxMs {
				return perr(kerr.InvalidTimestamp, "timestamp %d is more than message.timestamp.before.max.ms (%d) before the broker's time %d", v.FirstTimestamp, lim.beforeMaxMs, lim.nowMs)
			}
		}
		fn(v)
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
