package schemas

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"
)

// The versions of one subject, each BACKWARD compatible with the one
// before: data written with every version must decode with the latest.
var userVersions = []string{
	// v1
	`{"type":"record","name":"User","namespace":"app","fields":[
	  {"name":"id","type":"int"},
	  {"name":"name","type":"string"},
	  {"name":"legacy","type":"string"}]}`,
	// v2: id int→long, drop legacy, add email with default, add enum
	`{"type":"record","name":"User","namespace":"app","fields":[
	  {"name":"id","type":"long"},
	  {"name":"name","type":"string"},
	  {"name":"email","type":["null","string"],"default":null},
	  {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["FREE","PAID"]},"default":"FREE"}]}`,
	// v3: name string→bytes, add score float, add address record
	`{"type":"record","name":"User","namespace":"app","fields":[
	  {"name":"id","type":"long"},
	  {"name":"name","type":"bytes"},
	  {"name":"email","type":["null","string"],"default":null},
	  {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["FREE","PAID","TRIAL"]},"default":"FREE"},
	  {"name":"score","type":"float","default":1.5},
	  {"name":"address","type":{"type":"record","name":"Address","fields":[
	     {"name":"city","type":"string"}]},"default":{"city":"Berlin"}}]}`,
	// v4 (latest): id long→double... no: keep long; score float→double,
	// name back to string, email widened with long, kind enum with a
	// default symbol, field renamed via alias, nested field added, tags
	// array and attrs map added with defaults.
	`{"type":"record","name":"Person","aliases":["app.User"],"namespace":"app","fields":[
	  {"name":"id","type":"long"},
	  {"name":"display","type":"string","aliases":["name"]},
	  {"name":"email","type":["null","string","long"],"default":null},
	  {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["FREE","PAID","TRIAL","OTHER"],"default":"OTHER"},"default":"FREE"},
	  {"name":"score","type":"double","default":2.5},
	  {"name":"address","type":{"type":"record","name":"Address","fields":[
	     {"name":"city","type":"string"},
	     {"name":"zip","type":"string","default":"00000"}]},"default":{"city":"Paris"}},
	  {"name":"tags","type":{"type":"array","items":"string"},"default":["new"]},
	  {"name":"attrs","type":{"type":"map","values":"long"},"default":{"a":1}}]}`,
}

func TestResolveEveryVersionWithLatest(t *testing.T) {
	var parsed []*Schema
	for i, text := range userVersions {
		s, err := Parse(text)
		if err != nil {
			t.Fatalf("v%d: %v", i+1, err)
		}
		if i > 0 {
			if inc := Check(LevelBackwardTransitive, s, parsed); len(inc) > 0 {
				t.Fatalf("v%d is not backward transitive: %v", i+1, inc)
			}
		}
		parsed = append(parsed, s)
	}
	latest := parsed[len(parsed)-1]
	written := []map[string]any{
		{"id": int32(7), "name": "ann", "legacy": "x"},
		{"id": int64(8), "name": "bob", "email": map[string]any{"string": "b@x"}, "kind": "PAID"},
		{"id": int64(9), "name": []byte("cy"), "email": nil, "kind": "TRIAL", "score": float32(0.25),
			"address": map[string]any{"city": "Rome"}},
	}
	want := []map[string]any{
		{"id": int64(7), "display": "ann", "email": nil, "kind": "FREE", "score": 2.5,
			"address": map[string]any{"city": "Paris", "zip": "00000"}, "tags": []any{"new"}, "attrs": map[string]any{"a": int64(1)}},
		{"id": int64(8), "display": "bob", "email": map[string]any{"string": "b@x"}, "kind": "PAID", "score": 2.5,
			"address": map[string]any{"city": "Paris", "zip": "00000"}, "tags": []any{"new"}, "attrs": map[string]any{"a": int64(1)}},
		{"id": int64(9), "display": "cy", "email": nil, "kind": "TRIAL", "score": 0.25,
			"address": map[string]any{"city": "Rome", "zip": "00000"}, "tags": []any{"new"}, "attrs": map[string]any{"a": int64(1)}},
	}
	sd := NewSerde(nil)
	for i, s := range parsed[:3] {
		sd.Add(int32(i+1), s)
		// Encode with goavro, the independent implementation.
		gc, err := goavro.NewCodec(s.Text())
		if err != nil {
			t.Fatal(err)
		}
		payload, err := gc.BinaryFromNative(nil, written[i])
		if err != nil {
			t.Fatalf("v%d: goavro encode: %v", i+1, err)
		}
		framed := append(AppendHeader(nil, int32(i+1)), payload...)
		got, err := sd.DecodeAs(t.Context(), framed, latest)
		if err != nil {
			t.Fatalf("v%d data as latest: %v", i+1, err)
		}
		if !reflect.DeepEqual(got, any(want[i])) {
			t.Errorf("v%d data as latest:\n got %#v\nwant %#v", i+1, got, want[i])
		}
		// The plan is cached per (id, reader).
		p1, _ := sd.Plan(t.Context(), int32(i+1), latest)
		p2, _ := sd.Plan(t.Context(), int32(i+1), latest)
		if p1 != p2 {
			t.Errorf("v%d: plan compiled twice", i+1)
		}
	}
	// Defaults are fresh per record: mutating one decoded record's default
	// does not leak into the next.
	framed, _ := sd.Encode(t.Context(), 1, written[0])
	a, _ := sd.DecodeAs(t.Context(), framed, latest)
	a.(map[string]any)["tags"].([]any)[0] = "mutated"
	b, _ := sd.DecodeAs(t.Context(), framed, latest)
	if got := b.(map[string]any)["tags"].([]any)[0]; got != "new" {
		t.Errorf("default shared between records: %v", got)
	}
}

