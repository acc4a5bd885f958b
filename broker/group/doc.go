// Package group is weir's group coordinator for Kafka's classic group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), KIP-848's
// consumer group protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe)
// and the offset APIs (OffsetCommit, OffsetFetch, OffsetDelete), plus
// DescribeGroups, ListGroups and DeleteGroups. Both kinds of groups share
// the offsets and __consumer_offsets; ListGroups tells their types apart
// ("classic", "consumer"); an empty classic group becomes a consumer group
// on the first consumer-protocol join, an empty consumer group classic on
// the first JoinGroup.
//
// It owns:
//
//	machine.go   Machine: every group's state, driven by events and an
//	             injected clock, with no I/O (style.md #5). It returns what
//	             to persist (Writes) and answers requests through reply
//	             callbacks; tests drive it deterministically.
//	join.go      JoinGroup / SyncGroup / Heartbeat / LeaveGroup and the
//	             rebalance state machine (Empty -> PreparingRebalance ->
//	             CompletingRebalance -> Stable).
//	offsets.go   OffsetCommit / OffsetFetch / OffsetDelete, offset expiry.
//	txn.go       offsets in transactions (KIP-98, KIP-447): TxnOffsetCommit
//	             (v3+ generation/member checks fencing zombies) written
//	             as a transactional batch of the producer, pending per
//	             producer id until the transaction's marker on the
//	             partition (TxnMarker: commit makes them committed unless
//	             a later commit of the partition was written, abort drops
//	             them); OffsetFetch require_stable answers
//	             UNSTABLE_OFFSET_COMMIT while one is pending; OffsetDelete,
//	             DeleteGroups and expiry as Kafka's OffsetMetadataManager.
//	admin.go     DescribeGroups / ListGroups / DeleteGroups.
//	consumer.go  KIP-848: ConsumerGroupHeartbeat (join, leave, static
//	             leave, heartbeat), group epochs, the member epoch /
//	             revocation state machine (Kafka's CurrentAssignmentBuilder),
//	             session and rebalance timeouts.
//	consumer_assign.go  server-side assignors (uniform, range;
//	             group.consumer.assignors) and subscription resolution
//	             (topic names, RE2 regular expressions).
//	consumer_admin.go   ConsumerGroupDescribe; member-epoch checks of
//	             OffsetCommit (v9+, KIP-1251), TxnOffsetCommit, OffsetFetch v9.
//	consumer_records.go the members' records (Kafka's
//	             ConsumerGroupMemberMetadata and CurrentMemberAssignment,
//	             key versions 5 and 8), restored when a partition loads.
//	records.go   the __consumer_offsets records: Kafka's key/value layout
//	             (kmsg OffsetCommitKey/Value v1/v3, GroupMetadataKey/Value
//	             v2/v3), batch building (plain and transactional) and
//	             parsing (ReplayBatches: records with their producer,
//	             markers), partitionFor.
//	coordinator.go Coordinator: the Machine behind a mutex, a timer
//	             goroutine, one writer goroutine per __consumer_offsets
//	             partition (group commit: everything queued while an append
//	             runs goes into the next single batch; a transactional Write
//	             gets a batch of its own) and partition loading,
//	             over the small Storage interface the Kafka server implements.
//	             A failed append reverts its partition: unloaded, then
//	             loaded from its log once the log is committed (revert), so
//	             no answer rests on records a leader change can truncate.
//
// State of a group lives in the compacted topic __consumer_offsets,
// partition abs(javaHashCode(group)) % partitions as in Kafka; the
// coordinator of a group is the leader of that partition. Offset records
// are keyed (group, topic, partition), group records (group); deletes are
// tombstones. Loading a partition replays its records: a transactional
// batch's offsets stay pending until its producer's commit or abort
// marker (a control batch) is replayed; a marker written while the
// partition loads is applied when loading finishes.
//
// Lock order: Coordinator.mu is the only lock around the Machine; reply
// callbacks run under it and must not block (they send to buffered
// channels).
package group
