// Package metadata owns the cluster metadata of a weir broker: the cluster
// id, the registered brokers, the topics (name, topic id, partitions with
// their replicas, leader and leader epoch) and each topic's config
// overrides (Kafka topic-config names to string values).
//
// The metadata is a state machine. Every change is a Record (InitCluster,
// RegisterBroker, CreateTopic, DeleteTopic, CreatePartitions,
// AlterTopicConfig, ChangePartition — a partition's leader, leader epoch,
// ISR and partition epoch, and during a reassignment its replicas with
// the adding and removing ones (reassign.go) — FenceBroker, CreateACLs/DeleteACLs (ACLs
// with their ids, acls.go), ClientQuota: one quota value of a user /
// client-id entity, quota.go, and UserScramCredential, a user's salted
// SCRAM credential for one mechanism or its removal, scram.go); Image.Apply
// validates a record against the current image and returns the next image without
// doing any I/O. The Build* functions decide records from requests
// (replica assignment over the live brokers, ISR changes checked against
// the leader and partition epochs; BuildElectLeaders in elect.go:
// preferred and unclean elections of Kafka's ElectLeaders), so the
// single-node store and the controller decide alike. A Store decides how records become durable:
//
//   - FileStore (single node, now): appends each record to
//     <data-dir>/__weir_metadata.log, framed as
//
//     +------------+-------------+---------------------------+
//     | length u32 | crc32c u32  | JSON-encoded record (len) |
//     +------------+-------------+---------------------------+
//
//     fsyncs, then applies it. A write that fails (a full disk) is cut
//     off, so the next record never follows torn bytes; if the cut or an
//     fsync fails, every later write fails until a restart, as a partition
//     log goes offline. At start it replays the file, truncates a torn
//     tail and, when the file holds many superseded records, rewrites it
//     as a snapshot (write temp file, fsync, rename).
//
//   - broker/controller puts the same records behind a hashicorp/raft
//     quorum and applies them on every node in log order.
//
// Readers take an *Image (immutable, swapped atomically), so the Kafka
// handlers read a consistent view without locks. Watchers registered with
// Watch see every applied record in order, after the image that contains
// it is visible; the Kafka server uses that to open and delete partition
// logs.
package metadata
