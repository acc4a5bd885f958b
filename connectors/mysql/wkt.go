package mysql

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Spatial columns reach weir (binlog and snapshot alike) in the server's
// internal form: a 4-byte little-endian SRID followed by the geometry's
// WKB (OGC well-known binary). weir delivers them as WKT, the text form
// ST_AsText gives and Elasticsearch's geo_shape accepts, prefixed with
// "SRID=n;" (EWKT, as PostGIS writes it) when the SRID is not 0.

var errWKB = errors.New("malformed WKB")

// maxWKBDepth bounds nested geometry collections.
const maxWKBDepth = 32

// geometryWKT converts a spatial value to (E)WKT.
func geometryWKT(b []byte) (string, error) {
	if len(b) < 4 {
		return "", fmt.Errorf("%w: %d bytes, want an SRID and a geometry", errWKB, len(b))
	}
	srid := binary.LittleEndian.Uint32(b)
	var sb strings.Builder
	if srid != 0 {
		sb.WriteString("SRID=")
		sb.WriteString(strconv.FormatUint(uint64(srid), 10))
		sb.WriteByte(';')
	}
	w := wkbReader{b: b[4:]}
	if err := w.geometry(&sb, 0, 0); err != nil {
		return "", err
	}
	if len(w.b) != 0 {
		return "", fmt.Errorf("%w: %d bytes after the geometry", errWKB, len(w.b))
	}
	return sb.String(), nil
}

type wkbReader struct {
	b     []byte
	order binary.ByteOrder
}

func (w *wkbReader) u32() (uint32, error) {
	if len(w.b) < 4 {
		return 0, fmt.Errorf("%w: truncated", errWKB)
	}
	v := w.order.Uint32(w.b)
	w.b = w.b[4:]
	return v, nil
}

// count reads an element count and checks that the rest of the value can
// hold that many elements of at least min bytes each.
func (w *wkbReader) count(min int) (int, error) {
	n, err := w.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(min) > uint64(len(w.b)) {
		return 0, fmt.Errorf("%w: %d elements in %d bytes", errWKB, n, len(w.b))
	}
	return int(n), nil
}

func (w *wkbReader) point(sb *strings.Builder) error {
	if len(w.b) < 16 {
		return fmt.Errorf("%w: truncated point", errWKB)
	}
	x := math.Float64frombits(w.order.Uint64(w.b))
	y := math.Float64frombits(w.order.Uint64(w.b[8:]))
	w.b = w.b[16:]
	sb.WriteString(coord(x))
	sb.WriteByte(' ')
	sb.WriteString(coord(y))
	return nil
}

func coord(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// list writes a parenthesised, comma-separated list of items, each of at
// least minSize bytes (the count is checked against the bytes left).
func (w *wkbReader) list(sb *strings.Builder, minSize int, item func(*strings.Builder) error) error {
	n, err := w.count(minSize)
	if err != nil {
		return err
	}
	sb.WriteByte('(')
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		if err := item(sb); err != nil {
			return err
		}
	}
	sb.WriteByte(')')
	return nil
}

func (w *wkbReader) points(sb *strings.Builder) error { return w.list(sb, 16, w.point) }

func (w *wkbReader) rings(sb *strings.Builder) error { return w.list(sb, 4, w.points) }

var wkbNames = [...]string{1: "POINT", 2: "LINESTRING", 3: "POLYGON", 4: "MULTIPOINT", 5: "MULTILINESTRING",
	6: "MULTIPOLYGON", 7: "GEOMETRYCOLLECTION"}

// geometry reads one WKB geometry; want is the type a multi-geometry
// requires of its members (0: any).
func (w *wkbReader) geometry(sb *strings.Builder, depth int, want uint32) error {
	if depth > maxWKBDepth {
		return fmt.Errorf("%w: nested deeper than %d", errWKB, maxWKBDepth)
	}
	if len(w.b) < 5 {
		return fmt.Errorf("%w: truncated header", errWKB)
	}
	switch w.b[0] {
	case 0:
		w.order = binary.BigEndian
	case 1:
		w.order = binary.LittleEndian
	default:
		return fmt.Errorf("%w: byte order %d", errWKB, w.b[0])
	}
	w.b = w.b[1:]
	tp, _ := w.u32()
	if tp == 0 || tp >= uint32(len(wkbNames)) || (want != 0 && tp != want) {
		return fmt.Errorf("%w: geometry type %d", errWKB, tp)
	}
	sb.WriteString(wkbNames[tp])
	switch tp {
	case 1:
		sb.WriteByte('(')
		if err := w.point(sb); err != nil {
			return err
		}
		sb.WriteByte(')')
		return nil
	case 2:
		return w.points(sb)
	case 3:
		return w.rings(sb)
	}
	n, err := w.count(9)
	if err != nil {
		return err
	}
	if n == 0 {
		sb.WriteString(" EMPTY")
		return nil
	}
	sb.WriteByte('(')
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		switch tp {
		case 4, 5, 6: // members are written without their type name
			var inner strings.Builder
			if err := w.geometry(&inner, depth+1, tp-3); err != nil {
				return err
			}
			s := strings.TrimPrefix(inner.String(), wkbNames[tp-3])
			if tp == 4 { // MULTIPOINT(1 2,3 4), as ST_AsText writes it
				s = s[1 : len(s)-1]
			}
			sb.WriteString(s)
		default:
			if err := w.geometry(sb, depth+1, 0); err != nil {
				return err
			}
		}
	}
	sb.WriteByte(')')
	return nil
}
