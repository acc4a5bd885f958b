package log

import (
	"errors"
	"math"
	"time"
)

// Sentinel errors. Errors returned by this package wrap one of these (test
// with errors.Is) and name the partition directory and the thing at fault.
var (
	// ErrOffsetOutOfRange: an offset below the log start offset or above the
	// log end offset (Kafka OFFSET_OUT_OF_RANGE).
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrCorruptBatch: a record batch is malformed or its CRC32C does not
	// match (Kafka CORRUPT_MESSAGE).
	ErrCorruptBatch = errors.New("corrupt record batch")
	// ErrClosed: the log or manager was closed.
	ErrClosed = errors.New("log closed")
	// ErrDiskFull: a write failed because the disk is full.
	ErrDiskFull = errors.New("disk full")
	// ErrCorruptIndex: an index file is malformed (it is rebuilt from the log).
	ErrCorruptIndex = errors.New("corrupt index")
	// ErrOffline: the log was taken offline because the state of its files
	// is unknown (a failed write could not be cut back, or a sync failed).
	// Every later operation fails with it until the log is reopened, which
	// runs recovery. The Kafka layer answers KAFKA_STORAGE_ERROR, as Kafka
	// does for a partition in a failed log directory; Log.Offline says why.
	ErrOffline = errors.New("log offline after a storage failure")
)

// Config is the per-partition configuration, in Kafka topic-config terms.
type Config struct {
	SegmentBytes       int64         // segment.bytes (default 1 GiB)
	SegmentMs          time.Duration // segment.ms (default 7 days)
	IndexIntervalBytes int32         // index.interval.bytes (default 4096)
	RetentionMs        time.Duration // retention.ms (default 168h); negative = unlimited
	RetentionBytes     int64         // retention.bytes (default -1 = unlimited)
	Compact            bool          // cleanup.policy contains "compact"
	Delete             bool          // cleanup.policy contains "delete" (default true)
	DeleteRetentionMs  time.Duration // delete.retention.ms (default 24h)
	MinCompactionLagMs time.Duration // min.compaction.lag.ms (default 0)
	// MaxCompactionLagMs is max.compaction.lag.ms: a dirty segment older
	// than this is compacted whatever the dirty ratio (0 or default
	// Long.MAX_VALUE ms = never forced).
	MaxCompactionLagMs time.Duration
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio (default 0.5):
	// a log is compacted when its dirty (not yet compacted) sealed bytes
	// are at least this share of its sealed bytes. 0 = at every new
	// sealed segment.
	MinCleanableDirtyRatio float64
	FlushMessages          int64         // flush.messages (default math.MaxInt64 = leave to OS)
	FlushMs                time.Duration // flush.ms (default math.MaxInt64 = leave to OS)
	// LogAppendTime is message.timestamp.type=LogAppendTime: Append stamps
	// every batch's max timestamp with the broker's clock (and recomputes the
	// CRC). Default false (CreateTime).
	LogAppendTime bool
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           1 << 30,
		SegmentMs:              7 * 24 * time.Hour,
		IndexIntervalBytes:     4096,
		RetentionMs:            168 * time.Hour,
		RetentionBytes:         -1,
		Delete:                 true,
		DeleteRetentionMs:      24 * time.Hour,
		MaxCompactionLagMs:     math.MaxInt64,
		MinCleanableDirtyRatio: 0.5,
		FlushMessages:          math.MaxInt64,
		FlushMs:                math.MaxInt64,
	}
}

// maxSegmentBytes keeps positions within the uint32 of an index entry.
const maxSegmentBytes = math.MaxInt32

// normalized fills zero or out-of-range values with defaults.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentBytes > maxSegmentBytes {
		c.SegmentBytes = maxSegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs <= 0 {
		c.FlushMs = d.FlushMs
	}
	return c
}
