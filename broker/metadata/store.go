package metadata

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Store is the metadata the Kafka handlers read and change.
//
// Contract:
//   - Image returns the current image; it never changes afterwards (read it
//     without locks, keep it as long as you like).
//   - The write methods build a record, make it durable (file now, a Raft
//     quorum later), apply it, run the watchers and only then return; so a
//     caller sees its own change in the next Image(). They return errors
//     wrapping the sentinels (ErrTopicExists, ErrUnknownTopic,
//     ErrInvalidTopic, ErrInvalidPartitions, ErrInvalidReplicationFactor,
//     ErrClosed); a durability failure is returned as is and nothing is
//     applied.
//   - Maps passed in are copied; the returned *Topic is immutable.
type Store interface {
	Image() *Image
	CreateTopic(ctx context.Context, spec TopicSpec) (*Topic, error)
	DeleteTopic(ctx context.Context, name string) (*Topic, error)
	// CreatePartitions grows a topic to total partitions; assignment,
	// when not nil, places the new partitions' replicas (one list per
	// new partition, as TopicSpec.Assignment).
	CreatePartitions(ctx context.Context, name string, total int32, assignment [][]int32) (*Topic, error)
	AlterTopicConfig(ctx context.Context, name string, configs map[string]string) (*Topic, error)
	RegisterBroker(ctx context.Context, b Broker) error
	// Watch registers fn to run after every applied record, in record
	// order, with the images before and after it. fn runs on the applying
	// goroutine while the store's write lock is held: it must be quick and
	// must not call the Store's write methods.
	Watch(fn func(Change))
}

// PartitionAlterer is the optional Store capability a partition leader
// uses to shrink or expand its ISR (Kafka's AlterPartition). It returns
// the partition as it is after the change (which is then visible in
// Image), or an error wrapping ErrFencedLeaderEpoch,
// ErrStalePartitionEpoch (re-read the image and decide again),
// ErrInvalidISR, ErrUnknownTopic or ErrUnknownPartition.
type PartitionAlterer interface {
	AlterPartition(ctx context.Context, req AlterPartition) (Partition, error)
}

