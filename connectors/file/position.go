package file

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
)

// File identity and source positions.
//
// A file of at least fingerprint_bytes bytes is identified by the FNV-64a
// hash of its first fingerprint_bytes bytes: key "f<16 hex digits>". A
// shorter file is identified by device and inode, key "i<dev>:<ino>",
// until it grows long enough for a fingerprint; its positions also carry
// the length and hash of the file's first bytes, so a reused inode (other
// content) is not mistaken for the file, and a grown file finds the
// position it had under its inode key.
//
// Position bytes (the runtime stores them and returns them on restart):
//
//	fingerprint key: uvarint(offset)
//	inode key:       uvarint(offset) uvarint(headLen) uint64be(FNV-64a of the first headLen bytes)
//
// offset is the byte offset just after the last line of the event.

// Sentinel errors of the file source.
var (
	// ErrBadPosition is wrapped when a stored position does not decode.
	ErrBadPosition = errors.New("malformed file position")
	// ErrBadGlob is wrapped when an include or exclude pattern is invalid.
	ErrBadGlob = errors.New("bad glob pattern")
)

func errBadGlob(p string) error { return fmt.Errorf("%w %q", ErrBadGlob, p) }

func hashBytes(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

func fpKey(head []byte) string {
	return "f" + fmt.Sprintf("%016x", hashBytes(head))
}

func inoKey(dev, ino uint64) string {
	return "i" + strconv.FormatUint(dev, 10) + ":" + strconv.FormatUint(ino, 10)
}

type position struct {
	offset   int64
	headLen  int
	headHash uint64
}

func appendPosition(b []byte, small bool, p position) []byte {
	b = binary.AppendUvarint(b, uint64(p.offset))
	if !small {
		return b
	}
	b = binary.AppendUvarint(b, uint64(p.headLen))
	return binary.BigEndian.AppendUint64(b, p.headHash)
}

func parsePosition(key string, b []byte) (position, error) {
	var p position
	off, n := binary.Uvarint(b)
	if n <= 0 || off > 1<<62 {
		return p, fmt.Errorf("%w for %s: bad offset", ErrBadPosition, key)
	}
	p.offset = int64(off)
	if len(key) > 0 && key[0] == 'f' {
		return p, nil
	}
	b = b[n:]
	hl, n := binary.Uvarint(b)
	if n <= 0 || len(b)-n != 8 || hl > 1<<30 {
		return p, fmt.Errorf("%w for %s: bad head", ErrBadPosition, key)
	}
	p.headLen = int(hl)
	p.headHash = binary.BigEndian.Uint64(b[n:])
	return p, nil
}
