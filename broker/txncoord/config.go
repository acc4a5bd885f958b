package txncoord

import (
	"fmt"
	"time"
)

// StateTopic is the internal topic holding transaction state.
const StateTopic = "__transaction_state"

// Config is the coordinator's configuration, with Kafka's broker setting
// names. Start from DefaultConfig.
type Config struct {
	// MaxTimeout is transaction.max.timeout.ms: the largest
	// transaction.timeout.ms a producer may ask for (larger:
	// INVALID_TRANSACTION_TIMEOUT).
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms: a transactional id
	// with no transaction in progress and no update for this long is
	// removed (a tombstone in the state topic).
	IDExpiration time.Duration
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms: how
	// often transactions open past their timeout are looked for (and
	// aborted, fencing the producer's epoch).
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms: how
	// often expired transactional ids are looked for.
	RemoveExpiredInterval time.Duration
	// StateLogPartitions is transaction.state.log.num.partitions, used
	// when the coordinator creates __transaction_state.
	StateLogPartitions int32
	// StateLogReplicationFactor is
	// transaction.state.log.replication.factor (capped by the number of
	// live brokers when the topic is created, as weir does for
	// __consumer_offsets).
	StateLogReplicationFactor int16
	// StateLogMinISR is transaction.state.log.min.isr: the topic's
	// min.insync.replicas.
	StateLogMinISR int32
	// StateLogSegmentBytes is transaction.state.log.segment.bytes.
	StateLogSegmentBytes int64
}

// Setting names, as in Kafka.
const (
	SettingMaxTimeoutMs                      = "transaction.max.timeout.ms"
	SettingIDExpirationMs                    = "transactional.id.expiration.ms"
	SettingAbortTimedOutIntervalMs           = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
	SettingRemoveExpiredIntervalMs           = "transaction.remove.expired.transaction.cleanup.interval.ms"
	SettingStateLogNumPartitions             = "transaction.state.log.num.partitions"
	SettingStateLogReplicationFactor         = "transaction.state.log.replication.factor"
	SettingStateLogMinISR                    = "transaction.state.log.min.isr"
	SettingStateLogSegmentBytes              = "transaction.state.log.segment.bytes"
	defaultStateLogSegmentBytes              = 100 << 20
	defaultAbortTimedOutIntervalMs           = 10_000
	defaultRemoveExpiredIntervalMs           = 3_600_000
	defaultTransactionalIDExpirationMs       = 7 * 24 * 3_600_000
	defaultTransactionMaxTimeoutMs           = 900_000
	defaultStateLogReplicationFactor         = 3
	defaultStateLogMinISR                    = 2
	defaultStateLogNumPartitions             = 50
	maxEpoch                           int16 = 1<<15 - 1
)

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	return Config{
		MaxTimeout:                ms(defaultTransactionMaxTimeoutMs),
		IDExpiration:              ms(defaultTransactionalIDExpirationMs),
		AbortTimedOutInterval:     ms(defaultAbortTimedOutIntervalMs),
		RemoveExpiredInterval:     ms(defaultRemoveExpiredIntervalMs),
		StateLogPartitions:        defaultStateLogNumPartitions,
		StateLogReplicationFactor: defaultStateLogReplicationFactor,
		StateLogMinISR:            defaultStateLogMinISR,
		StateLogSegmentBytes:      defaultStateLogSegmentBytes,
	}
}

// Validate checks the configuration; errors name the setting.
func (c *Config) Validate() error {
	switch {
	case c.MaxTimeout < time.Millisecond:
		return fmt.Errorf("txncoord: %s %v < 1 ms", SettingMaxTimeoutMs, c.MaxTimeout)
	case c.IDExpiration < time.Millisecond:
		return fmt.Errorf("txncoord: %s %v < 1 ms", SettingIDExpirationMs, c.IDExpiration)
	case c.AbortTimedOutInterval < time.Millisecond:
		return fmt.Errorf("txncoord: %s %v < 1 ms", SettingAbortTimedOutIntervalMs, c.AbortTimedOutInterval)
	case c.RemoveExpiredInterval < time.Millisecond:
		return fmt.Errorf("txncoord: %s %v < 1 ms", SettingRemoveExpiredIntervalMs, c.RemoveExpiredInterval)
	case c.StateLogPartitions < 1:
		return fmt.Errorf("txncoord: %s %d < 1", SettingStateLogNumPartitions, c.StateLogPartitions)
	case c.StateLogReplicationFactor < 1:
		return fmt.Errorf("txncoord: %s %d < 1", SettingStateLogReplicationFactor, c.StateLogReplicationFactor)
	case c.StateLogMinISR < 1:
		return fmt.Errorf("txncoord: %s %d < 1", SettingStateLogMinISR, c.StateLogMinISR)
	case c.StateLogSegmentBytes < 1:
		return fmt.Errorf("txncoord: %s %d < 1", SettingStateLogSegmentBytes, c.StateLogSegmentBytes)
	}
	return nil
}
