package kafka

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"
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
	b := make([]byte, batchHeaderSize, batchHeaderSize+len(recs))
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[offLength:], uint32(batchHeaderSize-12+len(recs)))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff) // leader epoch -1
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(codec))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(len(values)-1))
	binary.BigEndian.PutUint64(b[offFirstTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offProducerID:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[offProducerEpoch:], 0xffff)
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offNumRecords:], uint32(len(values)))
	b = append(b, recs...)
	fixCRC(b)
	return b
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
}
