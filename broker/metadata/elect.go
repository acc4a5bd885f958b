package metadata

import (
	"context"
	"fmt"
	"slices"
)

// ElectionType is the kind of election ElectLeaders asks for (Kafka's
// ElectionType: 0 preferred, 1 unclean).
type ElectionType int8

// The election types.
const (
	// ElectPreferred gives a partition to its preferred replica (the first
	// assigned) when that replica is writable and in the ISR.
	ElectPreferred ElectionType = 0
	// ElectUnclean gives a partition without a leader a leader: an ISR
	// member if one is writable, else any writable replica, whose ISR
	// then becomes just it (records it lacks are lost, as in Kafka).
	ElectUnclean ElectionType = 1
)

func (t ElectionType) String() string {
	switch t {
	case ElectPreferred:
		return "PREFERRED"
	case ElectUnclean:
		return "UNCLEAN"
	}
	return fmt.Sprintf("ElectionType(%d)", int8(t))
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// ElectLeaders asks for leader elections (Kafka's ElectLeaders): of the
// listed partitions, or of every partition when All is set.
type ElectLeaders struct {
	Type       ElectionType     `json:"type"`
	All        bool             `json:"all,omitempty"`
	Partitions []TopicPartition `json:"partitions,omitempty"`
}

// ElectionOutcome is what an election did for one partition ("" = a new
// leader was elected).
type ElectionOutcome string

// The outcomes besides success, named as Kafka's error codes.
const (
	ElectionNotNeeded               ElectionOutcome = "ELECTION_NOT_NEEDED"
	PreferredLeaderNotAvailable     ElectionOutcome = "PREFERRED_LEADER_NOT_AVAILABLE"
	EligibleLeadersNotAvailable     ElectionOutcome = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
	ElectionUnknownTopicOrPartition ElectionOutcome = "UNKNOWN_TOPIC_OR_PARTITION"
	// ElectionInvalidType: the election type is neither preferred nor
	// unclean.
	ElectionInvalidType ElectionOutcome = "INVALID_REQUEST"
)

// ElectionResult is the outcome of one partition's election. Message is
// set for the unknown topic or partition outcomes (Kafka's wording).
type ElectionResult = PartitionResult[ElectionOutcome]

// LeaderElector is the optional Store capability behind ElectLeaders:
// it decides and applies the elections in one change and returns one
// result per partition asked for (every partition when req.All, in topic
// then partition order). The new leaders are in Image once it returns.
type LeaderElector interface {
	ElectLeaders(ctx context.Context, req ElectLeaders) ([]ElectionResult, error)
}

// BuildElectLeaders decides the elections of req against im, as Kafka's
// controller does (ReplicationControlManager.electLeader with
// PartitionChangeBuilder): it returns the ChangePartition records, in
// order (each applies to the image after the previous ones), and one
// result per partition. A partition named twice is elected at most once
// (the second time it needs no election).
//
// Preferred: ELECTION_NOT_NEEDED when the preferred replica leads; else
// the preferred replica when it is writable and in the ISR; else, when
// the current leader is not a writable ISR member (offline), the next
// writable ISR member in assignment order; else
// PREFERRED_LEADER_NOT_AVAILABLE. Unclean: ELECTION_NOT_NEEDED when the
// partition has a leader; else the first writable ISR member, else the
// first writable replica with the ISR set to it alone; else
// ELIGIBLE_LEADERS_NOT_AVAILABLE. Each election raises the leader epoch.
func BuildElectLeaders(im *Image, req ElectLeaders) ([]Record, []ElectionResult) {
	parts := req.Partitions
	if req.All {
		parts = nil
		for _, t := range im.Topics() {
			for i := range t.Partitions {
				parts = append(parts, TopicPartition{Topic: t.Name, Partition: int32(i)})
			}
		}
	}
	return decideEach(im, parts, func(tp TopicPartition) TopicPartition { return tp },
		func(cur *Image, tp TopicPartition) (*Record, ElectionOutcome, string) {
			return electOne(cur, req.Type, tp)
		},
		EligibleLeadersNotAvailable)
}

// electOne decides one partition's election against im.
func electOne(im *Image, typ ElectionType, tp TopicPartition) (*Record, ElectionOutcome, string) {
	t, ok := im.Topic(tp.Topic)
	if !ok {
		return nil, ElectionUnknownTopicOrPartition, "No such topic as " + tp.Topic
	}
	if tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return nil, ElectionUnknownTopicOrPartition, fmt.Sprintf("No such partition as %s-%d", tp.Topic, tp.Partition)
	}
	p := t.Partitions[tp.Partition]
	valid := func(id int32) bool {
		return id >= 0 && slices.Contains(p.ISR, id) && im.ReplicaWritable(id, tp.Topic, tp.Partition)
	}
	leader, isr := int32(-1), p.ISR
	switch typ {
	case ElectPreferred:
		if len(p.Replicas) > 0 && p.Leader == p.Replicas[0] {
			return nil, ElectionNotNeeded, ""
		}
		switch {
		case len(p.Replicas) > 0 && valid(p.Replicas[0]):
			leader = p.Replicas[0]
		case valid(p.Leader):
			// The current leader stays: nothing to change.
		default:
			for _, r := range p.Replicas {
				if valid(r) {
					leader = r
					break
				}
			}
		}
		if leader < 0 {
			return nil, PreferredLeaderNotAvailable, ""
		}
	case ElectUnclean:
		if p.Leader >= 0 {
			return nil, ElectionNotNeeded, ""
		}
		for _, r := range p.Replicas {
			if valid(r) {
				leader = r
				break
			}
		}
		if leader < 0 {
			for _, r := range p.Replicas {
				if im.ReplicaWritable(r, tp.Topic, tp.Partition) {
					leader, isr = r, []int32{r}
					break
				}
			}
		}
		if leader < 0 {
			return nil, EligibleLeadersNotAvailable, ""
		}
	default:
		return nil, ElectionInvalidType, fmt.Sprintf("Unknown election type %d", int8(typ))
	}
	return &Record{Type: TypeChangePartition, ChangePartition: &ChangePartition{
		Topic: t.Name, ID: t.ID, Partition: tp.Partition,
		Leader: leader, LeaderEpoch: p.LeaderEpoch + 1, PartitionEpoch: p.PartitionEpoch + 1,
		ISR: slices.Clone(isr),
	}}, "", ""
}
