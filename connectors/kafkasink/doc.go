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
//
// With exactly_once = true (connectors.SinkOptions.ExactlyOnce; the
// destination must be the cluster the sink reads), the copies go through
// the runtime's transactional client (connectors.TransactionalSink), and
// each flush is one transaction with the consumed offsets: readers with
// read_committed see each record once. A failed copy aborts the
// transaction and the input is consumed again; a copy refused for good
// stops the sink (leaving it out would break the exactly-once copy).
package kafkasink
