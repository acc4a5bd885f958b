// Package kafkasink is the "kafka" sink: it copies the records of its
// topics (key, value, headers, timestamp) to a topic of a Kafka-compatible
// cluster, weir's own or another one.
//
// Delivery: Write hands records to a franz-go producer (acks=all,
// idempotent); Flush waits until every one is acknowledged and produces
// again the ones that failed (returning a retriable error, so the runtime
// calls Flush again), so consumer offsets are committed only for records
// the destination has. Records may be repeated after a crash
// (at-least-once), never lost. A record the destination refuses for good
// (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_RECORD,
// INVALID_TIMESTAMP) is produced again alone, since the refusal may be
// its batch's; refused alone, it goes to the dead-letter topic.
package kafkasink
