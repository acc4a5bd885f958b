package metadata

import (
	"encoding/json"
	"slices"
	"testing"
)

// fourBrokers is threeBrokers with broker 4 registered too (t-0 [1 2 3],
// t-1 [2 3 1]).
func fourBrokers(t *testing.T) *Image {
	t.Helper()
	im := threeBrokers(t)
	next, err := im.Apply(Record{Type: TypeRegisterBroker, RegisterBroker: &Broker{NodeID: 4, Host: "h", Port: 9004}})
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// reassign applies BuildReassignments of reqs to im.
func reassign(t *testing.T, im *Image, unclean func(*Topic) bool, reqs ...Reassignment) (*Image, []ReassignResult) {
	t.Helper()
	recs, res := BuildReassignments(im, reqs, unclean)
	for _, r := range recs {
		next, err := im.Apply(r)
		if err != nil {
			t.Fatalf("applying %+v: %v", r.ChangePartition, err)
		}
		im = next
	}
	return im, res
}

// alterISR applies the ISR change the partition's leader asks for.
func alterISR(t *testing.T, im *Image, p int32, isr ...int32) *Image {
	t.Helper()
	cur, _ := im.Partition("t", p)
	r, err := BuildAlterPartition(im, AlterPartition{Topic: "t", Partition: p, Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, ISR: isr})
	if err != nil {
		t.Fatal(err)
	}
	next, err := im.Apply(r)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func move(p int32, reps ...int32) Reassignment {
	return Reassignment{TopicPartition: TopicPartition{"t", p}, Replicas: reps}
}

func cancelMove(p int32) Reassignment {
	return Reassignment{TopicPartition: TopicPartition{"t", p}, Cancel: true}
}

func part(t *testing.T, im *Image, p int32) Partition {
	t.Helper()
	got, ok := im.Partition("t", p)
	if !ok {
		t.Fatalf("no t-%d", p)
	}
	return got
}

// TestReassignAddThenComplete: [1 2 3] -> [4 2 3] adds 4 and removes 1
// (the leader); the ISR change that brings 4 in completes it: replicas
// [4 2 3], 1 out of the ISR, a new leader from the target (the first
// target replica in the ISR: 4), leader epoch + 1.
func TestReassignAddThenComplete(t *testing.T) {
	im := fourBrokers(t)
	before := part(t, im, 0)
	im, res := reassign(t, im, nil, move(0, 4, 2, 3))
	if res[0].Outcome != "" {
		t.Fatalf("refused: %+v", res[0])
	}
	p := part(t, im, 0)
	if !slices.Equal(p.Replicas, []int32{4, 2, 3, 1}) || !slices.Equal(p.AddingReplicas, []int32{4}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("started %+v", p)
	}
	if p.Leader != 1 || p.LeaderEpoch != before.LeaderEpoch || !slices.Equal(p.ISR, before.ISR) {
		t.Fatalf("starting a reassignment changed leadership: %+v", p)
	}
	if got := im.Reassignments(); len(got) != 1 || got[0].Topic != "t" || got[0].TopicPartition.Partition != 0 {
		t.Fatalf("Reassignments() = %+v", got)
	}
	// Not complete while 4 is out of the ISR.
	im = alterISR(t, im, 0, 1, 2)
	if p := part(t, im, 0); !p.Reassigning() || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("ISR shrink completed it: %+v", p)
	}
	im = alterISR(t, im, 0, 1, 2, 3, 4)
	p = part(t, im, 0)
	if !slices.Equal(p.Replicas, []int32{4, 2, 3}) || p.Reassigning() {
		t.Fatalf("not completed: %+v", p)
	}
	if !slices.Equal(p.ISR, []int32{2, 3, 4}) || p.Leader != 4 || p.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("completion: leader %d epoch %d ISR %v, want leader 4 (the first target replica in the ISR) epoch %d ISR [2 3 4]", p.Leader, p.LeaderEpoch, p.ISR, before.LeaderEpoch+1)
	}
	if len(im.Reassignments()) != 0 {
		t.Fatal("still listed")
	}
}

