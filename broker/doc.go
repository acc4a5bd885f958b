// Package broker is weir's Kafka-compatible core. It holds no code itself;
// its subpackages own one concern each:
//
//   - log: the partition log on disk (segments, indexes, recovery,
//     retention, compaction, zero-copy reads).
//   - kafka: the Kafka wire-protocol server, one file per API key.
//   - replica, controller, group, txn: replication, the metadata quorum,
//     consumer groups and producer state (later issues).
package broker
