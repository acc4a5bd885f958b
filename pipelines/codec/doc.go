// Package codec turns record values into the native values of package
// expr and back: what a pipeline reads from and writes to topics, and
// the internal form of an aggregating stream's state.
//
//   - Decoder reads a value: Confluent-framed Avro by its schema id (with
//     a schemas.Serde over the registry, srclient.Source), a JSON
//     object, or any other bytes as {"message": "<value>"}; Avro values
//     are normalized into the native domain guided by their schema.
//   - Encoder writes an Object in a topic's format: Avro with the topic's
//     schema (NewAvroEncoder; scalars coerced where that is lossless
//     enough for logs) or JSON (the JSON encoder).
//   - ParseJSON, ParseObjectInto and AppendJSON are a small JSON reader
//     and writer over the native domain: objects keep their field order
//     and duplicates, integers stay int64, and strings without escapes
//     share the input's memory (the per-record hot path of parse_json and
//     of JSON topics).
//   - AppendState and DecodeState are the tagged binary form of stream
//     state (stores, changelogs, repartition records), in which every
//     value reads back with its type.
//
// The decoders are fuzzed (FuzzJSON, FuzzDecodeState).
//
// # Files
//
//	codec.go  Decoder, Encoder: Avro and JSON record values
//	json.go   the JSON reader and writer
//	state.go  the tagged encoding of stream state
package codec
