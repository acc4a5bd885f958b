package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The Confluent wire format of a record value or key:
//
//	+------+----------------------+------------------------+
//	| 0x00 | schema id (4 bytes,  | Avro binary of the     |
//	| magic| big-endian, signed)  | datum (writer schema)  |
//	+------+----------------------+------------------------+
const (
	// Magic is the first byte of every Confluent-framed datum.
	Magic byte = 0
	// HeaderSize is the size of the magic byte plus the schema id.
	HeaderSize = 5
)

// ErrMalformed is wrapped by every error about bytes that are not a valid
// Confluent-framed datum (short, bad magic byte, bad Avro binary).
var ErrMalformed = errors.New("malformed Avro record")

// AppendHeader appends the magic byte and id to b.
func AppendHeader(b []byte, id int32) []byte {
	return binary.BigEndian.AppendUint32(append(b, Magic), uint32(id))
}

// ParseHeader splits a framed datum into its schema id and Avro payload
// (which aliases b).
func ParseHeader(b []byte) (id int32, payload []byte, err error) {
	if len(b) < HeaderSize {
		return 0, nil, fmt.Errorf("%w: %d bytes is shorter than the 5-byte header (magic byte 0 + 4-byte schema id)", ErrMalformed, len(b))
	}
	if b[0] != Magic {
		return 0, nil, fmt.Errorf("%w: first byte is 0x%02x, want magic byte 0x00 (is the value Confluent-framed Avro?)", ErrMalformed, b[0])
	}
	id = int32(binary.BigEndian.Uint32(b[1:5]))
	if id < 0 {
		return 0, nil, fmt.Errorf("%w: negative schema id %d", ErrMalformed, id)
	}
	return id, b[HeaderSize:], nil
}

// Rabin returns the CRC-64-AVRO fingerprint of b (the Avro spec's
// schema fingerprint, computed over a Parsing Canonical Form).
func Rabin(b []byte) uint64 {
	fp := rabinEmpty
	for _, c := range b {
		fp = (fp >> 8) ^ rabinTable[byte(fp)^c]
	}
	return fp
}

const rabinEmpty uint64 = 0xc15d213aa4d7a795

var rabinTable = func() (t [256]uint64) {
	for i := range t {
		fp := uint64(i)
		for j := 0; j < 8; j++ {
			fp = (fp >> 1) ^ (rabinEmpty & -(fp & 1))
		}
		t[i] = fp
	}
	return t
}()
