package kafka

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"

	"weir/broker/log"
)

// buildBatch encodes an uncompressed record batch v2 holding values (no
// keys, no headers) by hand, with a correct CRC; codec sets the attribute
// bits only (the payload stays uncompressed).
func buildBatch(values [][]byte, codec int16, ts int64) []byte {
	var recs []byte
	for i, v := range values {
		var body []byte
		body = append(body, 0)                   // attributes
		body = kbin.AppendVarlong(body, 0)       // timestamp delta
		body = kbin.AppendVarint(body, int32(i)) // offset delta
		body = kbin.AppendVarint(body, -1)       // key: null
		body = kbin.AppendVarint(body, int32(len(v)))
		body = append(body, v...)
		body = kbin.AppendVarint(body, 0) // headers
		recs = kbin.AppendVarint(recs, int32(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, log.BatchHeaderSize, log.BatchHeaderSize+len(recs))
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[log.OffLength:], uint32(log.BatchHeaderSize-log.LengthFieldEnd+len(recs)))
	binary.BigEndian.PutUint32(b[log.OffEpoch:], 0xffffffff) // leader epoch -1
	b[log.OffMagic] = 2
	binary.BigEndian.PutUint16(b[log.OffAttributes:], uint16(codec))
	binary.BigEndian.PutUint32(b[log.OffLastOffsetDelta:], uint32(len(values)-1))
	binary.BigEndian.PutUint64(b[log.OffFirstTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[log.OffMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[log.OffProducerID:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[log.OffProducerEpoch:], 0xffff)
	binary.BigEndian.PutUint32(b[log.OffBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[log.OffNumRecords:], uint32(len(values)))
	b = append(b, recs...)
	fixCRC(b)
	return b
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[log.OffCRC:], crc32.Checksum(b[log.OffAttributes:], crc32.MakeTable(crc32.Castagnoli)))
}
