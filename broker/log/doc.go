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
// Lock order: Log.maintMu -> Log.appendMu -> Log.flushMu -> Log.mu ->
// FileCache.mu -> handle.idxMu.
package log
