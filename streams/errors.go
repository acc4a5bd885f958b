package streams

import "errors"

// Sentinel errors, wrapped with %w.
var (
	// ErrDecode: a key or value did not decode with its serde. On input
	// topics the record goes to the dead-letter topic.
	ErrDecode = errors.New("decode failed")
	// ErrEventTime: a source's EventTime extractor failed on a record (or
	// gave a time before the Unix epoch); the record goes to the
	// dead-letter topic.
	ErrEventTime = errors.New("no event time")
	// ErrOperator: an operator function (TryMap, TryAggregate...)
	// failed on a record; the record goes to the dead-letter topic.
	ErrOperator = errors.New("operator failed")
	// ErrEncode: a key or value did not encode with its serde; the app
	// stops (it is a program error, not bad input).
	ErrEncode = errors.New("encode failed")
	// ErrTopology: the topology is malformed (the message names the node).
	ErrTopology = errors.New("invalid topology")
	// ErrConfig: an App setting is invalid (the message names it).
	ErrConfig = errors.New("invalid streams config")
	// ErrProduce: the broker refused a record the app wrote; the app
	// stops without committing the offsets behind it (exactly-once: a
	// refusal that dooms only the transaction, TRANSACTION_ABORTABLE or
	// INVALID_TXN_STATE, aborts it instead, and processing resumes from
	// the committed offsets). It wraps the broker's error.
	ErrProduce = errors.New("produce failed")
	// ErrClosed: the app or driver is closed.
	ErrClosed = errors.New("streams app closed")
)
