package schemas

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"testing"
)

// FuzzParseHeader: the wire-format decoder never panics, accepts exactly
// the framed inputs, and round-trips the id.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 2})
	f.Add([]byte{1, 0, 0, 0, 1})
	f.Add([]byte{0, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, payload, err := ParseHeader(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if again := append(AppendHeader(nil, id), payload...); !bytes.Equal(again, b) {
			t.Fatalf("re-framed %x, input %x", again, b)
		}
	})
}

var fuzzPairs = func() [][2]*Schema {
	all := MustParse(mustRead("testdata/all.avsc"))
	event := MustParse(mustRead("testdata/event.avsc"))
	var ps [][2]*Schema
	ps = append(ps, [2]*Schema{all, all}, [2]*Schema{event, event})
	for i := 0; i+1 < len(userVersions); i++ {
		ps = append(ps, [2]*Schema{MustParse(userVersions[i]), MustParse(userVersions[len(userVersions)-1])})
	}
	return ps
}()

func mustRead(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// FuzzDecode: decoding arbitrary bytes with every compiled plan (same
// schema and resolved) never panics and fails only with ErrMalformed or
// ErrUnresolvable; what decodes with its own schema re-encodes to a datum
// that decodes to the same value.
func FuzzDecode(f *testing.F) {
	sd := NewSerde(nil)
	for i, p := range fuzzPairs {
		sd.Add(int32(i), p[0])
	}
	f.Add(uint8(1), []byte{0x02, 0x02, 'h', 0, 0x02, 0x02, 'm', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x04, 0x00, 0x01})
	f.Add(uint8(0), []byte{})
	f.Add(uint8(2), []byte{0x0e, 0x06, 'a', 'n', 'n', 0x02, 'x'})
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		i := int(which) % len(fuzzPairs)
		p := fuzzPairs[i]
		framed := append(AppendHeader(nil, int32(i)), data...)
		v, err := sd.DecodeAs(t.Context(), framed, p[1])
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnresolvable) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if p[0] != p[1] {
			return
		}
		enc, err := NewEncoder(p[1]).Append(nil, v)
		if err != nil {
			t.Fatalf("decoded value does not re-encode: %v", err)
		}
		d, _ := NewDecoder(p[1], p[1])
		again, err := d.Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(v)) {
			t.Fatalf("round trip changed the value:\n%#v\n%#v", v, again)
		}
	})
}

// FuzzParse: schema parsing never panics; what parses has a canonical
// form that parses to the same canonical form.
func FuzzParse(f *testing.F) {
	f.Add(mustRead("testdata/all.avsc"))
	f.Add(`{"type":"enum","name":"E","symbols":["A"],"default":"A"}`)
	f.Add(`["null",{"type":"fixed","name":"F","size":3}]`)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			return
		}
		c, err := Parse(s.Canonical())
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", s.Canonical(), err)
		}
		if c.Canonical() != s.Canonical() {
			t.Fatalf("canonical form not stable:\n%s\n%s", s.Canonical(), c.Canonical())
		}
	})
}
