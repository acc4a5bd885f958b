// Package log is weir's partition log: the on-disk storage of one Kafka
// partition, and a Manager for all partitions under a data directory.
//
// It owns segment files, their offset and time indexes, appends (stamping
// base offsets and leader epochs into Kafka RecordBatch v2 bytes stored
// byte-for-byte), reads by offset as file Sections that can be sent with
// sendfile(2), lookups by timestamp, segment rolls, retention, DeleteRecords,
// compaction, flush policy (group commit) and crash recovery; and for
// replication: replica appends that keep the leader's offsets and epochs
// (AppendReplica), the leader-epoch cache (AssignEpoch, EndOffsetForEpoch),
// tail truncation (TruncateTo) and restarting at a later offset (ResetTo). All disk
// access goes through weir/broker/log/vfs.
//
// On-disk layout of one partition directory:
//
//	<data-dir>/
//	  <topic>-<partition>/              split at the LAST '-'
//	    00000000000000000000.log         record batches, byte-for-byte RecordBatch v2
//	    00000000000000000000.index       sparse: [relOffset u32 | position u32] ...
//	    00000000000000000000.timeindex   [maxTimestampSoFar i64 | relOffset u32] ...
//	    00000000000000041237.log         next segment, named by its base offset
//	    00000000000000041237.index       (active segment: indexes kept in memory,
//	    00000000000000041237.timeindex    written at roll and close)
//	    checkpoint                       "recovery-point N / log-start-offset N / high-watermark N"
//	    00000000000000041237.txnindex    aborted transactions whose abort marker is in the
//	                                     segment, Kafka's format (txnindex.go); only if any
//	    leader-epoch-checkpoint          leader epoch -> first offset (KIP-101; epochs.go)
//	    .clean-shutdown                  present only after a clean Close
//	    <base>.log.cleaned / .swap       compaction output being built / committed
//
//	 .log file:  | batch | batch | batch | ... |
//	              ^pos 0  ^pos p (index entry every index.interval.bytes)
//
//	 batch:  baseOffset i64 | length i32 | leaderEpoch i32 | magic=2 i8 | crc u32 |
//	         attributes i16 | lastOffsetDelta i32 | firstTs i64 | maxTs i64 |
//	         producerId i64 | producerEpoch i16 | baseSequence i32 | numRecords i32 |
//	         records...      (crc = CRC32C of attributes..end)
//
// Reading offset o: binary search the segments by base offset, binary search
// the segment's offset index for the last entry <= o, then scan batch headers
// forward (at most index.interval.bytes plus one batch). Sealed segments'
// files and indexes are opened lazily through a bounded, refcounted
// FileCache; an idle partition holds no file descriptors.
//
// Storage failures (see Append, Flush, Offline). A write that fails
// (ENOSPC, EIO, EROFS) is cut back to the segment's size before the append,
// whatever the write reported, so the log is exactly as it was; ErrDiskFull
// wraps ENOSPC and writes resume as soon as space is back. If the cut fails
// too, or an fsync fails (the unsynced bytes may or may not reach the disk,
// and Linux does not retry them), the log goes offline: every operation
// then fails with an error wrapping ErrOffline (the Kafka layer answers
// KAFKA_STORAGE_ERROR), and so does a flush that was waiting for the
// failed one (its bytes may be among those dropped); Log.Offline says why,
// Options.OnOffline / ManagerOptions.OnOffline are called once, and Close
// leaves no clean-shutdown marker, so the next Open recovers the partition.
//
// Recovery after an unclean shutdown (no .clean-shutdown marker) validates
// every batch (header, CRC32C, increasing offsets) of the segments from the
// one holding the checkpoint's recovery point on, truncates at the first bad
// batch (deleting later segments) and rebuilds their indexes; sealed
// segments below the recovery point get their tail checked from the last
// index entry, and a torn tail there is cut (later segments kept). A read
// error (EIO) fails the open; it is never taken for a torn batch. Each
// partition logs one line saying what was validated and cut. The producer
// state (broker/txn) is then rebuilt from its snapshot and the log.
// Manager.LoadExisting recovers all partitions on disk in parallel
// (RecoveryThreads, Kafka's num.recovery.threads.per.data.dir). Verify
// checks a partition directory's files without changing them.
//
// Transactions: control.go builds and reads transaction markers (control
// batches, Kafka's format); txnindex.go keeps the aborted-transaction
// index (.txnindex per segment, all entries also in memory) that a
// read_committed Fetch asks with CollectAborted. The producer state
// (broker/txn) adds the entries (AddAbortedTxn) when it applies an abort
// marker, also when replaying the log, so recovery rebuilds lost entries;
// segment deletion removes a segment's .txnindex, truncation cuts it.
// ScanBatchesControl hands the replay the marker batches' bytes.
// Compaction keeps every marker, drops the batches of aborted transactions
// (found through the index: they neither survive nor shadow a key), and
// cleans only segments wholly below the first unstable offset
// (SetFirstUnstableOffset: set by a leader's producer state, and on a
// follower from the leader's last stable offset in each fetch).
//
// Lock order: Log.maintMu -> Log.appendMu -> Log.flushMu -> Log.mu ->
// FileCache.mu -> handle.idxMu.
package log
