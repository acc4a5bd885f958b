package mysql

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Both paths into a record — binlog rows (go-mysql's replication decoder)
// and snapshot rows (the text protocol) — convert column values to the
// same Avro native values here, so a row reads the same whichever way it
// arrived. The tests check both paths against each other for every kind.

// value converts v, a binlog value or a text-protocol value (bytes,
// int64, uint64, float64), of column c to its Avro native form.
func (c *Column) value(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.Kind {
	case kInt, kYear:
		n, err := c.integer(v)
		return int32(n), err
	case kLong, kBit:
		return c.integer(v)
	case kUlong:
		var u uint64
		switch x := v.(type) {
		case int64: // binlog: two's complement of the unsigned value
			u = uint64(x)
		case uint64:
			u = x
		case []byte:
			p, err := strconv.ParseUint(string(x), 10, 64)
			if err != nil {
				return nil, c.bad(v)
			}
			u = p
		default:
			return nil, c.bad(v)
		}
		return decimalBytes(strconv.FormatUint(u, 10), 0)
	case kFloat:
		switch x := v.(type) {
		case float32:
			return x, nil
		case float64:
			return float32(x), nil
		case []byte:
			f, err := strconv.ParseFloat(string(x), 32)
			return float32(f), err
		}
	case kDouble:
		switch x := v.(type) {
		case float64:
			return x, nil
		case float32:
			return float64(x), nil
		case []byte:
			return strconv.ParseFloat(string(x), 64)
		}
	case kDecimal:
		switch x := v.(type) {
		case string:
			return decimalBytes(x, c.Scale)
		case []byte:
			return decimalBytes(string(x), c.Scale)
		}
	case kGeometry:
		var b []byte
		switch x := v.(type) {
		case []byte:
			b = x
		case string:
			b = []byte(x)
		default:
			return nil, c.bad(v)
		}
		s, err := geometryWKT(b)
		if err != nil {
			return nil, fmt.Errorf("column %s (%s): %w", c.Name, c.Type, err)
		}
		return s, nil
	case kDate, kDatetime, kTimestamp:
		return str(v), nil
	case kTime:
		return fixTime(str(v), c.Scale), nil
	case kString:
		s := str(v)
		return s, c.validUTF8(s)
	case kUUID, kInet6: // the server's text (the binlog's bytes: fixedBinText first)
		s := str(v)
		return s, c.validUTF8(s)
	case kBytes:
		var b []byte
		switch x := v.(type) {
		case []byte:
			b = append([]byte(nil), x...)
		case string:
			b = []byte(x)
		default:
			return nil, c.bad(v)
		}
		if c.FixedLen > len(b) {
			b = append(b, make([]byte, c.FixedLen-len(b))...)
		}
		return b, nil
	case kEnum:
		switch x := v.(type) {
		case int64:
			if x == 0 {
				return "", nil
			}
			if int(x) > len(c.Values) {
				return nil, fmt.Errorf("column %s: enum index %d out of range (%d members known)", c.Name, x, len(c.Values))
			}
			return c.Values[x-1], nil
		case []byte, string:
			return str(x), nil
		}
	case kSet:
		switch x := v.(type) {
		case int64:
			var parts []string
			for i, m := range c.Values {
				if x&(1<<uint(i)) != 0 {
					parts = append(parts, m)
				}
			}
			return strings.Join(parts, ","), nil
		case []byte, string:
			return str(x), nil
		}
	}
	return nil, c.bad(v)
}

func (c *Column) bad(v any) error {
	return fmt.Errorf("column %s (%s): cannot convert %T %v", c.Name, c.Type, v, v)
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return strings.Clone(x)
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// integer converts an integer of either path, undoing the binlog
// decoder's sign extension of unsigned columns.
func (c *Column) integer(v any) (int64, error) {
	switch x := v.(type) {
	case int8:
		if c.Unsigned {
			return int64(uint8(x)), nil
		}
		return int64(x), nil
	case int16:
		if c.Unsigned {
			return int64(uint16(x)), nil
		}
		return int64(x), nil
	case int32:
		if c.Unsigned {
			if c.Bits == 24 {
				return int64(uint32(x) & 0xffffff), nil
			}
			return int64(uint32(x)), nil
		}
		return int64(x), nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case uint64:
		return int64(x), nil
	case []byte:
		if c.Kind == kBit { // text protocol: big-endian bytes
			var n uint64
			for _, b := range x {
				n = n<<8 | uint64(b)
			}
			return int64(n), nil
		}
		return strconv.ParseInt(string(x), 10, 64)
	}
	return 0, c.bad(v)
}

// fixTime gives TIME values exactly fsp fractional digits (the binlog
// decoder omits a zero fraction, the text protocol prints it).
func fixTime(s string, fsp int) string {
	dot := strings.IndexByte(s, '.')
	frac := ""
	if dot >= 0 {
		s, frac = s[:dot], s[dot+1:]
	}
	if fsp == 0 {
		return s
	}
	for len(frac) < fsp {
		frac += "0"
	}
	return s + "." + frac[:fsp]
}

// decimalBytes converts a decimal string to the Avro decimal encoding
// (big-endian two's complement of the unscaled value) at scale.
func decimalBytes(s string, scale int) ([]byte, error) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	ip, fp := s, ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		ip, fp = s[:i], s[i+1:]
	}
	if len(fp) > scale {
		fp = fp[:scale]
	}
	for len(fp) < scale {
		fp += "0"
	}
	digits := strings.TrimLeft(ip+fp, "0")
	if digits == "" {
		return []byte{0}, nil
	}
	if len(digits) <= 18 {
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("decimal %q: %w", s, err)
		}
		if neg {
			n = -n
		}
		return minimalTwos(n), nil
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, fmt.Errorf("decimal %q is not a number", s)
	}
	if neg {
		n.Neg(n)
	}
	return bigTwos(n), nil
}

