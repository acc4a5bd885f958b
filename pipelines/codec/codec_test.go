package codec_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"weir/pipelines/codec"
	"weir/pipelines/expr"
)

func TestStateCodecRoundTrip(t *testing.T) {
	t.Parallel()
	ts := time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.UTC)
	v := &expr.Object{Keys: []string{"a", "b", "c", "d", "e", "f", "g"},
		Vals: []any{nil, true, "x", int64(-42), 1.5, ts, []any{[]byte{0xff}, &expr.Object{Keys: []string{"k"}, Vals: []any{false}}}}}
	b := codec.AppendState(nil, v)
	got, err := codec.DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if !expr.Equal(got, v) {
		t.Fatalf("round trip: %#v", got)
	}
	for i := range b {
		if _, err := codec.DecodeState(b[:i]); err == nil {
			t.Fatalf("truncated at %d decoded without error", i)
		}
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	in := `{"b": 1, "a": [true, null, -2.5, "x\n\u00e9\ud83d\ude00"], "b": {"c": 12345678901234}}`
	v, err := codec.ParseJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*expr.Object)
	if len(o.Keys) != 3 || o.Keys[0] != "b" || o.Keys[1] != "a" {
		t.Fatalf("keys %v: want the order and the duplicate kept", o.Keys)
	}
	if got := string(codec.AppendJSON(nil, v)); got != `{"b":1,"a":[true,null,-2.5,"x\né😀"],"b":{"c":12345678901234}}` {
		t.Fatalf("AppendJSON = %s", got)
	}
	for _, bad := range []string{`{"a":}`, `[1,]`, `{"a" 1}`, `"\x"`, `{"a":1} x`, ``, `nul`} {
		if _, err := codec.ParseJSON([]byte(bad)); err == nil {
			t.Errorf("ParseJSON(%q) succeeded", bad)
		}
	}
	into := &expr.Object{Keys: []string{"keep"}, Vals: []any{int64(1)}}
	if err := codec.ParseObjectInto(into, []byte(`[1]`)); err == nil || err.Error() != "a JSON tuple, not an object" && err.Error() != "a JSON list, not an object" {
		t.Errorf("ParseObjectInto of a list: %v", err)
	}
	if err := codec.ParseObjectInto(into, []byte(`{"x": 1, "y": }`)); err == nil || len(into.Keys) != 1 {
		t.Errorf("ParseObjectInto of bad JSON: %v, keys %v (want them as they were)", err, into.Keys)
	}
}

// FuzzJSON: ParseJSON never panics, and what it parses writes back
// (AppendJSON) as valid JSON that, parsed and written again, stays the
// same. (The reader is lenient where encoding/json is not, as with
// "-0000.", and a float -0 written as -0 reads back as the integer 0:
// hence one normalizing round before the fixed point.)
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[true,null,"x"]}`, `"\u00e9\ud83d\ude00"`, `-1.5e10`, `[]`, `{"a":{"b":{}}}`, `12345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := codec.ParseJSON(b)
		if err != nil {
			return
		}
		out := codec.AppendJSON(nil, v)
		if !json.Valid(out) {
			t.Fatalf("%q: AppendJSON wrote invalid JSON %q", b, out)
		}
		var outs [3][]byte
		outs[0] = out
		for i := 1; i < 3; i++ {
			v2, err := codec.ParseJSON(outs[i-1])
			if err != nil {
				t.Fatalf("%q: AppendJSON wrote %q, which does not parse: %v", b, outs[i-1], err)
			}
			outs[i] = codec.AppendJSON(nil, v2)
		}
		if !bytes.Equal(outs[1], outs[2]) {
			t.Fatalf("%q: %q then %q then %q", b, outs[0], outs[1], outs[2])
		}
	})
}

// FuzzDecodeState: the state decoder never panics, and what it decodes
// encodes and decodes back to the same bytes.
func FuzzDecodeState(f *testing.F) {
	f.Add(codec.AppendState(nil, &expr.Object{Keys: []string{"a", "t"}, Vals: []any{[]any{int64(1), 2.5, "x", nil, true}, time.Unix(1, 5)}}))
	f.Add([]byte{9, 1, 1, 'k', 8, 2, 4, 2, 7, 1, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := codec.DecodeState(b)
		if err != nil {
			return
		}
		enc := codec.AppendState(nil, v)
		v2, err := codec.DecodeState(enc)
		if err != nil {
			t.Fatalf("%x: re-encoded %x does not decode: %v", b, enc, err)
		}
		if enc2 := codec.AppendState(nil, v2); !bytes.Equal(enc, enc2) {
			t.Fatalf("%x: %x then %x", b, enc, enc2)
		}
	})
}
