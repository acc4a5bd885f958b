package metadata

// Partition reassignment as Kafka's KRaft controller does it
// (ReplicationControlManager.alterPartitionReassignments,
// PartitionReassignmentReplicas, PartitionReassignmentRevert,
// PartitionChangeBuilder):
//
//   - a reassignment of a partition to target sets Replicas = target
//     followed by the current replicas not in target (removing), with
//     AddingReplicas = target - current and RemovingReplicas = current -
//     target; the ISR and the leader do not change;
//   - the adding replicas fetch from the leader like any follower and the
//     leader adds them to the ISR once caught up (AlterPartition);
//   - every partition change checks whether the reassignment is complete:
//     the ISR without the removing replicas holds every target replica.
//     Then Replicas = target, the removing replicas leave the ISR, and when
//     the leader was one of them the first target replica that is in the
//     ISR and live leads; a change that drops replicas raises the leader
//     epoch. A reassignment whose target is already in the ISR (a reorder,
//     a shrink) completes at once;
//   - a new target for a partition being reassigned starts from its
//     current Replicas (the adding replicas not in the new target become
//     removing ones);
//   - cancelling reverts: Replicas = the replicas before (current minus
//     adding), the adding replicas leave the ISR. When that empties the ISR
//     the revert needs an unclean election: refused with
//     INVALID_REPLICA_ASSIGNMENT unless the topic allows it;
//   - bad input is refused per partition with Kafka's codes, and the
//     other partitions of the request still apply: an unknown topic or
//     partition UNKNOWN_TOPIC_OR_PARTITION (a topic being deleted is
//     already gone: deletion is one record, as in KRaft), an empty
//     target, a broker listed twice or an unregistered broker
//     INVALID_REPLICA_ASSIGNMENT, a cancel with nothing in progress
//     NO_REASSIGNMENT_IN_PROGRESS.

import (
	"context"
	"fmt"
	"slices"
)

// Reassignment asks to move one partition to Replicas (Kafka's
// ReassignablePartition), or with Cancel to revert the reassignment in
// progress.
type Reassignment struct {
	TopicPartition
	Replicas []int32 `json:"replicas,omitempty"`
	Cancel   bool    `json:"cancel,omitempty"`
}

// ReassignOutcome is what a reassignment request did for one partition:
// "" (accepted) or the name of Kafka's error code.
type ReassignOutcome string

// The refusals, named as Kafka's error codes.
const (
	ReassignUnknownTopicOrPartition ReassignOutcome = "UNKNOWN_TOPIC_OR_PARTITION"
	ReassignInvalidAssignment       ReassignOutcome = "INVALID_REPLICA_ASSIGNMENT"
	ReassignNoneInProgress          ReassignOutcome = "NO_REASSIGNMENT_IN_PROGRESS"
)

// ReassignResult is the outcome of one partition's reassignment request,
// with Kafka's message for a refusal.
type ReassignResult = PartitionResult[ReassignOutcome]

// Reassigner is the optional Store capability behind
// AlterPartitionReassignments: it decides and applies the changes of every
// accepted partition in one change and returns one result per request,
// in order. The changes are in Image once it returns.
type Reassigner interface {
	AlterPartitionReassignments(ctx context.Context, reqs []Reassignment) ([]ReassignResult, error)
}

