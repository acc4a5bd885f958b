// Package filesink is the "file" sink: it appends the records of its
// topics to a file, one line per record, and the record formatting shared
// with the "stdout" sink (Writer).
//
// Formats: "json" writes each value as one JSON object (Confluent-framed
// Avro values are decoded with the schema registry, unions as bare
// values, timestamps as RFC 3339), "raw" writes value bytes as they are,
// "envelope" wraps the JSON value with topic, partition, offset, key and
// timestamp.
//
// Delivery: Write buffers lines in memory; Flush writes them, and with
// fsync (the default) syncs the file before returning, so the runtime
// commits consumer offsets only for lines on disk. A restart resumes at
// the committed offsets: records are neither lost nor written twice by a
// clean stop (a crash between a write and its commit may repeat the last
// flush interval's lines, at-least-once).
package filesink
