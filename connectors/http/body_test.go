package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNDJSON(t *testing.T) {
	t.Parallel()
	p := Parser{KeyField: "id", MaxEventBytes: 100}
	evs, err := p.NDJSON([]byte("{\"id\":\"a\",\"m\":1}\r\n\n  {\"id\":7}\n{\"x\":null,\"id\":null}\n{\"id\":{\"n\":[1]}}"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{{[]byte(`{"id":"a","m":1}`), []byte("a")}, {[]byte(`{"id":7}`), []byte("7")},
		{[]byte(`{"x":null,"id":null}`), nil}, {[]byte(`{"id":{"n":[1]}}`), []byte(`{"n":[1]}`)}}
	if len(evs) != len(want) {
		t.Fatalf("%d events", len(evs))
	}
	for i := range want {
		if !bytes.Equal(evs[i].Value, want[i].Value) || !bytes.Equal(evs[i].Key, want[i].Key) {
			t.Errorf("event %d: %q key %q, want %q key %q", i, evs[i].Value, evs[i].Key, want[i].Value, want[i].Key)
		}
	}
	for in, wantErr := range map[string]string{
		"{\"a\":1}\n{\"a\":}\n":                        "line 2: malformed body: invalid character '}' looking for beginning of value (at byte 5 of the line)",
		"{}\n\n[1,2]":                                  "line 3: malformed body: want a JSON object",
		"{\"a\":1} {\"b\":2}":                          "line 1: malformed body: invalid character '{' after top-level value",
		"{\"a\":\"" + strings.Repeat("x", 100) + "\"}": "line 1: event too large: 108 bytes, the limit is 100",
	} {
		_, err := p.NDJSON([]byte(in), nil)
		if err == nil || !strings.HasPrefix(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want %q", in, err, wantErr)
		}
		var be *BodyError
		if !errors.As(err, &be) || be.Line == 0 {
			t.Errorf("%q: %v is not a BodyError with a line", in, err)
		}
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	p := Parser{KeyField: "k", MaxEventBytes: 50}
	evs, err := p.JSON([]byte(" [ {\"k\":\"x\"} ,\n{\"a\":[1,2]} ] \n"), nil)
	if err != nil || len(evs) != 2 || string(evs[0].Value) != `{"k":"x"}` || string(evs[0].Key) != "x" ||
		string(evs[1].Value) != `{"a":[1,2]}` || evs[1].Key != nil {
		t.Fatalf("array: %q, %v", evs, err)
	}
	evs, err = p.JSON([]byte("\n{\"k\":1}\n"), nil)
	if err != nil || len(evs) != 1 || string(evs[0].Value) != `{"k":1}` || string(evs[0].Key) != "1" {
		t.Fatalf("object: %q, %v", evs, err)
	}
	for in, wantErr := range map[string]string{
		`[{"a":1},{"a":}]`: "byte offset 14: malformed body: invalid character '}' looking for beginning of value",
		`[{"a":1}, 5]`:     "byte offset 10: malformed body: element 1 is not a JSON object",
		`[{"a":1}`:         "byte offset 8: malformed body: unexpected end of JSON input",
		`[{"a":1}] x`:      "byte offset 10: malformed body: invalid character 'x' after top-level value",
		`{"a":1`:           "byte offset 6: malformed body: unexpected end of JSON input",
		`  "str"`:          "byte offset 2: malformed body: want a JSON array of objects or one object",
		``:                 "byte offset 0: malformed body: empty body",
		`[{"a":"` + strings.Repeat("y", 50) + `"}]`: "byte offset 1: event too large: element 0 is 58 bytes",
	} {
		_, err := p.JSON([]byte(in), nil)
		if err == nil || !strings.HasPrefix(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want %q", in, err, wantErr)
		}
	}
}

// FuzzBody: neither parser panics; what they accept is a list of valid
// JSON objects, and NDJSON yields one event per non-blank line.
func FuzzBody(f *testing.F) {
	for _, s := range []string{
		"{\"id\":\"a\",\"m\":1}\n{\"id\":7}\n",
		"[{\"k\":\"x\"},{\"a\":[1,2]}]",
		"{\"a\":\"\\u00e9\\n\"}",
		"[{\"a\":1},{\"a\":}]",
		"{}\r\n\r\n{}",
		"[1]",
		"\xff{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := Parser{KeyField: "id", MaxEventBytes: 1 << 10}
		check := func(evs []Event) {
			for _, e := range evs {
				if len(e.Value) == 0 || e.Value[0] != '{' || !json.Valid(e.Value) || len(e.Value) > 1<<10 {
					t.Fatalf("accepted event %q", e.Value)
				}
			}
		}
		if evs, err := p.NDJSON(b, nil); err == nil {
			check(evs)
			lines := 0
			for _, l := range bytes.Split(b, []byte("\n")) {
				if len(bytes.TrimSpace(l)) > 0 {
					lines++
				}
			}
			if lines != len(evs) {
				t.Fatalf("%d events from %d lines", len(evs), lines)
			}
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("NDJSON error %v wraps no sentinel", err)
		}
		if evs, err := p.JSON(b, nil); err == nil {
			check(evs)
		} else {
			var be *BodyError
			if !errors.As(err, &be) || be.Offset < 0 || be.Offset > int64(len(b)) {
				t.Fatalf("JSON error %v: offset out of the body", err)
			}
		}
	})
}
