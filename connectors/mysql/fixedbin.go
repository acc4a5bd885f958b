package mysql

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// MariaDB's UUID and INET6 column types (10.7+, 10.5+) are 16-byte
// fixed-binary types. The snapshot (text protocol) returns their text,
// as the server prints it; the binlog carries their 16 bytes with no
// type name: the TableMapEvent says BINARY(16), and the source learns
// the type from the live schema (stream.go, fixedBinTypes). These
// functions turn the binlog bytes into the text the server prints.
//
// The binlog bytes of both types are their in-memory form: a UUID's
// RFC 4122 bytes in order (MariaDB stores time-based UUIDs with the
// groups swapped for index order, but Field_fbt::pack converts the
// record back to the in-memory order before writing the row event;
// compared with SELECT CAST(col AS CHAR) by TestFidelity), an INET6 the
// address in network order. Like BINARY(n), trailing 0x00 bytes are left
// out of the row event, so shorter values are right-padded with zeros.

const fixedBinLen = 16

// fixedBin pads binlog bytes of a 16-byte fixed-binary column.
func fixedBin(b []byte) ([16]byte, error) {
	var a [16]byte
	if len(b) > fixedBinLen {
		return a, fmt.Errorf("binlog value has %d bytes, more than the type's %d", len(b), fixedBinLen)
	}
	copy(a[:], b)
	return a, nil
}

// uuidText renders the binlog bytes of a UUID column as MariaDB prints
// it: lower-case hex, 8-4-4-4-12.
func uuidText(b []byte) (string, error) {
	a, err := fixedBin(b)
	if err != nil {
		return "", err
	}
	var out [36]byte
	hex.Encode(out[0:8], a[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], a[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], a[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], a[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], a[10:16])
	return string(out[:]), nil
}

// inet6Text renders the binlog bytes of an INET6 column as MariaDB's
// Inet6::to_string prints it (which is not quite RFC 5952): lower-case
// hex words without leading zeros; the longest run of zero words (the
// first of equally long runs, even a run of one word) written as "::";
// an IPv4-compatible (::a.b.c.d, words 0-5 zero) or IPv4-mapped
// (::ffff:a.b.c.d) address ends in dotted decimal.
func inet6Text(b []byte) (string, error) {
	a, err := fixedBin(b)
	if err != nil {
		return "", err
	}
	var w [8]uint16
	for i := range w {
		w[i] = uint16(a[2*i])<<8 | uint16(a[2*i+1])
	}
	gapPos, gapLen := -1, 0
	for i := 0; i < 8; {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && w[j] == 0 {
			j++
		}
		if j-i > gapLen {
			gapPos, gapLen = i, j-i
		}
		i = j
	}
	var sb strings.Builder
	for i := 0; i < 8; i++ {
		switch {
		case i == gapPos:
			if i == 0 {
				sb.WriteByte(':')
			}
			sb.WriteByte(':')
			i += gapLen - 1
		case i == 6 && gapPos == 0 && (gapLen == 6 || gapLen == 5 && w[5] == 0xffff):
			fmt.Fprintf(&sb, "%d.%d.%d.%d", a[12], a[13], a[14], a[15])
			return sb.String(), nil
		default:
			sb.WriteString(strconv.FormatUint(uint64(w[i]), 16))
			if i != 7 {
				sb.WriteByte(':')
			}
		}
	}
	return sb.String(), nil
}

// fixedBinText converts a binlog value of a UUID or INET6 column to its
// text (the form the snapshot reads), naming the column on bad input.
func (c *Column) fixedBinText(v any) (any, error) {
	var b []byte
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		b = []byte(x)
	case []byte:
		b = x
	default:
		return nil, c.bad(v)
	}
	var s string
	var err error
	if c.Kind == kUUID {
		s, err = uuidText(b)
	} else {
		s, err = inet6Text(b)
	}
	if err != nil {
		return nil, fmt.Errorf("column %s (%s): %w", c.Name, c.Type, err)
	}
	return s, nil
}
