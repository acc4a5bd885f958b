package controller

import (
	"errors"
	"fmt"

	"weir/broker/metadata"
)

// Sentinel errors; test with errors.Is. Metadata errors from the leader
// (metadata.ErrTopicExists, ...) keep their identity across the RPC.
var (
	// ErrNoController: no controller leader is known or reachable now;
	// the request may be retried.
	ErrNoController = errors.New("no controller leader available")
	// ErrNotController: this node is not the controller leader.
	ErrNotController = errors.New("not the controller leader")
	// ErrClosed: the node is shut down.
	ErrClosed = errors.New("controller closed")
	// ErrBadVoters: a --controller-voters list that cannot be parsed or
	// does not work with this node.
	ErrBadVoters = errors.New("bad controller voters")
)

// wireErrors are the sentinels an RPC reply can carry, by code.
var wireErrors = map[string]error{
	"topic_exists":          metadata.ErrTopicExists,
	"unknown_topic":         metadata.ErrUnknownTopic,
	"invalid_topic":         metadata.ErrInvalidTopic,
	"invalid_partitions":    metadata.ErrInvalidPartitions,
	"invalid_rf":            metadata.ErrInvalidReplicationFactor,
	"invalid_assignment":    metadata.ErrInvalidReplicaAssignment,
	"no_brokers":            metadata.ErrNoBrokers,
	"unknown_partition":     metadata.ErrUnknownPartition,
	"unknown_broker":        metadata.ErrUnknownBroker,
	"fenced_leader_epoch":   metadata.ErrFencedLeaderEpoch,
	"stale_partition_epoch": metadata.ErrStalePartitionEpoch,
	"invalid_isr":           metadata.ErrInvalidISR,
	"corrupt_record":        metadata.ErrCorruptRecord,
	"not_controller":        ErrNotController,
	"closed":                ErrClosed,
}

// WireError is an error as an RPC reply carries it.
type WireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func toWire(err error) *WireError {
	if err == nil {
		return nil
	}
	for code, s := range wireErrors {
		if errors.Is(err, s) {
			return &WireError{Code: code, Message: err.Error()}
		}
	}
	return &WireError{Message: err.Error()}
}

func fromWire(w *WireError) error {
	if w == nil {
		return nil
	}
	if s, ok := wireErrors[w.Code]; ok {
		return &remoteError{sentinel: s, msg: w.Message}
	}
	return fmt.Errorf("controller: %s", w.Message)
}

// remoteError is a sentinel error that came over the wire with the
// leader's message.
type remoteError struct {
	sentinel error
	msg      string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }
