package event

import (
	"encoding/binary"
	"sort"
	"strconv"
	"strings"
	"time"

	"weir/internal/jsonw"
)

// Kind is a field's type.
type Kind uint8

// Field kinds.
const (
	Long Kind = iota
	Int
	String
	Boolean
	TimestampMillis
	TimestampMicros
	StringMap
	StringMapMap
)

// JSONTime is how a time field is written in JSON.
type JSONTime uint8

const (
	// Millis writes Unix milliseconds as a number.
	Millis JSONTime = iota
	// RFC3339 writes an RFC 3339 string with nanoseconds in the time's
	// own zone.
	RFC3339
	// RFC3339UTC writes an RFC 3339 string with nanoseconds in UTC.
	RFC3339UTC
)

// Field is one field of an event.
type Field struct {
	Name     string
	Kind     Kind
	Nullable bool   // ["null", T], default null
	Default  string // the Avro default's JSON text for a field that is not nullable ("": none)
	Doc      string
	JSONTime JSONTime
}

// Schema describes an event: an Avro record.
type Schema struct {
	Name, Namespace, Doc string
	Fields               []Field
}

// Pair is one name and value of a Group.
type Pair struct{ Name, Value string }

// Group is one entry of a StringMapMap: a key and its pairs.
type Group struct {
	Key   string
	Pairs []Pair
}

// Value is one field's value: Null for a nullable field's null, else the
// member for the field's kind (I for Long and Int, S or B for String,
// Bool, T for the timestamps, M for StringMap, G for StringMapMap).
type Value struct {
	Null bool
	I    int64
	S    string
	B    []byte // String: used when not nil
	Bool bool
	T    time.Time
	M    map[string]string
	G    []Group
}

