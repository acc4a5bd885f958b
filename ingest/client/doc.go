// Package client owns the franz-go client settings weir's own tools share:
// parsing --brokers, --acks and --compression the same way everywhere, and
// the base producer options (weir's partitioner from ingest/partition, the
// acks and idempotence that go together, the batch codec). The CLI
// (`weir produce|consume|topic|bench`) and, later, connectors build their
// kgo clients from here so every weir producer partitions like Java's.
package client
