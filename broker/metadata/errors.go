package metadata

import "errors"

// Sentinel errors. Store methods wrap them with %w and name the topic or
// broker at fault; test with errors.Is.
var (
	// ErrTopicExists: CreateTopic of a name (or id) already in use.
	ErrTopicExists = errors.New("topic already exists")
	// ErrUnknownTopic: the named topic does not exist.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrInvalidTopic: the topic name is not a legal Kafka topic name.
	ErrInvalidTopic = errors.New("invalid topic name")
	// ErrInvalidPartitions: a partition count < 1, or CreatePartitions not
	// increasing the count.
	ErrInvalidPartitions = errors.New("invalid partition count")
	// ErrInvalidReplicationFactor: a replication factor < 1 or larger than
	// the number of registered brokers.
	ErrInvalidReplicationFactor = errors.New("invalid replication factor")
	// ErrNoBrokers: an assignment was asked for before any broker registered.
	ErrNoBrokers = errors.New("no registered brokers")
	// ErrUnknownPartition: the topic has no such partition.
	ErrUnknownPartition = errors.New("unknown partition")
	// ErrUnknownBroker: the node id is not a registered broker.
	ErrUnknownBroker = errors.New("unknown broker")
	// ErrInvalidReplicaAssignment: an explicit replica assignment names
	// an unknown broker, a broker twice, uneven replica counts, or no
	// live replica for a partition.
	ErrInvalidReplicaAssignment = errors.New("invalid replica assignment")
	// ErrFencedLeaderEpoch: a partition change was asked for by a leader
	// whose leader epoch is not the partition's current one.
	ErrFencedLeaderEpoch = errors.New("fenced leader epoch")
	// ErrStalePartitionEpoch: a partition change was decided against an
	// older partition epoch than the current one.
	ErrStalePartitionEpoch = errors.New("stale partition epoch")
	// ErrInvalidISR: an ISR that is empty, not a subset of the replicas,
	// lacks the leader, or adds a fenced broker.
	ErrInvalidISR = errors.New("invalid in-sync replica set")
	// ErrCorruptRecord: a stored or received record cannot be decoded.
	ErrCorruptRecord = errors.New("corrupt metadata record")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("metadata store closed")
)