// AvroSchema returns the Avro schema text of s (the text a source
// registers as "<topic>-value").
func (s *Schema) AvroSchema() string {
	if len(s.Fields) > MaxFields {
		panic("event: schema " + s.Name + " has more than MaxFields fields")
	}
	var b strings.Builder
	b.WriteString("{\n  \"type\": \"record\",\n  \"name\": ")
	b.Write(jsonw.AppendString(nil, s.Name))
	b.WriteString(",\n  \"namespace\": ")
	b.Write(jsonw.AppendString(nil, s.Namespace))
	if s.Doc != "" {
		b.WriteString(",\n  \"doc\": ")
		b.Write(jsonw.AppendString(nil, s.Doc))
	}
	b.WriteString(",\n  \"fields\": [\n")
	for i, f := range s.Fields {
		b.WriteString(`    {"name": `)
		b.Write(jsonw.AppendString(nil, f.Name))
		b.WriteString(`, "type": `)
		t := avroType(f.Kind)
		switch {
		case f.Nullable:
			b.WriteString(`["null", ` + t + `], "default": null`)
		case f.Default != "":
			b.WriteString(t + `, "default": ` + f.Default)
		default:
			b.WriteString(t)
		}
		if f.Doc != "" {
			b.WriteString(`, "doc": `)
			b.Write(jsonw.AppendString(nil, f.Doc))
		}
		b.WriteString("}")
		if i < len(s.Fields)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("  ]\n}")
	return b.String()
}

func avroType(k Kind) string {
	switch k {
	case Long:
		return `"long"`
	case Int:
		return `"int"`
	case String:
		return `"string"`
	case Boolean:
		return `"boolean"`
	case TimestampMillis:
		return `{"type": "long", "logicalType": "timestamp-millis"}`
	case TimestampMicros:
		return `{"type": "long", "logicalType": "timestamp-micros"}`
	case StringMap:
		return `{"type": "map", "values": "string"}`
	case StringMapMap:
		return `{"type": "map", "values": {"type": "map", "values": "string"}}`
	}
	panic("event: unknown field kind")
}

// AppendAvro appends the Avro binary of the event vs (one Value per
// field, in order) to b.
func (s *Schema) AppendAvro(b []byte, vs []Value) []byte {
	for i := range s.Fields {
		f, v := &s.Fields[i], &vs[i]
		if f.Nullable {
			if v.Null {
				b = append(b, 0)
				continue
			}
			b = append(b, 2)
		}
		switch f.Kind {
		case Long, Int:
			b = binary.AppendVarint(b, v.I)
		case String:
			if v.B != nil {
				b = binary.AppendVarint(b, int64(len(v.B)))
				b = append(b, v.B...)
			} else {
				b = binary.AppendVarint(b, int64(len(v.S)))
				b = append(b, v.S...)
			}
		case Boolean:
			if v.Bool {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case TimestampMillis:
			b = binary.AppendVarint(b, v.T.UnixMilli())
		case TimestampMicros:
			b = binary.AppendVarint(b, v.T.UnixMicro())
		case StringMap:
			if len(v.M) > 0 {
				b = binary.AppendVarint(b, int64(len(v.M)))
				for _, k := range sortedKeys(v.M) {
					b = appendAvroString(b, k)
					b = appendAvroString(b, v.M[k])
				}
			}
			b = append(b, 0)
		case StringMapMap:
			if len(v.G) > 0 {
				b = binary.AppendVarint(b, int64(len(v.G)))
				for _, g := range v.G {
					b = appendAvroString(b, g.Key)
					if len(g.Pairs) > 0 {
						b = binary.AppendVarint(b, int64(len(g.Pairs)))
						for _, p := range g.Pairs {
							b = appendAvroString(b, p.Name)
							b = appendAvroString(b, p.Value)
						}
					}
					b = append(b, 0)
				}
			}
			b = append(b, 0)
		}
	}
	return b
}

func appendAvroString(b []byte, s string) []byte {
	b = binary.AppendVarint(b, int64(len(s)))
	return append(b, s...)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// AppendJSON appends the JSON object of the event vs to b: fields in
// schema order, nulls and false booleans omitted.
func (s *Schema) AppendJSON(b []byte, vs []Value) []byte {
	b = append(b, '{')
	first := true
	for i := range s.Fields {
		f, v := &s.Fields[i], &vs[i]
		if (f.Nullable && v.Null) || (f.Kind == Boolean && !v.Bool) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = jsonw.AppendString(b, f.Name)
		b = append(b, ':')
		switch f.Kind {
		case Long, Int:
			b = strconv.AppendInt(b, v.I, 10)
		case String:
			if v.B != nil {
				b = jsonw.AppendString(b, v.B)
			} else {
				b = jsonw.AppendString(b, v.S)
			}
		case Boolean:
			b = append(b, "true"...)
		case TimestampMillis, TimestampMicros:
			switch f.JSONTime {
			case Millis:
				b = strconv.AppendInt(b, v.T.UnixMilli(), 10)
			case RFC3339UTC:
				b = append(b, '"')
				b = v.T.UTC().AppendFormat(b, time.RFC3339Nano)
				b = append(b, '"')
			default:
				b = append(b, '"')
				b = v.T.AppendFormat(b, time.RFC3339Nano)
				b = append(b, '"')
			}
		case StringMap:
			b = append(b, '{')
			for j, k := range sortedKeys(v.M) {
				if j > 0 {
					b = append(b, ',')
				}
				b = jsonw.AppendString(b, k)
				b = append(b, ':')
				b = jsonw.AppendString(b, v.M[k])
			}
			b = append(b, '}')
		case StringMapMap:
			b = append(b, '{')
			for j, g := range v.G {
				if j > 0 {
					b = append(b, ',')
				}
				b = jsonw.AppendString(b, g.Key)
				b = append(b, ":{"...)
				for k, p := range g.Pairs {
					if k > 0 {
						b = append(b, ',')
					}
					b = jsonw.AppendString(b, p.Name)
					b = append(b, ':')
					b = jsonw.AppendString(b, p.Value)
				}
				b = append(b, '}')
			}
			b = append(b, '}')
		}
	}
	return append(b, '}')
}
