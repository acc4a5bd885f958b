package topicconfig

import (
	"math"
	"sort"
	"strconv"
)

// Topic config names (Kafka's TopicConfig constants).
const (
	CleanupPolicy                         = "cleanup.policy"
	CompressionType                       = "compression.type"
	CompressionGzipLevel                  = "compression.gzip.level"
	CompressionLz4Level                   = "compression.lz4.level"
	CompressionZstdLevel                  = "compression.zstd.level"
	DeleteRetentionMs                     = "delete.retention.ms"
	FileDeleteDelayMs                     = "file.delete.delay.ms"
	FlushMessages                         = "flush.messages"
	FlushMs                               = "flush.ms"
	FollowerReplicationThrottled          = "follower.replication.throttled.replicas"
	IndexIntervalBytes                    = "index.interval.bytes"
	LeaderReplicationThrottled            = "leader.replication.throttled.replicas"
	LocalRetentionBytes                   = "local.retention.bytes"
	LocalRetentionMs                      = "local.retention.ms"
	MaxCompactionLagMs                    = "max.compaction.lag.ms"
	MaxMessageBytes                       = "max.message.bytes"
	MessageDownconversionEnable           = "message.downconversion.enable"
	MessageFormatVersion                  = "message.format.version"
	MessageTimestampAfterMaxMs            = "message.timestamp.after.max.ms"
	MessageTimestampBeforeMaxMs           = "message.timestamp.before.max.ms"
	MessageTimestampDifferenceMaxMs       = "message.timestamp.difference.max.ms"
	MessageTimestampType                  = "message.timestamp.type"
	MinCleanableDirtyRatio                = "min.cleanable.dirty.ratio"
	MinCompactionLagMs                    = "min.compaction.lag.ms"
	MinInsyncReplicas                     = "min.insync.replicas"
	Preallocate                           = "preallocate"
	RemoteLogCopyDisable                  = "remote.log.copy.disable"
	RemoteLogDeleteOnDisable              = "remote.log.delete.on.disable"
	RemoteStorageEnable                   = "remote.storage.enable"
	RetentionBytes                        = "retention.bytes"
	RetentionMs                           = "retention.ms"
	SegmentBytes                          = "segment.bytes"
	SegmentIndexBytes                     = "segment.index.bytes"
	SegmentJitterMs                       = "segment.jitter.ms"
	SegmentMs                             = "segment.ms"
	UncleanLeaderElectionEnable           = "unclean.leader.election.enable"
	InternalSegmentBytes                  = "internal.segment.bytes"
	cleanupPolicyCompact                  = "compact"
	cleanupPolicyDelete                   = "delete"
	timestampCreateTime                   = "CreateTime"
	timestampLogAppendTime                = "LogAppendTime"
	maxLongString                         = "9223372036854775807"
	hourMs                          int64 = 3_600_000
	minuteMs                        int64 = 60_000
)

// MinSegmentBytes is the smallest segment.bytes Kafka 4 accepts (1 MiB).
const MinSegmentBytes = 1 << 20

func syn(names ...string) []Synonym {
	out := make([]Synonym, len(names))
	for i, n := range names {
		out[i] = Synonym{Name: n, Scale: 1}
	}
	return out
}

