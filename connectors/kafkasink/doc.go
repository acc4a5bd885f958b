// Package kafkasink is the "kafka" sink: it copies the records of its
// topics (key, value, headers, timestamp) to a topic of a Kafka-compatible
// cluster, weir's own or another one.
//
// Delivery: Write hands records to a franz-go producer (acks=all,
// idempotent); Flush waits until every one is acknowledged and produces
// again the ones that failed (returning a retriable error, so the runtime
// calls Flush again), so consumer offsets are committed only for records
// the destination has. Records may be repeated after a crash
// (at-least-once), never lost.
package kafkasink
