package syslog

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/schemas"
)

// EventSchema is the Avro schema of the records the syslog endpoint
// writes, registered as "<topic>-value". Absent header fields are null.
const EventSchema = `{
  "type": "record",
  "name": "SyslogEvent",
  "namespace": "weir.logs",
  "doc": "One syslog message received by weir's syslog endpoint.",
  "fields": [
    {"name": "received", "type": {"type": "long", "logicalType": "timestamp-millis"}, "doc": "When weir received the message."},
    {"name": "timestamp", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": null, "doc": "The message's TIMESTAMP."},
    {"name": "format", "type": "string", "doc": "rfc5424, rfc3164 or unparsed."},
    {"name": "facility", "type": ["null", "int"], "default": null},
    {"name": "severity", "type": ["null", "int"], "default": null},
    {"name": "hostname", "type": ["null", "string"], "default": null},
    {"name": "app_name", "type": ["null", "string"], "default": null, "doc": "APP-NAME (RFC 5424) or TAG (RFC 3164)."},
    {"name": "proc_id", "type": ["null", "string"], "default": null},
    {"name": "msg_id", "type": ["null", "string"], "default": null},
    {"name": "structured_data", "type": ["null", {"type": "map", "values": {"type": "map", "values": "string"}}], "default": null, "doc": "SD-ID → PARAM-NAME → PARAM-VALUE (a repeated name keeps its last value)."},
    {"name": "message", "type": "string", "doc": "MSG, or the whole message when it did not parse."},
    {"name": "parse_error", "type": ["null", "string"], "default": null, "doc": "Why the message did not parse (null when it did)."},
    {"name": "truncated", "type": "boolean", "default": false, "doc": "True when the message was longer than max_message_bytes and was cut."},
    {"name": "peer", "type": "string", "doc": "Address of the sender (ip:port)."},
    {"name": "transport", "type": "string", "doc": "tcp or udp."}
  ]
}`

// Event is one received message with where and when it came from.
type Event struct {
	Message
	Received  time.Time
	Peer      string
	Transport string // "tcp" or "udp"
}

// Encoder turns events into record values.
//
// Contract: Init is called once with the destination topic before the
// first Append (to register a schema); Append appends the encoding of e
// to b and returns it, and is safe for concurrent use.
type Encoder interface {
	Init(ctx context.Context, topic string) error
	Append(b []byte, e *Event) []byte
}

// AvroEncoder writes Confluent-framed Avro with EventSchema, registered
// in a schema registry under "<topic>-value".
type AvroEncoder struct {
	Registry *sr.Client
	id       int32
}

// Init registers EventSchema as "<topic>-value" and keeps its id.
func (a *AvroEncoder) Init(ctx context.Context, topic string) error {
	if _, err := schemas.Parse(EventSchema); err != nil {
		return fmt.Errorf("syslog event schema: %w", err)
	}
	ss, err := a.Registry.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: EventSchema, Type: sr.TypeAvro})
	if err != nil {
		return fmt.Errorf("registering the syslog event schema as %s-value: %w", topic, err)
	}
	a.id = int32(ss.ID)
	return nil
}

// Append writes the framed Avro binary of e: a hand-unrolled encoder of
// EventSchema, checked against schemas.Encoder in tests.
func (a *AvroEncoder) Append(b []byte, e *Event) []byte {
	return appendEventAvro(schemas.AppendHeader(b, a.id), e)
}

