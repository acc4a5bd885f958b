package connectors

// RawField is one named value of a raw record's event (see RawSource).
type RawField struct {
	Name  string
	Value any
}

// RawSource is an optional Source capability for in-process consumers
// that build every record's value themselves (pipeline transforms):
// rather than encoding each event into a value (a file source's JSON or
// Avro event around the line) that the consumer would decode again, the
// source hands over the event's fields.
//
// Contract: EmitRaw is called at most once, before Open. Afterwards
// every record Poll returns has Fields set to the event's fields, in the
// order of the source's encoded values, with values of the types nil,
// bool, string, int64, []byte and map[string]string, and Value set to
// the payload's bytes (a file source: the line, also in Fields as a
// []byte). Like the rest of the record, Fields belong to the runtime
// after Poll; a source may share a field's value (not the slice) between
// records, so consumers must not modify values.
type RawSource interface {
	Source
	EmitRaw()
}
