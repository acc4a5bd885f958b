package txn

import "errors"

// Sentinel errors of the idempotence check. Each maps to the Kafka error
// code the Produce response carries for the partition (see KafkaCode); the
// wrapped message names the producer, partition state and sequence numbers.
var (
	// ErrOutOfOrderSequence: the batch's first sequence does not follow the
	// producer's last one (OUT_OF_ORDER_SEQUENCE_NUMBER, 45).
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	// ErrInvalidProducerEpoch: the batch's epoch is older than the
	// producer's current epoch on this partition (INVALID_PRODUCER_EPOCH, 47).
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")
	// ErrUnknownProducerID: UNKNOWN_PRODUCER_ID (59). Kafka 2.5+ no longer
	// returns it for produce (a producer without state is accepted at any
	// sequence, see doc.go) and neither does weir; it is kept so callers can
	// map it if a later mode uses it.
	ErrUnknownProducerID = errors.New("unknown producer id")
	// ErrInvalidTxnState: a non-transactional batch from a producer with
	// a transaction ongoing (INVALID_TXN_STATE, 48).
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrTransactionCoordinatorFenced: a marker carries an older
	// coordinator epoch than the last marker of its producer
	// (TRANSACTION_COORDINATOR_FENCED, 52).
	ErrTransactionCoordinatorFenced = errors.New("transaction coordinator fenced")
	// ErrCorruptSnapshot: a producer-state snapshot failed its checks; it is
	// ignored and the state rebuilt from the log.
	ErrCorruptSnapshot = errors.New("corrupt producer state snapshot")
	// ErrClosed: the partition state or allocator was closed.
	ErrClosed = errors.New("producer state closed")
)

// Kafka error codes for the sentinels.
const (
	CodeOutOfOrderSequence   int16 = 45
	CodeInvalidProducerEpoch int16 = 47
	CodeUnknownProducerID    int16 = 59
	CodeInvalidTxnState      int16 = 48
	CodeCoordinatorFenced    int16 = 52
)

// KafkaCode returns the Kafka error code for an error returned by this
// package's idempotence checks, and false for any other error.
func KafkaCode(err error) (int16, bool) {
	switch {
	case errors.Is(err, ErrOutOfOrderSequence):
		return CodeOutOfOrderSequence, true
	case errors.Is(err, ErrInvalidProducerEpoch):
		return CodeInvalidProducerEpoch, true
	case errors.Is(err, ErrUnknownProducerID):
		return CodeUnknownProducerID, true
	case errors.Is(err, ErrInvalidTxnState):
		return CodeInvalidTxnState, true
	case errors.Is(err, ErrTransactionCoordinatorFenced):
		return CodeCoordinatorFenced, true
	}
	return 0, false
}