func appendEventAvro(b []byte, e *Event) []byte {
	b = binary.AppendVarint(b, e.Received.UnixMilli())
	if e.Timestamp.IsZero() {
		b = append(b, 0)
	} else {
		b = append(b, 2)
		b = binary.AppendVarint(b, e.Timestamp.UnixMicro())
	}
	b = appendString(b, e.Format.String())
	if e.Priority < 0 {
		b = append(b, 0, 0)
	} else {
		b = append(b, 2)
		b = binary.AppendVarint(b, int64(e.Facility()))
		b = append(b, 2)
		b = binary.AppendVarint(b, int64(e.Severity()))
	}
	for _, s := range [...]string{e.Hostname, e.AppName, e.ProcID, e.MsgID} {
		b = appendOptString(b, s)
	}
	if e.StructuredData == nil {
		b = append(b, 0)
	} else {
		b = append(b, 2)
		sd := sdMap(e.StructuredData)
		if len(sd.ids) > 0 {
			b = binary.AppendVarint(b, int64(len(sd.ids)))
		}
		for _, id := range sd.ids {
			ps := sd.params[id]
			b = appendString(b, id)
			if len(ps.names) > 0 {
				b = binary.AppendVarint(b, int64(len(ps.names)))
				for _, n := range ps.names {
					b = appendString(b, n)
					b = appendString(b, ps.values[n])
				}
			}
			b = append(b, 0)
		}
		b = append(b, 0)
	}
	b = appendString(b, e.Message.Message)
	b = appendOptString(b, e.ParseError)
	if e.Truncated {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = appendString(b, e.Peer)
	return appendString(b, e.Transport)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendVarint(b, int64(len(s)))
	return append(b, s...)
}

func appendOptString(b []byte, s string) []byte {
	if s == "" {
		return append(b, 0)
	}
	return appendString(append(b, 2), s)
}

type sdParams struct {
	names  []string
	values map[string]string
}

type sdIndex struct {
	ids    []string
	params map[string]*sdParams
}

// sdMap folds structured data into sorted maps (a repeated SD-ID merges
// its params; a repeated name keeps its last value).
func sdMap(els []SDElement) sdIndex {
	x := sdIndex{params: map[string]*sdParams{}}
	for _, e := range els {
		ps := x.params[e.ID]
		if ps == nil {
			ps = &sdParams{values: map[string]string{}}
			x.params[e.ID] = ps
			x.ids = append(x.ids, e.ID)
		}
		for _, p := range e.Params {
			if _, dup := ps.values[p.Name]; !dup {
				ps.names = append(ps.names, p.Name)
			}
			ps.values[p.Name] = p.Value
		}
	}
	sort.Strings(x.ids)
	for _, ps := range x.params {
		sort.Strings(ps.names)
	}
	return x
}

// JSONEncoder writes events as JSON objects with EventSchema's field
// names (times as RFC 3339 strings, absent fields omitted), for topics
// without a schema.
type JSONEncoder struct{}

// Init does nothing.
func (JSONEncoder) Init(context.Context, string) error { return nil }

// Append writes e as one JSON object.
func (JSONEncoder) Append(b []byte, e *Event) []byte {
	b = append(b, `{"received":"`...)
	b = e.Received.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if !e.Timestamp.IsZero() {
		b = append(b, `,"timestamp":"`...)
		b = e.Timestamp.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"format":"`...)
	b = append(b, e.Format.String()...)
	b = append(b, '"')
	if e.Priority >= 0 {
		b = append(b, `,"facility":`...)
		b = strconv.AppendInt(b, int64(e.Facility()), 10)
		b = append(b, `,"severity":`...)
		b = strconv.AppendInt(b, int64(e.Severity()), 10)
	}
	for _, f := range [...]struct{ k, v string }{{"hostname", e.Hostname}, {"app_name", e.AppName}, {"proc_id", e.ProcID}, {"msg_id", e.MsgID}} {
		if f.v != "" {
			b = append(b, `,"`...)
			b = append(b, f.k...)
			b = append(b, `":`...)
			b = appendJSONString(b, f.v)
		}
	}
	if e.StructuredData != nil {
		b = append(b, `,"structured_data":{`...)
		sd := sdMap(e.StructuredData)
		for i, id := range sd.ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, id)
			b = append(b, ":{"...)
			ps := sd.params[id]
			for j, n := range ps.names {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, n)
				b = append(b, ':')
				b = appendJSONString(b, ps.values[n])
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.Message.Message)
	if e.ParseError != "" {
		b = append(b, `,"parse_error":`...)
		b = appendJSONString(b, e.ParseError)
	}
	if e.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	b = append(b, `,"peer":`...)
	b = appendJSONString(b, e.Peer)
	b = append(b, `,"transport":"`...)
	b = append(b, e.Transport...)
	return append(b, `"}`...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s (valid UTF-8) as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