var topicDefs = []Def{
	{Name: CleanupPolicy, Type: TypeList, Default: "delete", HasDefault: true, Honoured: true,
		Synonyms: syn("log.cleanup.policy"), check: listOf(cleanupPolicyCompact, cleanupPolicyDelete),
		Doc: "Retention policy for old segments: \"delete\" (by time and size), \"compact\" (keep the last record per key), or both."},
	{Name: CompressionType, Type: TypeString, Default: "producer", HasDefault: true,
		Synonyms: syn("compression.type"), check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		Doc: "Final compression of the topic's data; \"producer\" keeps what the producer sent (weir always stores batches as sent)."},
	{Name: CompressionGzipLevel, Type: TypeInt, Default: "-1", HasDefault: true,
		Synonyms: syn("compression.gzip.level"), check: gzipLevel,
		Doc: "Compression level for gzip when compression.type is gzip."},
	{Name: CompressionLz4Level, Type: TypeInt, Default: "9", HasDefault: true,
		Synonyms: syn("compression.lz4.level"), check: between(1, 17),
		Doc: "Compression level for lz4 when compression.type is lz4."},
	{Name: CompressionZstdLevel, Type: TypeInt, Default: "3", HasDefault: true,
		Synonyms: syn("compression.zstd.level"), check: between(-131072, 22),
		Doc: "Compression level for zstd when compression.type is zstd."},
	{Name: DeleteRetentionMs, Type: TypeLong, Default: "86400000", HasDefault: true, Honoured: true,
		Synonyms: syn("log.cleaner.delete.retention.ms"), check: atLeast(0),
		Doc: "How long tombstones are kept in a compacted topic."},
	{Name: FileDeleteDelayMs, Type: TypeLong, Default: "60000", HasDefault: true,
		Synonyms: syn("log.segment.delete.delay.ms"), check: atLeast(0),
		Doc: "Time to wait before deleting a file from the filesystem."},
	{Name: FlushMessages, Type: TypeLong, Default: maxLongString, HasDefault: true, Honoured: true,
		Synonyms: syn("log.flush.interval.messages"), check: atLeast(1),
		Doc: "Force an fsync after this many messages; the default leaves flushing to the OS."},
	{Name: FlushMs, Type: TypeLong, Default: maxLongString, HasDefault: true, Honoured: true,
		Synonyms: syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"), check: atLeast(0),
		Doc: "Force an fsync after this much time; the default leaves flushing to the OS."},
	{Name: FollowerReplicationThrottled, Type: TypeList, Default: "", HasDefault: true,
		check: throttledReplicas,
		Doc:   "Replicas whose log replication is throttled on the follower side: \"*\" or partition:broker pairs."},
	{Name: IndexIntervalBytes, Type: TypeInt, Default: "4096", HasDefault: true, Honoured: true,
		Synonyms: syn("log.index.interval.bytes"), check: atLeast(0),
		Doc: "How often (in bytes of log) an offset index entry is added."},
	{Name: LeaderReplicationThrottled, Type: TypeList, Default: "", HasDefault: true,
		check: throttledReplicas,
		Doc:   "Replicas whose log replication is throttled on the leader side: \"*\" or partition:broker pairs."},
	{Name: LocalRetentionBytes, Type: TypeLong, Default: "-2", HasDefault: true,
		Synonyms: syn("log.local.retention.bytes"), check: atLeast(-2),
		Doc: "Local log size kept when tiered storage is on (-2: retention.bytes). Tiered storage is not supported by weir."},
	{Name: LocalRetentionMs, Type: TypeLong, Default: "-2", HasDefault: true,
		Synonyms: syn("log.local.retention.ms"), check: atLeast(-2),
		Doc: "Local log time kept when tiered storage is on (-2: retention.ms). Tiered storage is not supported by weir."},
	{Name: MaxCompactionLagMs, Type: TypeLong, Default: maxLongString, HasDefault: true, Honoured: true,
		Synonyms: syn("log.cleaner.max.compaction.lag.ms"), check: atLeast(1),
		Doc: "Maximum time a record stays uncompacted."},
	{Name: MaxMessageBytes, Type: TypeInt, Default: "1048588", HasDefault: true, Honoured: true,
		Synonyms: syn("message.max.bytes"), check: atLeast(0),
		Doc: "Largest record batch size (after compression) the broker accepts for this topic."},
	{Name: MessageDownconversionEnable, Type: TypeBoolean, Default: "true", HasDefault: true,
		Synonyms: syn("log.message.downconversion.enable"),
		Doc:      "Deprecated (removed in Kafka 4.0); accepted and stored, no effect."},
	{Name: MessageFormatVersion, Type: TypeString, Default: "3.0-IV1", HasDefault: true,
		Synonyms: syn("log.message.format.version"),
		Doc:      "Deprecated (removed in Kafka 4.0); accepted and stored, no effect: weir stores record batch v2 only."},
	{Name: MessageTimestampAfterMaxMs, Type: TypeLong, Default: maxLongString, HasDefault: true, Honoured: true,
		Synonyms: syn("log.message.timestamp.after.max.ms"), check: atLeast(0),
		Doc: "With CreateTime, reject batches whose timestamp is more than this far after the broker's clock."},
	{Name: MessageTimestampBeforeMaxMs, Type: TypeLong, Default: maxLongString, HasDefault: true, Honoured: true,
		Synonyms: syn("log.message.timestamp.before.max.ms"), check: atLeast(0),
		Doc: "With CreateTime, reject batches whose timestamp is more than this far before the broker's clock."},
	{Name: MessageTimestampDifferenceMaxMs, Type: TypeLong, Default: maxLongString, HasDefault: true,
		Synonyms: syn("log.message.timestamp.difference.max.ms"), check: atLeast(0),
		Doc: "Deprecated (removed in Kafka 4.0) in favour of message.timestamp.before/after.max.ms; accepted and stored, no effect."},
	{Name: MessageTimestampType, Type: TypeString, Default: timestampCreateTime, HasDefault: true, Honoured: true,
		Synonyms: syn("log.message.timestamp.type"), check: oneOf(timestampCreateTime, timestampLogAppendTime),
		Doc: "Whether record timestamps are the producer's (CreateTime) or the broker's append time (LogAppendTime)."},
	{Name: MinCleanableDirtyRatio, Type: TypeDouble, Default: "0.5", HasDefault: true, Honoured: true,
		Synonyms: syn("log.cleaner.min.cleanable.ratio"), check: doubleBetween(0, 1),
		Doc: "Minimum ratio of dirty log to total log before the cleaner compacts."},
	{Name: MinCompactionLagMs, Type: TypeLong, Default: "0", HasDefault: true, Honoured: true,
		Synonyms: syn("log.cleaner.min.compaction.lag.ms"), check: atLeast(0),
		Doc: "Minimum time a record stays uncompacted."},
	{Name: MinInsyncReplicas, Type: TypeInt, Default: "1", HasDefault: true, Honoured: true,
		Synonyms: syn("min.insync.replicas"), check: atLeast(1),
		Doc: "With acks=all, the minimum number of in-sync replicas that must have a write."},
	{Name: Preallocate, Type: TypeBoolean, Default: "false", HasDefault: true,
		Synonyms: syn("log.preallocate"),
		Doc:      "Preallocate the file on disk when creating a new segment."},
	{Name: RemoteLogCopyDisable, Type: TypeBoolean, Default: "false", HasDefault: true,
		Doc: "Tiered storage: stop copying to remote storage. Tiered storage is not supported by weir."},
	{Name: RemoteLogDeleteOnDisable, Type: TypeBoolean, Default: "false", HasDefault: true,
		Doc: "Tiered storage: delete remote data when disabling. Tiered storage is not supported by weir."},
	{Name: RemoteStorageEnable, Type: TypeBoolean, Default: "false", HasDefault: true,
		Doc: "Tiered storage for this topic. weir does not support tiered storage: only false is accepted."},
	{Name: RetentionBytes, Type: TypeLong, Default: "-1", HasDefault: true, Honoured: true,
		Synonyms: syn("log.retention.bytes"),
		Doc:      "Maximum size of a partition's log before old segments are deleted; -1 means no size limit."},
	{Name: RetentionMs, Type: TypeLong, Default: "604800000", HasDefault: true, Honoured: true,
		Synonyms: []Synonym{{"log.retention.ms", 1}, {"log.retention.minutes", minuteMs}, {"log.retention.hours", hourMs}},
		check:    atLeast(-1),
		Doc:      "Maximum age of a segment's newest record before the segment is deleted; -1 means no time limit."},
	{Name: SegmentBytes, Type: TypeInt, Default: "1073741824", HasDefault: true, Honoured: true,
		Synonyms: syn("log.segment.bytes"), check: atLeast(MinSegmentBytes),
		Doc: "Maximum size of one segment file."},
	{Name: SegmentIndexBytes, Type: TypeInt, Default: "10485760", HasDefault: true,
		Synonyms: syn("log.index.size.max.bytes"), check: atLeast(4),
		Doc: "Maximum size of a segment's offset index."},
	{Name: SegmentJitterMs, Type: TypeLong, Default: "0", HasDefault: true,
		Synonyms: []Synonym{{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", hourMs}}, check: atLeast(0),
		Doc: "Maximum random jitter subtracted from segment.ms."},
	{Name: SegmentMs, Type: TypeLong, Default: "604800000", HasDefault: true, Honoured: true,
		Synonyms: []Synonym{{"log.roll.ms", 1}, {"log.roll.hours", hourMs}}, check: atLeast(1),
		Doc: "Time after which a segment is rolled even if not full."},
	{Name: UncleanLeaderElectionEnable, Type: TypeBoolean, Default: "false", HasDefault: true,
		Synonyms: syn("unclean.leader.election.enable"),
		Doc:      "Allow replicas outside the ISR to become leader (may lose data)."},
	{Name: InternalSegmentBytes, Type: TypeInt, Internal: true, Honoured: true, check: atLeast(14),
		Doc: "Test-only: segment size overriding segment.bytes, without its 1 MiB minimum."},
}

var topicByName = func() map[string]*Def {
	m := make(map[string]*Def, len(topicDefs))
	for i := range topicDefs {
		m[topicDefs[i].Name] = &topicDefs[i]
	}
	return m
}()

// TopicDef returns the definition of topic config name.
func TopicDef(name string) (*Def, bool) {
	d, ok := topicByName[name]
	return d, ok
}

// TopicNames returns every non-internal topic config name, sorted.
func TopicNames() []string {
	out := make([]string, 0, len(topicDefs))
	for i := range topicDefs {
		if !topicDefs[i].Internal {
			out = append(out, topicDefs[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

// formatLong renders n as Kafka renders a LONG.
func formatLong(n int64) string { return strconv.FormatInt(n, 10) }

// scaleValue multiplies a broker synonym's value into topic units,
// saturating at MaxInt64 (Kafka would overflow; saturating is safer).
func scaleValue(v string, scale int64) string {
	if scale == 1 {
		return v
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return v
	}
	if n > 0 && n > math.MaxInt64/scale {
		return maxLongString
	}
	if n < 0 {
		return "-1" // Kafka: a negative retention in any unit means unlimited (-1)
	}
	return formatLong(n * scale)
}