// TestReassignReorderCompletesAtOnce: a target already in the ISR (a
// reorder, a shrink) completes in the same record; the leader stays
// when it is kept, and a shrink raises the leader epoch.
func TestReassignReorderCompletesAtOnce(t *testing.T) {
	im := fourBrokers(t)
	before := part(t, im, 0)
	im, _ = reassign(t, im, nil, move(0, 3, 2, 1))
	p := part(t, im, 0)
	if !slices.Equal(p.Replicas, []int32{3, 2, 1}) || p.Reassigning() || p.Leader != 1 || p.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("reorder: %+v", p)
	}
	im, _ = reassign(t, im, nil, move(0, 1, 2))
	p = part(t, im, 0)
	if !slices.Equal(p.Replicas, []int32{1, 2}) || p.Reassigning() || !slices.Equal(p.ISR, []int32{1, 2}) || p.Leader != 1 || p.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("shrink: %+v", p)
	}
	// The same target again: nothing to do.
	if recs, res := BuildReassignments(im, []Reassignment{move(0, 1, 2)}, nil); len(recs) != 0 || res[0].Outcome != "" {
		t.Fatalf("no-op reassignment: %d records, %+v", len(recs), res)
	}
}

// TestReassignBadInput: Kafka's codes per partition, the good ones of
// the same request still apply, the refused change nothing.
func TestReassignBadInput(t *testing.T) {
	im := fourBrokers(t)
	reqs := []Reassignment{
		move(0, 1, 1, 2),
		move(0, 1, 9),
		move(0),
		{TopicPartition: TopicPartition{"nope", 0}, Replicas: []int32{1}},
		move(7, 1),
		cancelMove(0),
		move(1, 2, 3, 4),
	}
	next, res := reassign(t, im, nil, reqs...)
	want := []ReassignOutcome{ReassignInvalidAssignment, ReassignInvalidAssignment, ReassignInvalidAssignment, ReassignUnknownTopicOrPartition, ReassignUnknownTopicOrPartition, ReassignNoneInProgress, ""}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Errorf("request %d (%+v): %s %q, want %s", i, reqs[i], r.Outcome, r.Message, want[i])
		}
	}
	msgs := []string{
		"The manual partition assignment includes the broker 1 more than once.",
		"The manual partition assignment includes broker 9, but no such broker is registered.",
		"The manual partition assignment includes an empty replica list.",
		"Unable to find a topic named nope.",
		"Unable to find partition t:7.",
		"No partition reassignment is in progress.",
	}
	for i, m := range msgs {
		if res[i].Message != m {
			t.Errorf("request %d message %q, want %q", i, res[i].Message, m)
		}
	}
	if p0, p1 := part(t, next, 0), part(t, im, 0); !slices.Equal(p0.Replicas, p1.Replicas) || p0.PartitionEpoch != p1.PartitionEpoch {
		t.Fatalf("refused requests changed t-0: %+v", p0)
	}
	if p := part(t, next, 1); !slices.Equal(p.AddingReplicas, []int32{4}) {
		t.Fatalf("the good request did not apply: %+v", p)
	}
}

