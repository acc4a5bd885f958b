package schemas

import (
	"encoding/binary"
	"fmt"
	"math"
)

// reader reads Avro binary with a sticky error: after the first failure
// every read returns a zero value and err stays set.
type reader struct {
	b   []byte
	pos int
	err error
	// str is b as one string, made on the first string read of a small
	// datum so its strings share one allocation.
	str    string
	hasStr bool
	// budget bounds the items of zero-byte types (null, empty records) a
	// datum may claim, so a few bytes cannot ask for billions of items.
	budget int
}

const zeroSizeItemBudget = 1 << 20

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: at byte %d: %s", ErrMalformed, r.pos, fmt.Sprintf(format, args...))
	}
}

func (r *reader) long() int64 {
	var v uint64
	var shift uint
	for i := 0; i < 10; i++ {
		if r.pos >= len(r.b) {
			r.fail("truncated varint")
			return 0
		}
		c := r.b[r.pos]
		r.pos++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if i == 9 && c > 1 {
				r.fail("varint overflows 64 bits")
				return 0
			}
			return int64(v>>1) ^ -int64(v&1)
		}
		shift += 7
	}
	r.fail("varint longer than 10 bytes")
	return 0
}

func (r *reader) int() int32 {
	v := r.long()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail("int %d out of 32-bit range", v)
		return 0
	}
	return int32(v)
}

func (r *reader) boolean() bool {
	if r.pos >= len(r.b) {
		r.fail("truncated boolean")
		return false
	}
	c := r.b[r.pos]
	r.pos++
	if c > 1 {
		r.fail("boolean byte 0x%02x is neither 0 nor 1", c)
	}
	return c == 1
}

func (r *reader) float() float32 {
	if len(r.b)-r.pos < 4 {
		r.fail("truncated float")
		return 0
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(r.b[r.pos:]))
	r.pos += 4
	return v
}

func (r *reader) double() float64 {
	if len(r.b)-r.pos < 8 {
		r.fail("truncated double")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.pos:]))
	r.pos += 8
	return v
}

// next returns the next n bytes (aliasing the input).
func (r *reader) next(n int) []byte {
	if n < 0 || len(r.b)-r.pos < n {
		r.fail("length %d exceeds the %d bytes left", n, len(r.b)-r.pos)
		return nil
	}
	b := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return b
}

// lenPrefixed returns the bytes of a bytes or string value (aliasing the
// input).
func (r *reader) lenPrefixed() []byte {
	n := r.long()
	if r.err != nil {
		return nil
	}
	if n < 0 || n > int64(len(r.b)-r.pos) {
		r.fail("length %d exceeds the %d bytes left", n, len(r.b)-r.pos)
		return nil
	}
	return r.next(int(n))
}

// sharedStringMax is the largest datum whose strings share one copy of
// the datum (bigger ones copy each string, so a small string does not pin
// a large datum).
const sharedStringMax = 2048

func (r *reader) string() string {
	b := r.lenPrefixed()
	if r.err != nil {
		return ""
	}
	if len(r.b) > sharedStringMax || len(b) == 0 {
		return string(b)
	}
	if !r.hasStr {
		r.str, r.hasStr = string(r.b), true
	}
	return r.str[r.pos-len(b) : r.pos]
}

func (r *reader) bytes() []byte {
	b := r.lenPrefixed()
	if r.err != nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// blockCount reads an array or map block header: the item count (0 ends
// the value); a negative count is followed by the block's byte size.
func (r *reader) blockCount(minItemSize int) int {
	n := r.long()
	if n < 0 {
		if n == math.MinInt64 {
			r.fail("block count overflows")
			return 0
		}
		n = -n
		r.long() // block size in bytes
	}
	if r.err != nil {
		return 0
	}
	left := int64(len(r.b) - r.pos)
	if minItemSize > 0 {
		if n > left/int64(minItemSize) {
			r.fail("block of %d items exceeds the %d bytes left", n, left)
			return 0
		}
	} else {
		if n > int64(r.budget) {
			r.fail("block of %d zero-size items exceeds the limit of %d", n, zeroSizeItemBudget)
			return 0
		}
		r.budget -= int(n)
	}
	return int(n)
}

// appendLong appends the zig-zag varint of v.
func appendLong(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func appendFloat(b []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

func appendDouble(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func appendBytes(b []byte, v []byte) []byte {
	return append(appendLong(b, int64(len(v))), v...)
}

func appendString(b []byte, v string) []byte {
	return append(appendLong(b, int64(len(v))), v...)
}

// minSize is the smallest binary encoding of a value of n (0 when a value
// can be empty), used to bound block counts.
func minSize(n *Node, depth int) int {
	if depth > 32 {
		return 0
	}
	switch n.Kind {
	case Null:
		return 0
	case Float:
		return 4
	case Double:
		return 8
	case Fixed:
		return n.Size
	case Record:
		s := 0
		for _, f := range n.Fields {
			s += minSize(f.Type, depth+1)
		}
		return s
	}
	return 1
}
