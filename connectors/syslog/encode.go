package syslog

import (
	"sort"
	"time"

	enc "weir/connectors/internal/event"
)

// eventSchema describes the records the syslog endpoint writes: one
// description gives the Avro schema, the Avro encoder and the JSON
// encoder (connectors/internal/event). Absent header fields are null.
var eventSchema = enc.Schema{
	Name: "SyslogEvent", Namespace: "weir.logs",
	Doc: "One syslog message received by weir's syslog endpoint.",
	Fields: []enc.Field{
		{Name: "received", Kind: enc.TimestampMillis, Doc: "When weir received the message.", JSONTime: enc.RFC3339UTC},
		{Name: "timestamp", Kind: enc.TimestampMicros, Nullable: true, Doc: "The message's TIMESTAMP.", JSONTime: enc.RFC3339},
		{Name: "format", Kind: enc.String, Doc: "rfc5424, rfc3164 or unparsed."},
		{Name: "facility", Kind: enc.Int, Nullable: true},
		{Name: "severity", Kind: enc.Int, Nullable: true},
		{Name: "hostname", Kind: enc.String, Nullable: true},
		{Name: "app_name", Kind: enc.String, Nullable: true, Doc: "APP-NAME (RFC 5424) or TAG (RFC 3164)."},
		{Name: "proc_id", Kind: enc.String, Nullable: true},
		{Name: "msg_id", Kind: enc.String, Nullable: true},
		{Name: "structured_data", Kind: enc.StringMapMap, Nullable: true, Doc: "SD-ID → PARAM-NAME → PARAM-VALUE (a repeated name keeps its last value)."},
		{Name: "message", Kind: enc.String, Doc: "MSG, or the whole message when it did not parse."},
		{Name: "parse_error", Kind: enc.String, Nullable: true, Doc: "Why the message did not parse (null when it did)."},
		{Name: "truncated", Kind: enc.Boolean, Default: "false", Doc: "True when the message was longer than max_message_bytes and was cut."},
		{Name: "peer", Kind: enc.String, Doc: "Address of the sender (ip:port)."},
		{Name: "transport", Kind: enc.String, Doc: "tcp or udp."},
	},
}

// EventSchema is the Avro schema of the records the syslog endpoint
// writes, registered as "<topic>-value".
var EventSchema = eventSchema.AvroSchema()

// Event is one received message with where and when it came from.
type Event struct {
	Message
	Received  time.Time
	Peer      string
	Transport string // "tcp" or "udp"
}

// Encoder turns events into record values: connectors/internal/event's
// contract (Init once with the topic, then Append, safe for concurrent
// use).
type Encoder = enc.Encoder[Event]

// AvroEncoder writes Confluent-framed Avro with EventSchema, registered
// in a schema registry under "<topic>-value" (set Registry).
type AvroEncoder = enc.Avro[Event, *Event]

// JSONEncoder writes events as JSON objects with EventSchema's field
// names (times as RFC 3339 strings, absent fields omitted), for topics
// without a schema.
type JSONEncoder = enc.JSON[Event, *Event]

func appendEventAvro(b []byte, e *Event) []byte { return enc.AppendAvro(b, e) }

// EventSchema implements connectors/internal/event.Event.
func (*Event) EventSchema() *enc.Schema { return &eventSchema }

// EventValues implements connectors/internal/event.Event: e's field
// values in eventSchema's order.
func (e *Event) EventValues() enc.Values {
	opt := func(s string) enc.Value { return enc.Value{Null: s == "", S: s} }
	vs := enc.Values{
		{T: e.Received}, {Null: e.Timestamp.IsZero(), T: e.Timestamp}, {S: e.Format.String()},
		{Null: e.Priority < 0}, {Null: e.Priority < 0},
		opt(e.Hostname), opt(e.AppName), opt(e.ProcID), opt(e.MsgID),
		{Null: e.StructuredData == nil}, {S: e.Message.Message}, opt(e.ParseError),
		{Bool: e.Truncated}, {S: e.Peer}, {S: e.Transport},
	}
	if e.Priority >= 0 {
		vs[3].I, vs[4].I = int64(e.Facility()), int64(e.Severity())
	}
	if e.StructuredData != nil {
		vs[9].G = sdGroups(e.StructuredData)
	}
	return vs
}

// sdGroups folds structured data into groups sorted by SD-ID with
// params sorted by name (a repeated SD-ID merges its params; a repeated
// name keeps its last value).
func sdGroups(els []SDElement) []enc.Group {
	idx := map[string]int{}
	var gs []enc.Group
	for _, e := range els {
		i, ok := idx[e.ID]
		if !ok {
			i = len(gs)
			idx[e.ID] = i
			gs = append(gs, enc.Group{Key: e.ID})
		}
	params:
		for _, p := range e.Params {
			for k := range gs[i].Pairs {
				if gs[i].Pairs[k].Name == p.Name {
					gs[i].Pairs[k].Value = p.Value
					continue params
				}
			}
			gs[i].Pairs = append(gs[i].Pairs, enc.Pair{Name: p.Name, Value: p.Value})
		}
	}
	sort.Slice(gs, func(a, b int) bool { return gs[a].Key < gs[b].Key })
	for _, g := range gs {
		sort.Slice(g.Pairs, func(a, b int) bool { return g.Pairs[a].Name < g.Pairs[b].Name })
	}
	return gs
}
