package mysql

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

// wkb builds a little-endian WKB geometry for tests.
type wkb []byte

func (w wkb) hdr(tp uint32) wkb { w = append(w, 1); return binary.LittleEndian.AppendUint32(w, tp) }
func (w wkb) n(n uint32) wkb    { return binary.LittleEndian.AppendUint32(w, n) }
func (w wkb) pt(x, y float64) wkb {
	w = binary.LittleEndian.AppendUint64(w, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(w, math.Float64bits(y))
}

func withSRID(srid uint32, g wkb) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, srid), g...)
}

func TestGeometryWKT(t *testing.T) {
	be := []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0} // big-endian POINT(1 -2)
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{withSRID(0, wkb{}.hdr(1).pt(1, 2)), "POINT(1 2)"},
		{withSRID(4326, wkb{}.hdr(1).pt(-122.4194, 37.7749)), "SRID=4326;POINT(-122.4194 37.7749)"},
		{be, "POINT(1 -2)"},
		{withSRID(0, wkb{}.hdr(2).n(2).pt(0, 0).pt(1.5, -2.25)), "LINESTRING(0 0,1.5 -2.25)"},
		{withSRID(0, wkb{}.hdr(3).n(1).n(4).pt(0, 0).pt(1, 0).pt(1, 1).pt(0, 0)), "POLYGON((0 0,1 0,1 1,0 0))"},
		{withSRID(0, wkb{}.hdr(4).n(2).hdr(1).pt(1, 1).hdr(1).pt(-2, 3.5)), "MULTIPOINT(1 1,-2 3.5)"},
		{withSRID(0, wkb{}.hdr(5).n(1).hdr(2).n(2).pt(0, 0).pt(1, 1)), "MULTILINESTRING((0 0,1 1))"},
		{withSRID(0, wkb{}.hdr(6).n(1).hdr(3).n(1).n(3).pt(0, 0).pt(1, 0).pt(0, 0)), "MULTIPOLYGON(((0 0,1 0,0 0)))"},
		{withSRID(0, wkb{}.hdr(7).n(2).hdr(1).pt(1, 2).hdr(2).n(0)), "GEOMETRYCOLLECTION(POINT(1 2),LINESTRING())"},
		{withSRID(0, wkb{}.hdr(7).n(0)), "GEOMETRYCOLLECTION EMPTY"},
	} {
		got, err := geometryWKT(c.in)
		if err != nil || got != c.want {
			t.Errorf("geometryWKT(%x) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range [][]byte{
		nil, {1, 2, 3},
		withSRID(0, wkb{}.hdr(1).pt(1, 2)[:20]),                   // truncated point
		withSRID(0, wkb{}.hdr(9).pt(1, 2)),                        // unknown type
		withSRID(0, append(wkb{}.hdr(1).pt(1, 2), 0)),             // trailing byte
		withSRID(0, wkb{}.hdr(2).n(1<<30)),                        // count beyond the data
		withSRID(0, wkb{}.hdr(4).n(1).hdr(2).n(0)),                // multipoint of a linestring
		withSRID(0, append(wkb{2}, wkb{}.hdr(1).pt(1, 2)[1:]...)), // byte order 2
	} {
		if s, err := geometryWKT(bad); !errors.Is(err, errWKB) {
			t.Errorf("geometryWKT(%x) = %q, %v; want errWKB", bad, s, err)
		}
	}
	deep := wkb{}
	for i := 0; i < 40; i++ {
		deep = deep.hdr(7).n(1)
	}
	if _, err := geometryWKT(withSRID(0, deep.hdr(1).pt(0, 0))); !errors.Is(err, errWKB) || !strings.Contains(err.Error(), "nested") {
		t.Errorf("deep nesting: %v", err)
	}
}

// FuzzGeometryWKT: any bytes give WKT or errWKB, never a panic, and the
// text is ASCII with balanced parentheses.
func FuzzGeometryWKT(f *testing.F) {
	f.Add(withSRID(4326, wkb{}.hdr(1).pt(1, 2)))
	f.Add(withSRID(0, wkb{}.hdr(7).n(2).hdr(1).pt(1, 2).hdr(3).n(1).n(3).pt(0, 0).pt(1, 0).pt(0, 0)))
	f.Add(withSRID(0, wkb{}.hdr(4).n(2).hdr(1).pt(1, 1).hdr(1).pt(-2, 3.5)))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := geometryWKT(b)
		if err != nil {
			if !errors.Is(err, errWKB) {
				t.Fatalf("error %v does not wrap errWKB", err)
			}
			return
		}
		depth := 0
		for i := 0; i < len(s); i++ {
			switch {
			case s[i] >= 0x80:
				t.Fatalf("non-ASCII WKT %q", s)
			case s[i] == '(':
				depth++
			case s[i] == ')':
				depth--
				if depth < 0 {
					t.Fatalf("unbalanced WKT %q", s)
				}
			}
		}
		if depth != 0 {
			t.Fatalf("unbalanced WKT %q", s)
		}
	})
}
