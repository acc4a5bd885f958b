package txn

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Snapshot file format (big endian), one file per snapshot, named
// "<end offset, 20 digits>.snapshot" in the partition directory:
//
//	+---------+---------+-----------+------------+-----------+--------------+
//	| "WPST"  | version | crc32c    | end offset | producers | producer ... |
//	| 4 bytes | u16 = 2 | u32       | i64        | u32       |              |
//	+---------+---------+-----------+------------+-----------+--------------+
//	producer: id i64 | epoch i16 | last seen ms i64 |
//	          (v2) txn first offset i64 (-1: none) | coordinator epoch i32 |
//	               last timestamp i64 |
//	          batches u8 | batch ...
//	batch:    first seq i32 | last seq i32 | first offset i64 |
//	          last offset i64 | timestamp i64 | flags u8 (1 = LogAppendTime)
//
// Version 1 (weir before transactions) lacks the three v2 producer fields;
// it is still read (no transaction ongoing, epochs and timestamps -1).
// The CRC-32C covers everything after the crc field. The end offset is the
// log end offset the state reflects: replaying the log from there to its end
// reproduces the live state.

const (
	snapshotMagic     = "WPST"
	snapshotVersion   = 2
	snapshotHeaderLen = 4 + 2 + 4 + 8 + 4
	producerLenV1     = 8 + 2 + 8 + 1
	producerTxnLen    = 8 + 4 + 8 // the v2 fields
	producerLen       = producerLenV1 + producerTxnLen
	batchMetaLen      = 4 + 4 + 8 + 8 + 8 + 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeSnapshot serializes the state as of log end offset endOffset.
func (s *State) EncodeSnapshot(endOffset int64) []byte {
	size := snapshotHeaderLen
	for _, p := range s.producers {
		size += producerLen + len(p.Batches)*batchMetaLen
	}
	b := make([]byte, 0, size)
	b = append(b, snapshotMagic...)
	b = binary.BigEndian.AppendUint16(b, snapshotVersion)
	b = append(b, 0, 0, 0, 0) // crc, filled below
	b = binary.BigEndian.AppendUint64(b, uint64(endOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.producers)))
	for _, p := range s.Producers() { // sorted: deterministic bytes
		b = binary.BigEndian.AppendUint64(b, uint64(p.ID))
		b = binary.BigEndian.AppendUint16(b, uint16(p.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(p.LastSeenMs))
		b = binary.BigEndian.AppendUint64(b, uint64(p.TxnFirstOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(p.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(p.LastTimestamp))
		b = append(b, byte(len(p.Batches)))
		for _, m := range p.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(m.FirstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(m.LastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(m.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.Timestamp))
			var flags byte
			if m.LogAppendTime {
				flags |= 1
			}
			b = append(b, flags)
		}
	}
	binary.BigEndian.PutUint32(b[6:10], crc32.Checksum(b[10:], castagnoli))
	return b
}

// DecodeSnapshot parses a snapshot into a new State and returns the end
// offset it reflects. It never panics; any inconsistency is
// ErrCorruptSnapshot (wrapped, saying what is wrong).
func DecodeSnapshot(b []byte) (*State, int64, error) {
	if len(b) < snapshotHeaderLen {
		return nil, 0, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorruptSnapshot, len(b), snapshotHeaderLen)
	}
	if string(b[:4]) != snapshotMagic {
		return nil, 0, fmt.Errorf("%w: bad magic %q", ErrCorruptSnapshot, b[:4])
	}
	version := binary.BigEndian.Uint16(b[4:6])
	if version != 1 && version != snapshotVersion {
		return nil, 0, fmt.Errorf("%w: unsupported version %d", ErrCorruptSnapshot, version)
	}
	plen := producerLen
	if version == 1 {
		plen = producerLenV1
	}
	if want, got := binary.BigEndian.Uint32(b[6:10]), crc32.Checksum(b[10:], castagnoli); want != got {
		return nil, 0, fmt.Errorf("%w: crc32c %08x, stored %08x", ErrCorruptSnapshot, got, want)
	}
	end := int64(binary.BigEndian.Uint64(b[10:18]))
	n := binary.BigEndian.Uint32(b[18:22])
	rest := b[snapshotHeaderLen:]
	if uint64(n)*uint64(plen) > uint64(len(rest)) {
		return nil, 0, fmt.Errorf("%w: %d producers do not fit in %d bytes", ErrCorruptSnapshot, n, len(rest))
	}
	s := NewState()
	prev := int64(-1)
	for i := uint32(0); i < n; i++ {
		if len(rest) < plen {
			return nil, 0, fmt.Errorf("%w: producer %d truncated", ErrCorruptSnapshot, i)
		}
		p := Producer{
			ID:               int64(binary.BigEndian.Uint64(rest[0:8])),
			Epoch:            int16(binary.BigEndian.Uint16(rest[8:10])),
			LastSeenMs:       int64(binary.BigEndian.Uint64(rest[10:18])),
			TxnFirstOffset:   -1,
			CoordinatorEpoch: -1,
			LastTimestamp:    -1,
		}
		if version >= 2 {
			p.TxnFirstOffset = int64(binary.BigEndian.Uint64(rest[18:26]))
			p.CoordinatorEpoch = int32(binary.BigEndian.Uint32(rest[26:30]))
			p.LastTimestamp = int64(binary.BigEndian.Uint64(rest[30:38]))
			if p.TxnFirstOffset < -1 {
				return nil, 0, fmt.Errorf("%w: producer %d has transaction first offset %d", ErrCorruptSnapshot, p.ID, p.TxnFirstOffset)
			}
		}
		nb := int(rest[plen-1])
		rest = rest[plen:]
		if nb > NumBatchesToRetain || len(rest) < nb*batchMetaLen {
			return nil, 0, fmt.Errorf("%w: producer %d has %d batches (at most %d, %d bytes left)",
				ErrCorruptSnapshot, p.ID, nb, NumBatchesToRetain, len(rest))
		}
		if p.ID < 0 || p.ID <= prev {
			return nil, 0, fmt.Errorf("%w: producer id %d negative or not in ascending order", ErrCorruptSnapshot, p.ID)
		}
		prev = p.ID
		p.Batches = make([]BatchMeta, nb, NumBatchesToRetain)
		for j := range p.Batches {
			if rest[32] > 1 {
				return nil, 0, fmt.Errorf("%w: producer %d batch %d has unknown flags %#x", ErrCorruptSnapshot, p.ID, j, rest[32])
			}
			p.Batches[j] = BatchMeta{
				FirstSeq:      int32(binary.BigEndian.Uint32(rest[0:4])),
				LastSeq:       int32(binary.BigEndian.Uint32(rest[4:8])),
				FirstOffset:   int64(binary.BigEndian.Uint64(rest[8:16])),
				LastOffset:    int64(binary.BigEndian.Uint64(rest[16:24])),
				Timestamp:     int64(binary.BigEndian.Uint64(rest[24:32])),
				LogAppendTime: rest[32]&1 != 0,
			}
			rest = rest[batchMetaLen:]
		}
		s.producers[p.ID] = &p
		if p.TxnFirstOffset >= 0 {
			s.ongoing[p.ID] = p.TxnFirstOffset
		}
	}
	if len(rest) != 0 {
		return nil, 0, fmt.Errorf("%w: %d trailing bytes", ErrCorruptSnapshot, len(rest))
	}
	return s, end, nil
}
