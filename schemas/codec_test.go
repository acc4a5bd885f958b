package schemas

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
)

func readSchema(t testing.TB, name string) *Schema {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(string(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// asciiBytes makes gen produce bytes and fixed values below 0x80: goavro
// reads JSON strings for bytes as UTF-8 rather than as the spec's code
// points U+0000-U+00FF, so only ASCII bytes round-trip through it.
var asciiBytes bool

func randBytes(rng *rand.Rand, b []byte) {
	rng.Read(b)
	if asciiBytes {
		for i := range b {
			b[i] &= 0x7f
		}
	}
}

// gen returns a random native value of n.
func gen(n *Node, rng *rand.Rand, depth int) any {
	switch n.Kind {
	case Null:
		return nil
	case Boolean:
		return rng.Intn(2) == 1
	case Int:
		return logicalFromInt(n, int32(rng.Int63n(1<<20)-1<<19))
	case Long:
		return logicalFromLong(n, rng.Int63()-rng.Int63())
	case Float:
		return float32(rng.NormFloat64())
	case Double:
		return rng.NormFloat64() * 1e6
	case Bytes:
		b := make([]byte, rng.Intn(12))
		randBytes(rng, b)
		if n.Logical == "decimal" {
			return decimal(append([]byte{1}, b...), n.Scale)
		}
		return b
	case String:
		const letters = "abcdefghijklmnopqrstuvwxyzäö€ "
		r := []rune(letters)
		out := make([]rune, rng.Intn(20))
		for i := range out {
			out[i] = r[rng.Intn(len(r))]
		}
		return string(out)
	case Enum:
		return n.Symbols[rng.Intn(len(n.Symbols))]
	case Fixed:
		b := make([]byte, n.Size)
		randBytes(rng, b)
		return b
	case Array:
		out := []any{}
		for i := rng.Intn(4); i > 0 && depth < 4; i-- {
			out = append(out, gen(n.Items, rng, depth+1))
		}
		return out
	case Map:
		out := map[string]any{}
		for i := rng.Intn(4); i > 0 && depth < 4; i-- {
			out[fmt.Sprint("k", rng.Intn(100))] = gen(n.Values, rng, depth+1)
		}
		return out
	case Union:
		i := rng.Intn(len(n.Branches))
		if depth > 3 {
			i = 0
		}
		b := n.Branches[i]
		if b.Kind == Null {
			return nil
		}
		return map[string]any{unionName(b): gen(b, rng, depth+1)}
	}
	m := map[string]any{}
	for _, f := range n.Fields {
		m[f.Name] = gen(f.Type, rng, depth+1)
	}
	return m
}

// normalize makes values comparable with reflect.DeepEqual.
func normalize(v any) any {
	switch x := v.(type) {
	case *big.Rat:
		return "rat:" + x.RatString()
	case time.Time:
		return fmt.Sprint("time:", x.UnixNano())
	case float64:
		if x != x {
			return "NaN"
		}
	case float32:
		if x != x {
			return "NaN"
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []byte:
		return "bytes:" + string(x) // nil and empty alike
	case []any:
		if len(x) == 0 {
			return "[]" // nil and empty alike
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

func TestCodecMatchesGoavro(t *testing.T) {
	for _, name := range []string{"event.avsc", "all.avsc"} {
		t.Run(name, func(t *testing.T) {
			s := readSchema(t, name)
			gc, err := goavro.NewCodec(s.Text())
			if err != nil {
				t.Fatal(err)
			}
			// goavro keeps {"type":"long"} for logical types where the
			// spec's Parsing Canonical Form (and Java's) has "long", so
			// compare only schemas without them.
			if name == "event.avsc" && gc.CanonicalSchema() != s.Canonical() {
				t.Errorf("canonical form:\n weir   %s\n goavro %s", s.Canonical(), gc.CanonicalSchema())
			}
			if name == "event.avsc" && gc.Rabin != s.Fingerprint() {
				t.Errorf("fingerprint %x, goavro %x", s.Fingerprint(), gc.Rabin)
			}
			enc := NewEncoder(s)
			dec, err := NewDecoder(s, s)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(1))
			for i := 0; i < 500; i++ {
				v := gen(s.Root, rng, 0)
				mine, err := enc.Append(nil, v)
				if err != nil {
					t.Fatalf("weir encode %v: %v", v, err)
				}
				theirs, err := gc.BinaryFromNative(nil, v)
				if err != nil {
					t.Fatalf("goavro encode %v: %v", v, err)
				}
				// Maps encode in iteration order, so compare decodings.
				fromMine, rest, err := gc.NativeFromBinary(mine)
				if err != nil || len(rest) != 0 {
					t.Fatalf("goavro cannot decode weir's bytes: %v (%d left)", err, len(rest))
				}
				fromTheirs, err := dec.Decode(theirs)
				if err != nil {
					t.Fatalf("weir cannot decode goavro's bytes: %v", err)
				}
				want := normalize(v)
				if got := normalize(fromMine); !reflect.DeepEqual(got, want) {
					t.Fatalf("goavro decoded weir's bytes as\n%#v\nwant\n%#v", got, want)
				}
				if got := normalize(fromTheirs); !reflect.DeepEqual(got, want) {
					t.Fatalf("weir decoded goavro's bytes as\n%#v\nwant\n%#v", got, want)
				}
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	s := readSchema(t, "all.avsc")
	dec, err := NewDecoder(s, s)
	if err != nil {
		t.Fatal(err)
	}
	enc := NewEncoder(s)
	rng := rand.New(rand.NewSource(2))
	good, err := enc.Append(nil, gen(s.Root, rng, 0))
	if err != nil {
		t.Fatal(err)
	}
	// Every strict prefix is truncated; trailing bytes are rejected.
	for i := 0; i < len(good); i++ {
		if _, err := dec.Decode(good[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d/%d bytes: err = %v, want ErrMalformed", i, len(good), err)
		}
	}
	if _, err := dec.Decode(append(good, 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("trailing byte: err = %v", err)
	}
	// A huge array count in a few bytes fails without allocating it.
	arr := MustParse(`{"type":"array","items":"null"}`)
	ad, _ := NewDecoder(arr, arr)
	if _, err := ad.Decode(appendLong(nil, 1<<40)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("huge zero-size block: %v", err)
	}
	ls := MustParse(`{"type":"array","items":"long"}`)
	ld, _ := NewDecoder(ls, ls)
	if _, err := ld.Decode(appendLong(nil, 1<<40)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("huge block: %v", err)
	}
	if _, err := ld.Decode([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("11-byte varint: %v", err)
	}
}

func TestWireFormat(t *testing.T) {
	b := AppendHeader(nil, 258)
	if want := []byte{0, 0, 0, 1, 2}; !reflect.DeepEqual(b, want) {
		t.Fatalf("header %v, want %v", b, want)
	}
	id, rest, err := ParseHeader(append(b, 7))
	if err != nil || id != 258 || !reflect.DeepEqual(rest, []byte{7}) {
		t.Fatalf("ParseHeader = %d %v %v", id, rest, err)
	}
	for _, bad := range [][]byte{nil, {0}, {0, 0, 0, 1}, {1, 0, 0, 0, 1}, {0, 0x80, 0, 0, 0}} {
		if _, _, err := ParseHeader(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseHeader(%v) err = %v, want ErrMalformed", bad, err)
		}
	}
}

// TestAppendJSONReadsBackWithGoavro: weir's Avro JSON is Avro JSON as
// goavro reads it, with record fields in schema order.
func TestAppendJSONReadsBackWithGoavro(t *testing.T) {
	asciiBytes = true
	defer func() { asciiBytes = false }()
	for _, name := range []string{"event.avsc", "all.avsc"} {
		s := readSchema(t, name)
		gc, err := goavro.NewCodec(s.Text())
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(4))
		for i := 0; i < 300; i++ {
			v := gen(s.Root, rng, 0)
			text, err := AppendJSON(nil, s, v)
			if err != nil {
				t.Fatalf("%s: AppendJSON(%v): %v", name, v, err)
			}
			back, _, err := gc.NativeFromTextual(text)
			if err != nil {
				t.Fatalf("%s: goavro cannot read %s: %v", name, text, err)
			}
			if !reflect.DeepEqual(normalize(back), normalize(v)) {
				t.Fatalf("%s: %s read back as\n%#v\nwant\n%#v", name, text, back, v)
			}
		}
	}
	got, err := AppendJSON(nil, readSchema(t, "event.avsc"), benchEvent())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":1718000000123,"host":"web-17.example.internal","service":"checkout","level":"INFO","message":"GET /api/cart/42 200 served from cache","latency_ms":12.75,"status":200,"bytes":5123,"user":{"string":"alice"},"ok":true}`
	if string(got) != want {
		t.Fatalf("AppendJSON =\n%s\nwant\n%s", got, want)
	}
}
