// Package schemas owns Avro records in the Confluent wire format, the schema
// registry (REST API compatible with Confluent Schema Registry, stored in a
// compacted _schemas topic; sub-package registry), compatibility checks and
// writer-to-reader resolution.
//
// # Files
//
//	schema.go    Parse: Avro schema JSON → *Schema (a graph of *Node), with
//	             validation, Parsing Canonical Form, Rabin fingerprint and
//	             the Identity form the registry dedups by
//	wire.go      Confluent framing: 0x00, 4-byte big-endian id, Avro binary
//	binary.go    Avro binary primitives (sticky-error reader, appenders)
//	encode.go    Encoder: native value → Avro binary, compiled per schema
//	decode.go    Decoder: Avro binary → native value, compiled per
//	             (writer, reader) pair: the resolution plan (field defaults,
//	             removed fields skipped without decoding, promotions
//	             int→long→float→double and string↔bytes, enums with reader
//	             default symbols, union branch selection, aliases of fields
//	             and named types, nested and recursive records)
//	defaults.go  field defaults (JSON) → native values
//	compat.go    compatibility levels and checks with Confluent-style reasons
//	serde.go     Serde: id → codec cache and (id, reader) → plan cache with
//	             lock-free reads, over a Source (a registry client)
//
// # Native form
//
// Values are goavro's native form, so goavro codecs and this package are
// interchangeable: records and maps are map[string]any, arrays []any, a
// union value is nil or map[string]any{branchName: value}, enums are
// strings, fixed and bytes are []byte, int/long/float/double are
// int32/int64/float32/float64, and the logical types goavro supports
// (date, time-millis, time-micros, timestamp-millis, timestamp-micros,
// decimal) are time.Time, time.Duration and *big.Rat. goavro itself is
// used for Avro's JSON encoding (weir produce/consume --value-schema) and
// as a second opinion when validating schemas; the binary hot path is
// weir's own compiled code, which also resolves schemas (goavro does not).
//
// # Identity
//
// The Parsing Canonical Form strips defaults and logical types, so two
// schemas with the same canonical form may still mean different things.
// Schema.Identity is the canonical form plus defaults, aliases, enum
// defaults, field order and logical types: the registry gives one id to
// all schema texts with the same identity, so formatting, attribute order,
// short versus full names and doc strings do not create new ids or
// versions.
package schemas
