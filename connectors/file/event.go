package file

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/schemas"
)

// EventSchema is the Avro schema of the records the file source writes,
// registered as "<topic>-value".
const EventSchema = `{
  "type": "record",
  "name": "LogEvent",
  "namespace": "weir.logs",
  "doc": "One line (or multiline event) read from a file by weir's file source.",
  "fields": [
    {"name": "timestamp", "type": {"type": "long", "logicalType": "timestamp-millis"}, "doc": "When weir read the event."},
    {"name": "host", "type": "string", "doc": "Host name of the machine that read the file."},
    {"name": "file", "type": "string", "doc": "Path of the file (as matched by the include globs)."},
    {"name": "offset", "type": "long", "doc": "Byte offset of the event's first byte in the file."},
    {"name": "message", "type": "string", "doc": "The line, without its line ending; multiline events joined by newlines."},
    {"name": "truncated", "type": "boolean", "default": false, "doc": "True when the line was longer than max_line_bytes and was cut."},
    {"name": "fields", "type": ["null", {"type": "map", "values": "string"}], "default": null, "doc": "Parsed or configured fields."}
  ]
}`

// Event is one log event.
type Event struct {
	Time      time.Time
	Host      string
	File      string
	Offset    int64
	Message   []byte
	Truncated bool
	Fields    map[string]string // nil: null
}

// Encoder turns events into record values.
//
// Contract: Append appends the encoding of e to b and returns it; it is
// called from one goroutine. Init is called once before the first Append
// with the destination topic (to register a schema).
type Encoder interface {
	Init(ctx context.Context, topic string) error
	Append(b []byte, e *Event) []byte
}

// AvroEncoder writes Confluent-framed Avro with EventSchema, registered
// in a schema registry under "<topic>-value".
type AvroEncoder struct {
	// Registry is the schema registry client.
	Registry *sr.Client
	id       int32
}

// Init registers EventSchema as "<topic>-value" and keeps its id.
func (a *AvroEncoder) Init(ctx context.Context, topic string) error {
	if _, err := schemas.Parse(EventSchema); err != nil {
		return fmt.Errorf("log event schema: %w", err)
	}
	ss, err := a.Registry.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: EventSchema, Type: sr.TypeAvro})
	if err != nil {
		return fmt.Errorf("registering the log event schema as %s-value: %w", topic, err)
	}
	a.id = int32(ss.ID)
	return nil
}

// ID is the registered schema id (after Init).
func (a *AvroEncoder) ID() int32 { return a.id }

// Append writes the framed Avro binary of e: a hand-unrolled encoder of
// EventSchema, checked byte for byte against schemas.Encoder in tests.
func (a *AvroEncoder) Append(b []byte, e *Event) []byte {
	b = schemas.AppendHeader(b, a.id)
	return appendEventAvro(b, e)
}

func appendEventAvro(b []byte, e *Event) []byte {
	b = binary.AppendVarint(b, e.Time.UnixMilli())
	b = appendAvroString(b, e.Host)
	b = appendAvroString(b, e.File)
	b = binary.AppendVarint(b, e.Offset)
	b = binary.AppendVarint(b, int64(len(e.Message)))
	b = append(b, e.Message...)
	if e.Truncated {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	if e.Fields == nil {
		return append(b, 0) // union branch 0: null
	}
	b = append(b, 2) // union branch 1 (zigzag 1)
	if len(e.Fields) > 0 {
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = binary.AppendVarint(b, int64(len(keys)))
		for _, k := range keys {
			b = appendAvroString(b, k)
			b = appendAvroString(b, e.Fields[k])
		}
	}
	return append(b, 0) // end of map blocks
}

func appendAvroString(b []byte, s string) []byte {
	b = binary.AppendVarint(b, int64(len(s)))
	return append(b, s...)
}

// JSONEncoder writes events as JSON objects (for topics without a
// schema).
type JSONEncoder struct{}

// Init does nothing.
func (JSONEncoder) Init(context.Context, string) error { return nil }

// Append writes e as one JSON object.
func (JSONEncoder) Append(b []byte, e *Event) []byte {
	b = append(b, `{"timestamp":`...)
	b = fmt.Appendf(b, "%d", e.Time.UnixMilli())
	b = append(b, `,"host":`...)
	b = appendJSONString(b, []byte(e.Host))
	b = append(b, `,"file":`...)
	b = appendJSONString(b, []byte(e.File))
	b = fmt.Appendf(b, `,"offset":%d,"message":`, e.Offset)
	b = appendJSONString(b, e.Message)
	if e.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	if e.Fields != nil {
		b = append(b, `,"fields":{`...)
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, []byte(k))
			b = append(b, ':')
			b = appendJSONString(b, []byte(e.Fields[k]))
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as a JSON string; invalid UTF-8 bytes become
// U+FFFD.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := decodeRune(s[i:])
		if r == 0xFFFD && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
