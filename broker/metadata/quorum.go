package metadata

import (
	"context"
	"errors"
	"fmt"
	"maps"
)

// The controller quorum as Kafka 4.x describes and changes it (KIP-595
// DescribeQuorum, KIP-853 AddRaftVoter/RemoveRaftVoter): the types the
// Kafka layer answers with, implemented by broker/controller's Node on
// top of its Raft library. The single-node FileStore has no quorum.

// Quorum errors; test with errors.Is. Their Kafka error codes are in
// broker/kafka (DUPLICATE_VOTER, VOTER_NOT_FOUND, REQUEST_TIMED_OUT,
// INVALID_REQUEST, BROKER_ID_NOT_REGISTERED).
var (
	// ErrDuplicateVoter: AddVoter of a node id that already votes.
	ErrDuplicateVoter = errors.New("duplicate voter")
	// ErrVoterNotFound: RemoveVoter of a node (id and directory id)
	// that is not a voter, or of the last voter.
	ErrVoterNotFound = errors.New("voter not found")
	// ErrVoterNotReady: the node to add is not an observer caught up
	// with the leader, or another voter change is still in progress
	// (Kafka answers both with REQUEST_TIMED_OUT; retry later).
	ErrVoterNotReady = errors.New("voter change not possible now")
	// ErrInvalidVoter: an AddVoter without an endpoint on the controller
	// listener, or with a bad address.
	ErrInvalidVoter = errors.New("invalid voter")
	// ErrBrokerNotRegistered: UnregisterBroker of an id that is not a
	// registered broker.
	ErrBrokerNotRegistered = errors.New("broker id not registered")
	// ErrBrokerIsVoter: UnregisterBroker (decommission) of a broker that
	// is still a voter of the controller quorum.
	ErrBrokerIsVoter = errors.New("broker is a controller voter")
)

// ClusterMetadataTopic is the name Kafka gives the metadata log's topic
// (DescribeQuorum asks for partition 0 of it).
const ClusterMetadataTopic = "__cluster_metadata"

// QuorumEndpoint is one listener of a controller (name, host, port).
type QuorumEndpoint struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port uint16 `json:"port"`
}

// QuorumReplica is one replica of the metadata log as the leader sees it.
// Offsets are Kafka's: the end offset of a replica is the Raft index of
// its last entry (index i holds offset i-1). Timestamps are the leader's
// wall clock in milliseconds, -1 when unknown.
type QuorumReplica struct {
	ID int32 `json:"id"`
	// DirectoryID is the replica's metadata directory id (zero:
	// unknown).
	DirectoryID  UUID  `json:"directory_id"`
	LogEndOffset int64 `json:"log_end_offset"`
	// LastFetch is when the replica last reported its log to the leader.
	LastFetch int64 `json:"last_fetch"`
	// LastCaughtUp is the leader's time of the newest entry the replica
	// had at its last report (now when it had everything).
	LastCaughtUp int64 `json:"last_caught_up"`
	// Endpoints are the controller listeners of a voter.
	Endpoints []QuorumEndpoint `json:"endpoints,omitempty"`
}

// QuorumState is DescribeQuorum's answer for the metadata log.
type QuorumState struct {
	LeaderID      int32           `json:"leader_id"`
	LeaderEpoch   int32           `json:"leader_epoch"`
	HighWatermark int64           `json:"high_watermark"`
	Voters        []QuorumReplica `json:"voters"`
	Observers     []QuorumReplica `json:"observers"`
}

// QuorumAdmin describes and changes the controller quorum (KIP-853).
type QuorumAdmin interface {
	// DescribeQuorum asks the leader for the quorum's state.
	DescribeQuorum(ctx context.Context) (QuorumState, error)
	// AddVoter makes observer id (with that metadata directory id, the
	// zero UUID for any) a voter reachable at the endpoint of the
	// controller listener among endpoints; it returns once the change is
	// committed.
	AddVoter(ctx context.Context, id int32, dir UUID, endpoints []QuorumEndpoint) error
	// RemoveVoter makes voter id an observer (a zero dir matches any
	// directory id); it returns once the change is committed.
	RemoveVoter(ctx context.Context, id int32, dir UUID) error
	// UnregisterBroker removes broker id's registration for good (Kafka's
	// UnregisterBroker): its ISR memberships and leaderships go to the
	// other replicas, and it leaves the quorum's observers.
	UnregisterBroker(ctx context.Context, id int32) error
}

// UnregisterBroker removes a broker's registration for good (Kafka's
// UnregisterBrokerRecord). The broker must be registered and fenced (the
// controller fences it in the same entry, moving its leaderships and
// ISR memberships first); its id stays in partitions' replica lists
// until they are reassigned.
type UnregisterBroker struct {
	NodeID int32 `json:"node_id"`
}

func (im *Image) applyUnregister(next *Image, u *UnregisterBroker) error {
	b, ok := im.brokers[u.NodeID]
	if !ok {
		return fmt.Errorf("broker %d: %w", u.NodeID, ErrUnknownBroker)
	}
	if !b.Fenced {
		return fmt.Errorf("%w: unregistering broker %d, which is not fenced", ErrCorruptRecord, u.NodeID)
	}
	next.brokers = maps.Clone(im.brokers)
	delete(next.brokers, u.NodeID)
	return nil
}
