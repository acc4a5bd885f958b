// Package jsonw writes JSON strings: AppendString appends s as a quoted
// JSON string, the one string writer behind every hand-built JSON
// encoding in weir (Avro JSON in schemas, pipeline values, file events,
// MySQL source positions, ingest events).
//
// For valid UTF-8 the output is byte for byte what encoding/json writes
// with HTML escaping off (json.Encoder.SetEscapeHTML(false), without the
// newline): `"` and `\` escaped, \b \f \n \r \t in their short forms,
// other bytes below 0x20 as \u00XX, U+2028 and U+2029 as \u2028 and
// \u2029 (JavaScript line terminators), everything else as is — so `<`,
// `>` and `&` stay readable in log records. Each byte of invalid UTF-8
// becomes U+FFFD, written as the character itself where encoding/json
// writes the escape \ufffd: both decode to the same string. The fuzz test
// holds it to encoding/json.
package jsonw
