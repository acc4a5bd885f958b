// Package txn owns producer ids and each partition's producer state: the
// producer-id allocator behind InitProducerId, and per partition (for every
// producer id its epoch, last 5 batches, ongoing transaction and last
// marker's coordinator epoch) what turns resent batches into duplicates
// answered with their original offsets, rejects out-of-order ones, and
// tracks transactions as Kafka's ProducerStateManager does.
//
// # Transactions (the partition side)
//
//   - A transactional batch of a producer with no transaction ongoing on
//     the partition starts one at its offset; the last stable offset (LSO)
//     is min(high watermark, first offset of the earliest ongoing
//     transaction, first offset of a completed transaction whose marker is
//     not yet below the high watermark) — Kafka's firstUnstableOffset.
//   - A marker (control batch, commit or abort) ends the producer's
//     transaction; it is fenced when its producer epoch is older than the
//     producer's (INVALID_PRODUCER_EPOCH) or its coordinator epoch older
//     than the last marker's (TRANSACTION_COORDINATOR_FENCED). A new epoch
//     in a marker resets the producer's sequences. An aborted transaction
//     becomes an entry of the log's aborted-transaction index
//     (log.AddAbortedTxn, with the LSO right after it, as Kafka's
//     lastStableOffset(completedTxn)).
//   - A non-transactional batch from a producer with a transaction ongoing
//     is INVALID_TXN_STATE.
//   - Origin (Kafka's AppendOrigin): a client's append gets every check; a
//     coordinator's (TxnOffsetCommit batches to __consumer_offsets with
//     sequence -1, markers) skips duplicate detection and sequences.
//   - Producers with a transaction ongoing never expire.
//   - The LSO is published after every change so Fetch reads it without
//     the state lock (Partition.LastStableOffset).
//   - Every replica keeps the state: a leader through Append, a follower
//     through ApplyReplica with the batches it fetched (no checks, Kafka's
//     REPLICATION origin; markers end transactions and write the
//     follower's own aborted index), so a new leader knows the ongoing
//     transactions at once. Opening replays the log from the newest
//     snapshot (markers read with log.ScanBatchesControl) and re-adds
//     aborted-index entries a crash lost; a follower whose tail was cut
//     reopens it.
//
// # Layers
//
//   - State (state.go) is a pure state machine: Check(batches, origin) applies
//     Kafka's rules and returns ok, a duplicate (with the original
//     offsets) or an error; Apply(batches, firstOffset, ...) records an
//     append; Expire drops idle producers. No I/O, no clock, no locks; the
//     data-driven tests in testdata/state_*.txt drive it.
//   - Snapshot encoding (snapshot.go): the state as of a log end offset,
//     CRC-checked, in "<offset>.snapshot" files in the partition directory.
//     Version 2 adds each producer's ongoing transaction, coordinator
//     epoch and last timestamp; version 1 files are still read.
//   - Partition (partition.go) joins State to a partition log: it loads the
//     newest usable snapshot and replays batch headers from there to the log
//     end (Log.ScanBatches), serializes check+append+apply, snapshots
//     periodically and at Close, and expires idle producers.
//   - Transaction verification (verify.go, KIP-890 part 1, Kafka's
//     VerificationGuard): StartVerification before a client's
//     transactional produce asks the coordinator (nil: the producer's
//     transaction is ongoing here, no need), AppendVerified refuses a
//     batch that would begin a transaction without a current guard
//     (INVALID_TXN_STATE); any transactional append or marker of the
//     producer uses its guard up.
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
//	res, err := ps.Append(records, txn.FromClient, func() (log.AppendInfo, error) {
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
