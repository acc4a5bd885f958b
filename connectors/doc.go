// Package connectors is weir's Connect-style runtime: Source and Sink
// interfaces (connector.go, with their contracts), a Registry of connector
// kinds each with a declared config Spec (spec.go, config.go; nested labelled
// blocks of settings in blocks.go), the tasks
// that run them against a broker over the Kafka protocol (franz-go), source
// positions stored in a compacted offsets topic, sink progress as
// consumer-group offsets committed after Sink.Flush, retries with
// exponential backoff and jitter, per-connector dead-letter topics, and the
// per-connector metrics (metrics.go). Optional capabilities are separate
// interfaces: Committer, PartitionAware, and RawSource (raw.go: a source
// hands in-process transforms its event's fields instead of an encoded
// value). Each technology (file tail, MySQL
// binlog, Elasticsearch) has a folder of its own.
package connectors