func TestResolveUnionsAndEnums(t *testing.T) {
	cases := []struct {
		writer, reader string
		value          any
		want           any
		err            error
	}{
		// writer union branch resolved against a non-union reader
		{`["null","int"]`, `"long"`, map[string]any{"int": int32(5)}, int64(5), nil},
		{`["null","int"]`, `"long"`, nil, nil, ErrUnresolvable},
		// writer union against reader union: branch chosen by type, then by promotion
		{`["int","string"]`, `["string","double"]`, map[string]any{"int": int32(3)}, map[string]any{"double": 3.0}, nil},
		{`["int","string"]`, `["string","double"]`, map[string]any{"string": "s"}, map[string]any{"string": "s"}, nil},
		// non-union writer into a reader union
		{`"string"`, `["null","bytes"]`, "hi", map[string]any{"bytes": []byte("hi")}, nil},
		// enum symbol unknown to the reader: default symbol, or an error
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A","Z"],"default":"Z"}`, "B", "Z", nil},
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A"]}`, "B", nil, ErrUnresolvable},
		{`{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A"]}`, "A", "A", nil},
		// fixed, arrays of promotable items, maps
		{`{"type":"fixed","name":"F","size":2}`, `{"type":"fixed","name":"G","aliases":["F"],"size":2}`, []byte{1, 2}, []byte{1, 2}, nil},
		{`{"type":"array","items":"int"}`, `{"type":"array","items":"double"}`, []any{int32(1), int32(2)}, []any{1.0, 2.0}, nil},
		{`{"type":"map","values":"float"}`, `{"type":"map","values":"double"}`, map[string]any{"k": float32(0.5)}, map[string]any{"k": 0.5}, nil},
		{`"bytes"`, `"string"`, []byte("b"), "b", nil},
	}
	for i, c := range cases {
		w, r := MustParse(c.writer), MustParse(c.reader)
		d, err := NewDecoder(w, r)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		payload, err := NewEncoder(w).Append(nil, c.value)
		if err != nil {
			t.Fatalf("case %d: encode: %v", i, err)
		}
		got, err := d.Decode(payload)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("case %d: err = %v, want %v", i, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("case %d: %s as %s = %#v, %v; want %#v", i, c.writer, c.reader, got, err, c.want)
		}
	}
	// Unresolvable at compile time: missing default, type mismatch, names.
	for _, c := range [][2]string{
		{`{"type":"record","name":"R","fields":[]}`, `{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}`},
		{`"string"`, `"int"`},
		{`{"type":"record","name":"R","fields":[]}`, `{"type":"record","name":"S","fields":[]}`},
		{`{"type":"fixed","name":"F","size":2}`, `{"type":"fixed","name":"F","size":3}`},
	} {
		if _, err := NewDecoder(MustParse(c[0]), MustParse(c[1])); !errors.Is(err, ErrUnresolvable) {
			t.Errorf("%s as %s: err = %v, want ErrUnresolvable", c[0], c[1], err)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{`, "unexpected EOF"},
		{`{"type":"record","fields":[]}`, `without "name"`},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"nope"}]}`, `unknown type "nope"`},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"a","type":"int"}]}`, `two fields named "a"`},
		{`{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":"x"}]}`, `/fields/0 (field "a"): default "x"`},
		{`{"type":"enum","name":"E","symbols":["A","A"]}`, `duplicate symbol "A"`},
		{`["int","int"]`, `duplicate union branch "int"`},
		{`["null",["int"]]`, `union may not contain a union`},
		{`{"type":"fixed","name":"F"}`, `"size"`},
		{`{"type":"record","name":"1R","fields":[]}`, `not a valid name`},
		{`{"type":"record","name":"R","fields":[{"name":"u","type":["null","int"],"default":1}]}`, `default 1`},
		{`"int" "long"`, `trailing data`},
	} {
		_, err := Parse(c.schema)
		if !errors.Is(err, ErrInvalidSchema) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want ErrInvalidSchema containing %q", c.schema, err, c.want)
		}
	}
}

func TestIdentityIgnoresFormatting(t *testing.T) {
	a := MustParse(`{"type":"record","name":"R","namespace":"x","doc":"one","fields":[{"name":"a","type":{"type":"int"}},{"name":"b","type":"string","default":"d"}]}`)
	b := MustParse(`{ "fields" : [ {"type":"int","name":"a"} , {"default":"d","name":"b","type":"string", "doc":"two"} ],
	  "name" : "x.R", "type" : "record" }`)
	if a.Identity() != b.Identity() || a.Canonical() != b.Canonical() {
		t.Fatalf("identity differs:\n%s\n%s", a.Identity(), b.Identity())
	}
	c := MustParse(`{"type":"record","name":"R","namespace":"x","fields":[{"name":"a","type":"int"},{"name":"b","type":"string","default":"other"}]}`)
	if a.Identity() == c.Identity() {
		t.Fatal("a changed default must change the identity")
	}
	if a.Canonical() != c.Canonical() {
		t.Fatal("defaults are not part of the Parsing Canonical Form")
	}
	d := MustParse(`{"type":"record","name":"R","namespace":"x","fields":[{"name":"a","type":"int"},{"name":"b","type":{"type":"string","logicalType":"uuid"},"default":"d"}]}`)
	if a.Identity() == d.Identity() {
		t.Fatal("a logical type must change the identity")
	}
}
