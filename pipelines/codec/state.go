package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"weir/pipelines/expr"
)

// The state of a declarative stream (aggregates in its stores and
// changelogs, records on its repartition topics) is kept in a small
// tagged binary form of the native value domain, so every value reads
// back with its type: a timestamp stays a timestamp, an integer an
// integer. These topics are internal to the stream; its output topic is
// JSON or Avro like any other.
//
//	value  = tag byte, then
//	  0 null | 1 false | 2 true
//	  3 string: uvarint length, bytes
//	  4 int64: zigzag varint
//	  5 float64: 8 bytes big-endian IEEE 754
//	  6 timestamp: zigzag varint of Unix nanoseconds (UTC)
//	  7 bytes: uvarint length, bytes
//	  8 list: uvarint count, values
//	  9 object: uvarint count, (uvarint key length, key, value)...

const (
	tagNull = iota
	tagFalse
	tagTrue
	tagString
	tagInt
	tagFloat
	tagTime
	tagBytes
	tagList
	tagObject
)

// ErrStateValue reports a malformed stored value.
var ErrStateValue = errors.New("malformed stream state value")

// maxStateDepth bounds nesting when decoding.
const maxStateDepth = 64

// AppendState appends the tagged encoding of v.
func AppendState(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, tagNull)
	case bool:
		if x {
			return append(b, tagTrue)
		}
		return append(b, tagFalse)
	case string:
		b = append(b, tagString)
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...)
	case int64:
		b = append(b, tagInt)
		return binary.AppendVarint(b, x)
	case float64:
		b = append(b, tagFloat)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(x))
	case time.Time:
		b = append(b, tagTime)
		return binary.AppendVarint(b, x.UnixNano())
	case []byte:
		b = append(b, tagBytes)
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...)
	case []any:
		b = append(b, tagList)
		b = binary.AppendUvarint(b, uint64(len(x)))
		for _, e := range x {
			b = AppendState(b, e)
		}
		return b
	case *expr.Object:
		if x == nil {
			return append(b, tagNull)
		}
		b = append(b, tagObject)
		b = binary.AppendUvarint(b, uint64(len(x.Keys)))
		for i, k := range x.Keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			b = AppendState(b, x.Vals[i])
		}
		return b
	}
	return AppendState(b, fmt.Sprint(v))
}

// readState decodes one value from b, returning the rest.
func readState(b []byte, depth int) (any, []byte, error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: truncated", ErrStateValue)
	}
	if depth > maxStateDepth {
		return nil, nil, fmt.Errorf("%w: nested deeper than %d", ErrStateValue, maxStateDepth)
	}
	tag, b := b[0], b[1:]
	lenBytes := func() ([]byte, []byte, error) {
		n, m := binary.Uvarint(b)
		if m <= 0 || n > uint64(len(b)-m) {
			return nil, nil, fmt.Errorf("%w: bad length", ErrStateValue)
		}
		return b[m : m+int(n)], b[m+int(n):], nil
	}
	switch tag {
	case tagNull:
		return nil, b, nil
	case tagFalse:
		return false, b, nil
	case tagTrue:
		return true, b, nil
	case tagString:
		s, rest, err := lenBytes()
		return string(s), rest, err
	case tagBytes:
		s, rest, err := lenBytes()
		return append([]byte(nil), s...), rest, err
	case tagInt, tagTime:
		n, m := binary.Varint(b)
		if m <= 0 {
			return nil, nil, fmt.Errorf("%w: bad integer", ErrStateValue)
		}
		if tag == tagTime {
			return time.Unix(0, n).UTC(), b[m:], nil
		}
		return n, b[m:], nil
	case tagFloat:
		if len(b) < 8 {
			return nil, nil, fmt.Errorf("%w: truncated float", ErrStateValue)
		}
		return math.Float64frombits(binary.BigEndian.Uint64(b)), b[8:], nil
	case tagList, tagObject:
		n, m := binary.Uvarint(b)
		if m <= 0 || n > uint64(len(b)) {
			return nil, nil, fmt.Errorf("%w: bad count", ErrStateValue)
		}
		b = b[m:]
		if tag == tagList {
			out := make([]any, 0, n)
			for range n {
				v, rest, err := readState(b, depth+1)
				if err != nil {
					return nil, nil, err
				}
				out, b = append(out, v), rest
			}
			return out, b, nil
		}
		o := &expr.Object{Keys: make([]string, 0, n), Vals: make([]any, 0, n)}
		for range n {
			k, rest, err := func() ([]byte, []byte, error) {
				kn, km := binary.Uvarint(b)
				if km <= 0 || kn > uint64(len(b)-km) {
					return nil, nil, fmt.Errorf("%w: bad key length", ErrStateValue)
				}
				return b[km : km+int(kn)], b[km+int(kn):], nil
			}()
			if err != nil {
				return nil, nil, err
			}
			v, rest, err := readState(rest, depth+1)
			if err != nil {
				return nil, nil, err
			}
			o.Keys, o.Vals, b = append(o.Keys, string(k)), append(o.Vals, v), rest
		}
		return o, b, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown tag %d", ErrStateValue, tag)
}

// DecodeState decodes a whole stored value.
func DecodeState(b []byte) (any, error) {
	v, rest, err := readState(b, 0)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrStateValue, len(rest))
	}
	return v, nil
}
