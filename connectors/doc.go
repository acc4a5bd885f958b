// Package connectors is weir's Connect-style runtime: Source and Sink
// interfaces (connector.go, with their contracts), the push-source
// contract beside the poll one (push.go: a PushSource that receives data,
// an HTTP endpoint or a syslog listener, hands batches to a Pusher and
// learns each batch's fate; Push runs it as a Source, so pushed records
// get the runtime's producer, dead letters, metrics and a pipeline's
// transforms; NewPushed is the same keeping the endpoint at hand, the one
// Source type of the push kinds; no per-record work runs under a lock
// there: batches are queued and their fates counted with atomics), a
// Registry of connector
// kinds each with a declared config Spec (spec.go, config.go; nested labelled
// blocks of settings in blocks.go; RegistryConfigField, the Avro kinds'
// schema_registry_config opened by kafkaclient.OpenRegistry), the tasks
// that run them against a broker over the Kafka protocol (franz-go), source
// positions stored in a compacted offsets topic (offsets.go; exactly-once
// sources, KIP-618 style, write records and positions in one Kafka
// transaction per commit interval: source_txn.go), sink progress as
// consumer-group offsets committed after Sink.Flush (exactly-once sinks,
// SinkOptions.ExactlyOnce: a TransactionalSink produces through the
// task's transactional client, and its records and the consumed offsets
// are one transaction per flush: sink_txn.go), retries with
// exponential backoff and jitter, per-connector dead-letter topics, and the
// per-connector metrics (metrics.go). Optional capabilities are separate
// interfaces: Committer, PartitionAware, TransactionalSink, RawSource (raw.go: a source
// hands in-process transforms its event's fields instead of an encoded
// value), and Unwrapper (a wrapping source, such as a pipeline's
// transforms, lets the runtime find the inner one's capabilities). Each
// technology (file tail, MySQL binlog, Elasticsearch) has a
// folder of its own.
package connectors
