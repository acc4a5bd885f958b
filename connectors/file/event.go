package file

import (
	"time"

	enc "weir/connectors/internal/event"
)

// eventSchema describes the records the file source writes: one
// description gives the Avro schema, the Avro encoder and the JSON
// encoder (connectors/internal/event).
var eventSchema = enc.Schema{
	Name: "LogEvent", Namespace: "weir.logs",
	Doc: "One line (or multiline event) read from a file by weir's file source.",
	Fields: []enc.Field{
		{Name: "timestamp", Kind: enc.TimestampMillis, Doc: "When weir read the event.", JSONTime: enc.Millis},
		{Name: "host", Kind: enc.String, Doc: "Host name of the machine that read the file."},
		{Name: "file", Kind: enc.String, Doc: "Path of the file (as matched by the include globs)."},
		{Name: "offset", Kind: enc.Long, Doc: "Byte offset of the event's first byte in the file."},
		{Name: "message", Kind: enc.String, Doc: "The line, without its line ending; multiline events joined by newlines."},
		{Name: "truncated", Kind: enc.Boolean, Default: "false", Doc: "True when the line was longer than max_line_bytes and was cut."},
		{Name: "fields", Kind: enc.StringMap, Nullable: true, Doc: "Parsed or configured fields."},
	},
}

// EventSchema is the Avro schema of the records the file source writes,
// registered as "<topic>-value".
var EventSchema = eventSchema.AvroSchema()

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

// Encoder turns events into record values: connectors/internal/event's
// contract (Init once with the topic, then Append).
type Encoder = enc.Encoder[Event]

// AvroEncoder writes Confluent-framed Avro with EventSchema, registered
// in a schema registry under "<topic>-value" (set Registry).
type AvroEncoder = enc.Avro[Event, *Event]

// JSONEncoder writes events as JSON objects (for topics without a
// schema).
type JSONEncoder = enc.JSON[Event, *Event]

// EventSchema implements connectors/internal/event.Event.
func (*Event) EventSchema() *enc.Schema { return &eventSchema }

// EventValues implements connectors/internal/event.Event: e's field
// values in eventSchema's order.
func (e *Event) EventValues() enc.Values {
	return enc.Values{
		{T: e.Time}, {S: e.Host}, {S: e.File}, {I: e.Offset}, {B: e.Message},
		{Bool: e.Truncated}, {Null: e.Fields == nil, M: e.Fields},
	}
}

func appendEventAvro(b []byte, e *Event) []byte { return enc.AppendAvro(b, e) }
