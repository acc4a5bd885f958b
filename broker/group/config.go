package group

import (
	"fmt"
	"time"
)

// OffsetsTopic is the internal topic holding group state and offsets.
const OffsetsTopic = "__consumer_offsets"

// Config is the coordinator's configuration, with Kafka's broker setting
// names. Start from DefaultConfig.
type Config struct {
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long
	// the first rebalance of an empty group waits for more members.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout are
	// group.min.session.timeout.ms and group.max.session.timeout.ms.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxSize is group.max.size.
	MaxSize int
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes.
	OffsetMetadataMaxBytes int
	// OffsetsRetention is offsets.retention.minutes: how long committed
	// offsets are kept after a group became empty (or, for simple
	// commits, after the commit).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is
	// offsets.retention.check.interval.ms.
	OffsetsRetentionCheckInterval time.Duration
	// OffsetsTopicPartitions is offsets.topic.num.partitions, used when
	// the coordinator creates __consumer_offsets.
	OffsetsTopicPartitions int32
	// OffsetsTopicSegmentBytes is offsets.topic.segment.bytes.
	OffsetsTopicSegmentBytes int64
	// MaxRecordBytes bounds one group-metadata record (Kafka:
	// message.max.bytes of the offsets topic); a larger SyncGroup
	// assignment fails with UNKNOWN_SERVER_ERROR as in Kafka.
	MaxRecordBytes int

	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms:
	// the heartbeat interval given to consumer-protocol members (KIP-848).
	ConsumerHeartbeatInterval time.Duration
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms.
	ConsumerSessionTimeout time.Duration
	// ConsumerAssignors is group.consumer.assignors: the server-side
	// assignors, by Kafka's names ("uniform", "range"); the first is the
	// default.
	ConsumerAssignors []string
	// ConsumerMaxSize is group.consumer.max.size.
	ConsumerMaxSize int

	// NewMemberID makes a member id for a client id; nil means
	// clientID + "-" + a random UUID. Tests inject a deterministic one.
	NewMemberID func(clientID string) string
}

// Setting names, as in Kafka.
const (
	SettingInitialRebalanceDelayMs   = "group.initial.rebalance.delay.ms"
	SettingMinSessionTimeoutMs       = "group.min.session.timeout.ms"
	SettingMaxSessionTimeoutMs       = "group.max.session.timeout.ms"
	SettingMaxSize                   = "group.max.size"
	SettingOffsetMetadataMaxBytes    = "offset.metadata.max.bytes"
	SettingOffsetsRetentionMinutes   = "offsets.retention.minutes"
	SettingOffsetsRetentionCheckMs   = "offsets.retention.check.interval.ms"
	SettingOffsetsTopicNumPartitions = "offsets.topic.num.partitions"
	SettingOffsetsTopicSegmentBytes  = "offsets.topic.segment.bytes"

	SettingConsumerHeartbeatIntervalMs = "group.consumer.heartbeat.interval.ms"
	SettingConsumerSessionTimeoutMs    = "group.consumer.session.timeout.ms"
	SettingConsumerAssignors           = "group.consumer.assignors"
	SettingConsumerMaxSize             = "group.consumer.max.size"
)

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelay:         3 * time.Second,
		MinSessionTimeout:             6 * time.Second,
		MaxSessionTimeout:             30 * time.Minute,
		MaxSize:                       1<<31 - 1,
		OffsetMetadataMaxBytes:        4096,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		OffsetsTopicPartitions:        50,
		OffsetsTopicSegmentBytes:      100 << 20,
		MaxRecordBytes:                1048588,
		ConsumerHeartbeatInterval:     5 * time.Second,
		ConsumerSessionTimeout:        45 * time.Second,
		ConsumerAssignors:             []string{AssignorUniform, AssignorRange},
		ConsumerMaxSize:               1<<31 - 1,
	}
}

// Validate checks the configuration; errors name the setting.
func (c *Config) Validate() error {
	switch {
	case c.InitialRebalanceDelay < 0:
		return fmt.Errorf("group: %s %v < 0", SettingInitialRebalanceDelayMs, c.InitialRebalanceDelay)
	case c.MinSessionTimeout < 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("group: %s %v must be in [0, %s %v]", SettingMinSessionTimeoutMs, c.MinSessionTimeout, SettingMaxSessionTimeoutMs, c.MaxSessionTimeout)
	case c.MaxSize < 1:
		return fmt.Errorf("group: %s %d < 1", SettingMaxSize, c.MaxSize)
	case c.OffsetMetadataMaxBytes < 0:
		return fmt.Errorf("group: %s %d < 0", SettingOffsetMetadataMaxBytes, c.OffsetMetadataMaxBytes)
	case c.OffsetsRetention <= 0:
		return fmt.Errorf("group: %s %v <= 0", SettingOffsetsRetentionMinutes, c.OffsetsRetention)
	case c.OffsetsRetentionCheckInterval <= 0:
		return fmt.Errorf("group: %s %v <= 0", SettingOffsetsRetentionCheckMs, c.OffsetsRetentionCheckInterval)
	case c.OffsetsTopicPartitions < 1:
		return fmt.Errorf("group: %s %d < 1", SettingOffsetsTopicNumPartitions, c.OffsetsTopicPartitions)
	case c.ConsumerHeartbeatInterval <= 0:
		return fmt.Errorf("group: %s %v <= 0", SettingConsumerHeartbeatIntervalMs, c.ConsumerHeartbeatInterval)
	case c.ConsumerSessionTimeout <= c.ConsumerHeartbeatInterval:
		return fmt.Errorf("group: %s %v must be greater than %s %v", SettingConsumerSessionTimeoutMs, c.ConsumerSessionTimeout, SettingConsumerHeartbeatIntervalMs, c.ConsumerHeartbeatInterval)
	case len(c.ConsumerAssignors) == 0:
		return fmt.Errorf("group: %s is empty", SettingConsumerAssignors)
	case c.ConsumerMaxSize < 1:
		return fmt.Errorf("group: %s %d < 1", SettingConsumerMaxSize, c.ConsumerMaxSize)
	}
	for _, a := range c.ConsumerAssignors {
		if a != AssignorUniform && a != AssignorRange {
			return fmt.Errorf("group: %s: unknown assignor %q (known: %s, %s)", SettingConsumerAssignors, a, AssignorUniform, AssignorRange)
		}
	}
	return nil
}