// TestReassignCancel: cancelling reverts to the replicas before and takes
// the adding replicas out of the ISR; when only adding replicas are in
// the ISR the revert needs unclean election.
func TestReassignCancel(t *testing.T) {
	im := fourBrokers(t)
	im, _ = reassign(t, im, nil, move(0, 4, 2, 3))
	im = alterISR(t, im, 0, 1, 4) // 4 in, 2 and 3 out: not complete
	if p := part(t, im, 0); !p.Reassigning() {
		t.Fatalf("completed early: %+v", p)
	}
	next, res := reassign(t, im, nil, cancelMove(0))
	if res[0].Outcome != "" {
		t.Fatalf("cancel refused: %+v", res[0])
	}
	p := part(t, next, 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 1}) || p.Reassigning() || !slices.Equal(p.ISR, []int32{1}) || p.Leader != 1 {
		t.Fatalf("reverted to %+v, want replicas [2 3 1] ISR [1] leader 1", p)
	}

	// A reassignment of t-1 [2 3 1] to [4] whose ISR ends up [4] only
	// (hand-made: the others fell out) cannot revert cleanly.
	im, _ = reassign(t, im, nil, move(1, 4))
	cur := part(t, im, 1)
	im, err := im.Apply(Record{Type: TypeChangePartition, ChangePartition: &ChangePartition{Topic: "t", Partition: 1, Leader: 4, LeaderEpoch: cur.LeaderEpoch + 1, PartitionEpoch: cur.PartitionEpoch + 1, ISR: []int32{4}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, res := reassign(t, im, nil, cancelMove(1)); res[0].Outcome != ReassignInvalidAssignment ||
		res[0].Message != "Unable to revert partition assignment for t:1 because it would require an unclean leader election." {
		t.Fatalf("unclean revert: %+v", res[0])
	}
	next, res = reassign(t, im, func(*Topic) bool { return true }, cancelMove(1))
	if res[0].Outcome != "" {
		t.Fatalf("unclean revert with unclean election allowed: %+v", res[0])
	}
	// Kafka's revert keeps the removing replicas in sorted order.
	if p := part(t, next, 1); !slices.Equal(p.Replicas, []int32{1, 2, 3}) || !slices.Equal(p.ISR, []int32{1}) || p.Leader != 1 {
		t.Fatalf("unclean revert gave %+v", p)
	}
}

// TestReassignRetarget: a new target for a partition being reassigned
// starts from its current replicas (adding replicas not in the new
// target become removing ones).
func TestReassignRetarget(t *testing.T) {
	im := fourBrokers(t)
	im, _ = reassign(t, im, nil, move(0, 4, 2, 3))
	im, _ = reassign(t, im, nil, move(0, 1, 2))
	p := part(t, im, 0)
	// current [4 2 3 1] -> [1 2]: removing [3 4], nothing to add, ISR [1 2 3] holds [1 2]: complete.
	if !slices.Equal(p.Replicas, []int32{1, 2}) || p.Reassigning() || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("retarget: %+v", p)
	}
}

// TestPartitionJSONCompat: records and partitions without the
// reassignment fields still decode; the fields round-trip.
func TestPartitionJSONCompat(t *testing.T) {
	var p Partition
	if err := json.Unmarshal([]byte(`{"leader":1,"leader_epoch":2,"replicas":[1,2],"isr":[1]}`), &p); err != nil || p.Reassigning() {
		t.Fatalf("old partition: %+v %v", p, err)
	}
	b, _ := json.Marshal(p)
	if string(b) != `{"leader":1,"leader_epoch":2,"replicas":[1,2],"isr":[1]}` {
		t.Fatalf("encoded %s", b)
	}
	p.AddingReplicas, p.RemovingReplicas = []int32{2}, []int32{1}
	b, _ = json.Marshal(p)
	var q Partition
	if err := json.Unmarshal(b, &q); err != nil || !slices.Equal(q.AddingReplicas, []int32{2}) || !slices.Equal(q.RemovingReplicas, []int32{1}) {
		t.Fatalf("round trip of %s: %+v %v", b, q, err)
	}
}

// TestChangePartitionAssignmentChecked: a record setting an assignment
// with a replica twice, or an ISR outside it, does not apply.
func TestChangePartitionAssignmentChecked(t *testing.T) {
	im := fourBrokers(t)
	cur := part(t, im, 0)
	for _, cp := range []ChangePartition{
		{Replicas: []int32{1, 1}, ISR: []int32{1}, Leader: 1},
		{Replicas: []int32{2, 3}, ISR: []int32{1}, Leader: 1},
		{Replicas: []int32{1, 2}, AddingReplicas: []int32{4}, ISR: []int32{1}, Leader: 1},
	} {
		cp.Topic, cp.Partition, cp.LeaderEpoch, cp.PartitionEpoch = "t", 0, cur.LeaderEpoch, cur.PartitionEpoch+1
		if _, err := im.Apply(Record{Type: TypeChangePartition, ChangePartition: &cp}); err == nil {
			t.Errorf("applied %+v", cp)
		}
	}
}
