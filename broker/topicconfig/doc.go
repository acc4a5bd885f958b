// Package topicconfig owns Kafka's topic configuration vocabulary as weir
// speaks it: the config names (exactly Kafka's: retention.ms, cleanup.policy,
// segment.bytes, ...), their types, defaults, valid ranges and broker-level
// synonyms (log.retention.hours, log.segment.bytes, ...), and the resolution of
// a topic's overrides against the broker's configuration.
//
// It does no I/O and keeps no state beyond values: the metadata layer stores a
// topic's overrides (map[string]string, only what the user set), and every
// consumer resolves them here:
//
//	broker := topicconfig.Defaults()            // or NewBroker(static) from flags
//	res, err := broker.Resolve(overrides)        // validates names and values
//	res.RetentionMs, res.Compact, ...            // typed effective values
//	entries := res.Describe(nil, true, true)     // DescribeConfigs entries
//	next, err := broker.ApplyOps(overrides, ops) // IncrementalAlterConfigs
//
// The conversion of a Resolved to broker/log's Config lives with its user,
// the partition table in broker/kafka (logConfig).
//
// Errors wrap ErrUnknownConfig (a name Kafka does not accept for topics) or
// ErrInvalidValue (a value that does not parse, is out of range, or conflicts
// with another setting); both map to the Kafka error INVALID_CONFIG (40). The
// message names the key, the value and what is allowed.
//
// What weir honours. Every name Kafka accepts for a topic is accepted, checked
// and stored, and DescribeConfigs reports it; weir acts on these:
//
//   - by broker/log (through LogConfig): cleanup.policy, retention.ms,
//     retention.bytes, segment.bytes (and the test-only internal.segment.bytes),
//     segment.ms, index.interval.bytes, delete.retention.ms,
//     min.compaction.lag.ms, flush.messages, flush.ms;
//   - by the Produce path: max.message.bytes, message.timestamp.type,
//     message.timestamp.before.max.ms, message.timestamp.after.max.ms,
//     min.insync.replicas.
//
// The rest (segment.index.bytes, segment.jitter.ms, max.compaction.lag.ms,
// min.cleanable.dirty.ratio, file.delete.delay.ms, preallocate,
// compression.type and its levels, unclean.leader.election.enable, the
// replication throttles, tiered-storage settings and the deprecated
// message.format.version / message.downconversion.enable /
// message.timestamp.difference.max.ms) are stored and described but have no
// effect yet; Def.Honoured says which is which.
//
// Dynamic broker configs (dynamic.go). A Broker from NewBroker is live: the
// Kafka server feeds it the dynamic overrides of the cluster default and of
// its node from the metadata (SetDynamic), and every reader sees the
// effective value (dynamic per-broker > dynamic default > static >
// default), topic resolution included. What may change at runtime is
// Kafka 4.4's set (IsDynamic): the broker defaults of topic configs
// (log.retention.ms, log.segment.bytes, log.cleanup.policy,
// message.max.bytes, min.insync.replicas, ...: applied at once to every
// topic without an override), max.connections*, producer.id.expiration.ms,
// transaction.partition.verification.enable, the replication throttles
// (leader/follower.replication.throttled.rate, read by broker/replica),
// and the log.cleaner.* settings, which broker/log's cleaner reads before
// every round (backoff.ms, dedupe.buffer.size with threads and
// io.buffer.load.factor, io.max.bytes.per.second; the topic defaults
// delete.retention.ms, min/max.compaction.lag.ms and min.cleanable.ratio
// through topic resolution). No effect in weir's design: io.buffer.size
// (segments are read through the file cache and rewritten whole) and the
// number of threads itself (one cleaner goroutine per broker; threads only
// divides the dedupe buffer, as in Kafka). Everything else,
// num.partitions and log.retention.hours included, is static in Kafka and
// here ("Cannot update these configs dynamically").
//
// Version note: weir follows Kafka 4.x, where segment.bytes is at least
// 1 MiB; tests that need small segments set internal.segment.bytes, as
// Kafka's own tests do. The deprecated names removed in Kafka 4.0 are still
// accepted (as Kafka 3.x did) so older tooling keeps working.
package topicconfig