func minimalTwos(n int64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	i := 0
	for i < 7 && ((b[i] == 0 && b[i+1]&0x80 == 0) || (b[i] == 0xff && b[i+1]&0x80 != 0)) {
		i++
	}
	return append([]byte(nil), b[i:]...)
}

func bigTwos(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	l := (n.BitLen() + 8) / 8
	m := new(big.Int).Add(n, new(big.Int).Lsh(big.NewInt(1), uint(l*8)))
	b := m.Bytes()
	for len(b) < l {
		b = append([]byte{0xff}, b...)
	}
	return b
}

// textValue turns a text-protocol field into what value accepts.
func textValue(fv *gmysql.FieldValue) any {
	switch fv.Type {
	case gmysql.FieldValueTypeNull:
		return nil
	case gmysql.FieldValueTypeSigned:
		return fv.AsInt64()
	case gmysql.FieldValueTypeUnsigned:
		return fv.AsUint64()
	case gmysql.FieldValueTypeFloat:
		return fv.AsFloat64()
	}
	return fv.AsString()
}

// textLiteral renders a snapshot key value (as the text protocol returned
// it) as an SQL literal for chunk queries: numbers as they are, character
// data as a utf8mb4 hex literal (compared in the column's collation),
// binary data as a hex literal.
func (c *Column) textLiteral(b []byte) string {
	switch c.Kind {
	case kInt, kLong, kUlong, kYear, kDecimal, kFloat, kDouble:
		return string(b)
	case kBit:
		return fmt.Sprintf("X'%x'", b)
	case kBytes:
		return fmt.Sprintf("X'%x'", b)
	case kString, kEnum, kSet:
		if len(b) == 0 {
			return "''"
		}
		return fmt.Sprintf("_utf8mb4 X'%x'", b)
	}
	// dates and times: digits, '-', ':', '.', ' ' only
	return "'" + string(b) + "'"
}