// AlterPartition asks to set a partition's ISR; the leader sends it with
// the leader and epochs as it knows them.
type AlterPartition struct {
	Topic          string  `json:"topic"`
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`
}

// Change is one applied record with the images around it.
type Change struct {
	Record        Record
	Before, After *Image
}

// TopicSpec asks for a new topic. Partitions < 1 or ReplicationFactor < 1
// mean "the default" and must be resolved by the caller (the Kafka layer
// knows num.partitions and default.replication.factor).
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
	// Assignment, when set, places the replicas explicitly (Kafka's
	// replica_assignment): Assignment[p] lists partition p's replicas,
	// the first the preferred leader. Partitions and ReplicationFactor
	// must match it. Nil: replicas are spread over the live brokers.
	Assignment [][]int32 `json:",omitempty"`
	// ValidateOnly checks the request and returns the topic it would
	// create without creating it (CreateTopics validate_only).
	ValidateOnly bool
}

// BuildCreateTopic validates spec against im and returns the record; the
// replicas are spread over the live brokers unless spec.Assignment places
// them.
func BuildCreateTopic(im *Image, spec TopicSpec) (Record, error) {
	if err := ValidateTopicName(spec.Name); err != nil {
		return Record{}, err
	}
	if _, ok := im.Topic(spec.Name); ok {
		return Record{}, fmt.Errorf("topic %q: %w", spec.Name, ErrTopicExists)
	}
	if err := checkCollision(im, spec.Name); err != nil {
		return Record{}, err
	}
	if spec.Partitions < 1 {
		return Record{}, fmt.Errorf("topic %q: %w: %d", spec.Name, ErrInvalidPartitions, spec.Partitions)
	}
	var parts []Partition
	var err error
	if spec.Assignment != nil {
		if int32(len(spec.Assignment)) != spec.Partitions {
			return Record{}, fmt.Errorf("topic %q: %w: %d partitions assigned, %d asked for", spec.Name, ErrInvalidReplicaAssignment, len(spec.Assignment), spec.Partitions)
		}
		parts, err = assigned(im, spec.Assignment, spec.ReplicationFactor, 0)
	} else {
		if parts, err = Assign(im.LiveBrokers(), 0, spec.Partitions, spec.ReplicationFactor); err == nil {
			placed(im, parts)
		}
	}
	if err != nil {
		return Record{}, fmt.Errorf("topic %q: %w", spec.Name, err)
	}
	return Record{Type: TypeCreateTopic, CreateTopic: &CreateTopic{
		Name: spec.Name, ID: NewUUID(), Partitions: parts, Configs: cloneConfigs(spec.Configs),
	}}, nil
}

// assigned turns an explicit assignment into partitions: every replica a
// registered broker, listed once, the same number per partition; the
// leader is the first live replica and the ISR the live replicas (one on
// a fenced broker joins the ISR once it has caught up, as after a
// restart).
// Partition numbers in errors start at first.
func assigned(im *Image, assignment [][]int32, rf int16, first int32) ([]Partition, error) {
	known := map[int32]bool{}
	for _, b := range im.Brokers() {
		known[b.NodeID] = true
	}
	out := make([]Partition, len(assignment))
	for i, reps := range assignment {
		p := first + int32(i)
		if len(reps) == 0 || len(reps) != int(rf) {
			return nil, fmt.Errorf("%w: partition %d has %d replicas, want %d for every partition", ErrInvalidReplicaAssignment, p, len(reps), rf)
		}
		for i, id := range reps {
			if !known[id] {
				return nil, fmt.Errorf("%w: partition %d is assigned to unknown broker %d", ErrInvalidReplicaAssignment, p, id)
			}
			if slices.Contains(reps[:i], id) {
				return nil, fmt.Errorf("%w: partition %d lists broker %d twice", ErrInvalidReplicaAssignment, p, id)
			}
		}
		isr := startingISR(im, reps)
		if len(isr) == 0 {
			return nil, fmt.Errorf("%w: partition %d has no live replica among %v", ErrInvalidReplicaAssignment, p, reps)
		}
		out[i] = Partition{Leader: isr[0], Replicas: slices.Clone(reps), ISR: isr}
	}
	return out, nil
}

// startingISR is the ISR of a new partition: its writable replicas, in
// assignment order (the first leads). When none can write (full disks)
// the live ones whose storage has not failed: they lead and answer
// KAFKA_STORAGE_ERROR until space is freed, rather than the topic being
// refused. Replicas left out join once they can write and caught up.
func startingISR(im *Image, reps []int32) []int32 {
	var isr []int32
	for _, id := range reps {
		if im.Writable(id) {
			isr = append(isr, id)
		}
	}
	if len(isr) == 0 {
		for _, id := range reps {
			if im.Live(id) && !im.StorageFailed(id) {
				isr = append(isr, id)
			}
		}
	}
	return isr
}

// placed gives partitions placed by Assign their starting leader and ISR.
func placed(im *Image, parts []Partition) {
	for i := range parts {
		if isr := startingISR(im, parts[i].Replicas); len(isr) > 0 {
			parts[i].Leader, parts[i].ISR = isr[0], isr
		}
	}
}

// checkCollision rejects names that differ from an existing one only by
// '.' versus '_' (Kafka forbids them: metric names would collide).
func checkCollision(im *Image, name string) error {
	norm := strings.ReplaceAll(name, ".", "_")
	for _, t := range im.topics {
		if strings.ReplaceAll(t.Name, ".", "_") == norm {
			return fmt.Errorf("%w: %q collides with existing topic %q ('.' and '_' are interchangeable in metric names)", ErrInvalidTopic, name, t.Name)
		}
	}
	return nil
}

// BuildCreatePartitions validates growing a topic to total partitions and
// returns the record; new replicas go to the live brokers unless
// assignment places them (one replica list per new partition).
func BuildCreatePartitions(im *Image, name string, total int32, assignment [][]int32) (Record, error) {
	t, ok := im.Topic(name)
	if !ok {
		return Record{}, fmt.Errorf("topic %q: %w", name, ErrUnknownTopic)
	}
	have := int32(len(t.Partitions))
	if total <= have {
		return Record{}, fmt.Errorf("topic %q: %w: asked for %d, it already has %d", name, ErrInvalidPartitions, total, have)
	}
	rf := int16(len(t.Partitions[0].Replicas))
	var parts []Partition
	var err error
	if assignment != nil {
		if int32(len(assignment)) != total-have {
			return Record{}, fmt.Errorf("topic %q: %w: growing from %d to %d partitions needs %d assignments, got %d", name, ErrInvalidReplicaAssignment, have, total, total-have, len(assignment))
		}
		parts, err = assigned(im, assignment, rf, have)
	} else {
		if parts, err = Assign(im.LiveBrokers(), have, total-have, rf); err == nil {
			placed(im, parts)
		}
	}
	if err != nil {
		return Record{}, fmt.Errorf("topic %q: %w", name, err)
	}
	return Record{Type: TypeCreatePartitions, CreatePartitions: &CreatePartitions{Name: name, Partitions: parts}}, nil
}

// BuildAlterPartition validates an ISR change asked for by a partition's
// leader and returns the record. The leader and both epochs must be the
// current ones; members added to the ISR must be live brokers.
func BuildAlterPartition(im *Image, req AlterPartition) (Record, error) {
	t, ok := im.Topic(req.Topic)
	if !ok {
		return Record{}, fmt.Errorf("topic %q: %w", req.Topic, ErrUnknownTopic)
	}
	if req.Partition < 0 || int(req.Partition) >= len(t.Partitions) {
		return Record{}, fmt.Errorf("topic %q partition %d: %w", req.Topic, req.Partition, ErrUnknownPartition)
	}
	cur := t.Partitions[req.Partition]
	name := fmt.Sprintf("%s-%d", req.Topic, req.Partition)
	if req.Leader != cur.Leader || req.LeaderEpoch != cur.LeaderEpoch {
		return Record{}, fmt.Errorf("%s: %w: leader %d epoch %d asked, current leader %d epoch %d",
			name, ErrFencedLeaderEpoch, req.Leader, req.LeaderEpoch, cur.Leader, cur.LeaderEpoch)
	}
	if req.PartitionEpoch != cur.PartitionEpoch {
		return Record{}, fmt.Errorf("%s: %w: asked for %d, current %d", name, ErrStalePartitionEpoch, req.PartitionEpoch, cur.PartitionEpoch)
	}
	for _, id := range req.ISR {
		if !slices.Contains(cur.ISR, id) && !im.ReplicaWritable(id, req.Topic, req.Partition) {
			if im.Live(id) {
				return Record{}, fmt.Errorf("%s: %w: broker %d cannot write (log directory %s)", name, ErrInvalidISR, id, im.ReplicaStorage(id, req.Topic, req.Partition))
			}
			return Record{}, fmt.Errorf("%s: %w: broker %d is not live", name, ErrInvalidISR, id)
		}
	}
	if cur.Reassigning() && len(req.ISR) > 0 && slices.Contains(req.ISR, cur.Leader) && containsAll(cur.Replicas, req.ISR) {
		// The ISR change may complete the reassignment (reassign.go).
		if r := buildPartitionChange(im, t, int(req.Partition), cur.Replicas, cur.AddingReplicas, cur.RemovingReplicas, req.ISR, false); r != nil {
			return *r, nil
		}
	}
	cp := &ChangePartition{
		Topic: req.Topic, ID: t.ID, Partition: req.Partition,
		Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch + 1,
		ISR: slices.Clone(req.ISR),
	}
	if err := checkChange(cur, cp); err != nil {
		return Record{}, fmt.Errorf("%s: %w", name, err)
	}
	return Record{Type: TypeChangePartition, ChangePartition: cp}, nil
}
