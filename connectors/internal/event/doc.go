// Package event is the one event encoder of weir's sources: a source
// describes its event once (a Schema: fields with their types, nullability
// and docs) and gets from that one description the Avro schema text it
// registers, the Confluent-framed Avro binary of an event, and the JSON
// object of the same event. The file source's LogEvent and the syslog
// source's SyslogEvent are described this way.
//
// encoder.go turns that into the one Encoder contract of the sources
// (Init once with the topic, then Append): an event type implements
// Event (its Schema and its Values, handed over on the stack), and
// Avro[E] (Confluent-framed, the schema registered as "<topic>-value")
// and JSON[E] encode it; New picks one by a source's "encoding" setting.
//
// Encodings, per field kind (Avro / JSON):
//
//	Long, Int          zig-zag varint / number
//	String             length-prefixed bytes / JSON string (internal/jsonw)
//	Boolean            one byte / true, and omitted when false
//	TimestampMillis    long of Unix milliseconds / per Field.JSONTime
//	TimestampMicros    long of Unix microseconds / per Field.JSONTime
//	StringMap          map of strings, keys sorted / object, keys sorted
//	StringMapMap       map of maps of strings (Groups, sorted by the
//	                   caller) / object of objects
//
// A Nullable field is the Avro union ["null", T] with default null; a
// null value is the union's branch 0 in Avro and is omitted from the
// JSON object.
package event
