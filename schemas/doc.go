// Package schemas owns Avro records in the Confluent wire format, the schema
// registry (REST API compatible with Confluent Schema Registry, stored in a
// compacted _schemas topic), compatibility checks and writer-to-reader
// resolution.
package schemas
