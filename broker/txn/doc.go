// Package txn owns producer ids and idempotent produce: the producer-id
// allocator behind InitProducerId, and each partition's producer state (for
// every producer id its epoch and last 5 batches) that turns resent batches
// into duplicates answered with their original offsets and rejects
// out-of-order ones. Transactions come later and will live here too.
//
// # Layers
//
//   - State (state.go) is a pure state machine: Check(batches) applies
//     Kafka's rules and returns ok, a duplicate (with the original
//     offsets) or an error; Apply(batches, firstOffset, ...) records an
//     append; Expire drops idle producers. No I/O, no clock, no locks; the
//     data-driven tests in testdata/state_*.txt drive it.
//   - Snapshot encoding (snapshot.go): the state as of a log end offset,
//     CRC-checked, in "<offset>.snapshot" files in the partition directory.
//   - Partition (partition.go) joins State to a partition log: it loads the
//     newest usable snapshot and replays batch headers from there to the log
//     end (Log.ScanBatches), serializes check+append+apply, snapshots
//     periodically and at Close, and expires idle producers.
//   - Allocator (pid.go) hands out producer ids, reserving them in blocks
//     from a BlockStore (FileBlockStore: a file in the data directory, made
//     durable before any id of the block is used), so ids are never reused
//     after a restart.
//
// # Rules (Kafka's ProducerAppendInfo, Kafka 2.5+)
//
//   - duplicate: same producer, same epoch, and first and last sequence equal
//     to one of the 5 retained batches → append nothing, answer with the
//     original base offset;
//   - epoch below the producer's current epoch → INVALID_PRODUCER_EPOCH (47);
//   - a newer epoch must start at sequence 0, else
//     OUT_OF_ORDER_SEQUENCE_NUMBER (45);
//   - the same epoch must continue at last sequence + 1, wrapping from
//     MaxInt32 to 0, else OUT_OF_ORDER_SEQUENCE_NUMBER (45);
//   - a producer this partition has no state for (new, expired after
//     producer.id.expiration.ms, or all its records deleted) is accepted at
//     any sequence. Kafka before 2.5 answered UNKNOWN_PRODUCER_ID (59) when
//     such a producer's sequence was not 0; Kafka 2.5+ does not, because the
//     client's reset-and-resend then reintroduces the duplicates idempotence
//     exists to prevent. weir follows Kafka 2.5+ and never returns 59.
//
// # Concurrency
//
// The check, the log append and the state update must be one atomic step
// per partition, or two resends of one batch could both pass the check.
// Partition.Append makes that the only way to do it:
//
//	res, err := ps.Append(records, func() (log.AppendInfo, error) {
//	        return plog.Append(records, leaderEpoch)
//	})
//
// Append parses the batch headers, takes the partition's producer-state
// lock, checks, calls the function (which must append exactly records to
// the log), records the result and releases the lock. A duplicate returns
// the original offsets without calling the function; a rule violation
// returns an error for which KafkaCode gives the code. Appends without a
// producer id skip the lock and the check. The function must not call back
// into the Partition.
//
// Close writes a final snapshot; call it before closing the log. A partition
// being deleted uses Discard instead, so no snapshot is written into a
// directory that is going away.
package txn