// Reassigning reports whether a reassignment of p is in progress.
func (p Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas returns the replicas p has once its reassignment
// completes (Replicas without RemovingReplicas).
func (p Partition) TargetReplicas() []int32 {
	return without(p.Replicas, p.RemovingReplicas)
}

// OriginalReplicas returns the replicas p had before its reassignment
// (Replicas without AddingReplicas).
func (p Partition) OriginalReplicas() []int32 {
	return without(p.Replicas, p.AddingReplicas)
}

// BuildReassignments decides reqs against im, in order (each against the
// image after the accepted ones before it), and returns the records of
// the accepted ones and one result per request. unclean says whether a
// topic allows unclean leader election (nil: none does).
func BuildReassignments(im *Image, reqs []Reassignment, unclean func(*Topic) bool) ([]Record, []ReassignResult) {
	return decideEach(im, reqs, func(rq Reassignment) TopicPartition { return rq.TopicPartition },
		func(cur *Image, rq Reassignment) (*Record, ReassignOutcome, string) {
			return reassignOne(cur, rq, unclean)
		},
		ReassignInvalidAssignment)
}

// reassignOne decides one request against im: the record (nil when
// nothing changes or on refusal) or the refusal.
func reassignOne(im *Image, rq Reassignment, unclean func(*Topic) bool) (*Record, ReassignOutcome, string) {
	t, ok := im.Topic(rq.Topic)
	if !ok {
		return nil, ReassignUnknownTopicOrPartition, "Unable to find a topic named " + rq.Topic + "."
	}
	if rq.Partition < 0 || int(rq.Partition) >= len(t.Partitions) {
		return nil, ReassignUnknownTopicOrPartition, fmt.Sprintf("Unable to find partition %s:%d.", rq.Topic, rq.Partition)
	}
	p := t.Partitions[rq.Partition]
	if rq.Cancel {
		if !p.Reassigning() {
			return nil, ReassignNoneInProgress, "No partition reassignment is in progress."
		}
		reps := p.OriginalReplicas()
		isr := without(p.ISR, p.AddingReplicas)
		allowUnclean := unclean != nil && unclean(t)
		if len(isr) == 0 {
			if len(reps) == 0 {
				return nil, ReassignInvalidAssignment, "Invalid replica assignment: addingReplicas contains all replicas."
			}
			if !allowUnclean {
				return nil, ReassignInvalidAssignment, fmt.Sprintf("Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", rq.Topic, rq.Partition)
			}
			isr = []int32{reps[0]}
		}
		return buildPartitionChange(im, t, int(rq.Partition), reps, nil, nil, isr, allowUnclean), "", ""
	}
	if len(rq.Replicas) == 0 {
		return nil, ReassignInvalidAssignment, "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Clone(rq.Replicas)
	slices.Sort(sorted)
	for i, id := range sorted {
		if _, ok := im.Broker(id); !ok {
			return nil, ReassignInvalidAssignment, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return nil, ReassignInvalidAssignment, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	removing := sortedSet(without(p.Replicas, rq.Replicas))
	adding := sortedSet(without(rq.Replicas, p.Replicas))
	reps := append(slices.Clone(rq.Replicas), removing...)
	return buildPartitionChange(im, t, int(rq.Partition), reps, adding, removing, p.ISR, false), "", ""
}

// buildPartitionChange returns the record that takes partition i of t to
// the given assignment and ISR, completing a reassignment the ISR allows
// to complete and electing a leader when the current one cannot stay
// (Kafka's PartitionChangeBuilder with an ONLINE election, UNCLEAN when
// unclean); nil when nothing changes.
func buildPartitionChange(im *Image, t *Topic, i int, reps, adding, removing, isr []int32, unclean bool) *Record {
	cur := t.Partitions[i]
	if len(adding) > 0 || len(removing) > 0 {
		nisr, nreps := without(isr, removing), without(reps, removing)
		if len(nisr) > 0 && len(nreps) > 0 && containsAll(nisr, nreps) {
			isr, reps, adding, removing = nisr, nreps, nil, nil
		}
	}
	leader := cur.Leader
	if leader < 0 || !slices.Contains(isr, leader) || !im.Live(leader) || im.StorageFailed(leader) {
		leader = -1
		for _, pass := range []func(int32) bool{im.Writable, func(id int32) bool { return im.Live(id) && !im.StorageFailed(id) }} {
			for _, r := range reps {
				if slices.Contains(isr, r) && pass(r) {
					leader = r
					break
				}
			}
			if leader >= 0 {
				break
			}
		}
		if leader < 0 && unclean {
			for _, r := range reps {
				if im.Writable(r) {
					leader, isr = r, []int32{r}
					break
				}
			}
		}
		if leader < 0 && len(isr) == 0 {
			isr = slices.Clone(cur.ISR) // offline; the ISR is never empty
		}
	}
	epoch := cur.LeaderEpoch
	if leader != cur.Leader || !containsAll(reps, cur.Replicas) {
		epoch++
	}
	same := leader == cur.Leader && epoch == cur.LeaderEpoch && slices.Equal(isr, cur.ISR)
	sameAssignment := slices.Equal(reps, cur.Replicas) && slices.Equal(adding, nonEmpty(cur.AddingReplicas)) && slices.Equal(removing, nonEmpty(cur.RemovingReplicas))
	if same && sameAssignment {
		return nil
	}
	cp := &ChangePartition{
		Topic: t.Name, ID: t.ID, Partition: int32(i),
		Leader: leader, LeaderEpoch: epoch, PartitionEpoch: cur.PartitionEpoch + 1,
		ISR: slices.Clone(isr),
	}
	if !sameAssignment {
		cp.Replicas = slices.Clone(reps)
		cp.AddingReplicas = slices.Clone(adding)
		cp.RemovingReplicas = slices.Clone(removing)
	}
	return &Record{Type: TypeChangePartition, ChangePartition: cp}
}

// Reassignments returns the partitions being reassigned, in topic then
// partition order.
func (im *Image) Reassignments() []OngoingReassignment {
	var out []OngoingReassignment
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			if p.Reassigning() {
				out = append(out, OngoingReassignment{TopicPartition: TopicPartition{Topic: t.Name, Partition: int32(i)}, Partition: p})
			}
		}
	}
	return out
}

// OngoingReassignment is one partition being reassigned.
type OngoingReassignment struct {
	TopicPartition
	Partition Partition
}

// checkAssignment validates the assignment a ChangePartition sets:
// replicas listed once, adding and removing ones among them and apart.
func checkAssignment(cp *ChangePartition) error {
	if len(cp.Replicas) == 0 {
		return fmt.Errorf("%w: empty replica list", ErrInvalidReplicaAssignment)
	}
	for i, id := range cp.Replicas {
		if slices.Contains(cp.Replicas[:i], id) {
			return fmt.Errorf("%w: broker %d listed twice in %v", ErrInvalidReplicaAssignment, id, cp.Replicas)
		}
	}
	for _, id := range cp.AddingReplicas {
		if !slices.Contains(cp.Replicas, id) || slices.Contains(cp.RemovingReplicas, id) {
			return fmt.Errorf("%w: adding replica %d not among replicas %v or also removing", ErrInvalidReplicaAssignment, id, cp.Replicas)
		}
	}
	for _, id := range cp.RemovingReplicas {
		if !slices.Contains(cp.Replicas, id) {
			return fmt.Errorf("%w: removing replica %d not among replicas %v", ErrInvalidReplicaAssignment, id, cp.Replicas)
		}
	}
	return nil
}

// without returns a new slice of the members of a not in b, in order.
func without(a, b []int32) []int32 {
	out := make([]int32, 0, len(a))
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// containsAll reports whether every member of b is in a.
func containsAll(a, b []int32) bool {
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// sortedSet returns a sorted copy of ids, nil when empty.
func sortedSet(ids []int32) []int32 {
	if len(ids) == 0 {
		return nil
	}
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// nonEmpty returns a copy of ids, nil when empty (so an absent list and
// an empty one compare and encode alike).
func nonEmpty(ids []int32) []int32 {
	if len(ids) == 0 {
		return nil
	}
	return slices.Clone(ids)
}
