package metadata

import (
	"context"
	"slices"
	"testing"
)

// change applies a partition change of "t" to im.
func changeT(t *testing.T, im *Image, p int32, leader int32, isr ...int32) *Image {
	t.Helper()
	cur, _ := im.Partition("t", p)
	next, err := im.Apply(Record{Type: TypeChangePartition, ChangePartition: &ChangePartition{
		Topic: "t", Partition: p, Leader: leader, LeaderEpoch: cur.LeaderEpoch + 1, PartitionEpoch: cur.PartitionEpoch + 1, ISR: isr,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func fence(t *testing.T, im *Image, id int32, fenced bool) *Image {
	t.Helper()
	next, err := im.Apply(Record{Type: TypeFenceBroker, FenceBroker: &FenceBroker{NodeID: id, Fenced: fenced}})
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func outcomes(rs []ElectionResult) []ElectionOutcome {
	var out []ElectionOutcome
	for _, r := range rs {
		out = append(out, r.Outcome)
	}
	return out
}

func TestBuildElectLeadersPreferred(t *testing.T) {
	im := threeBrokers(t) // t-0 replicas [1 2 3], t-1 [2 3 1]
	// t-0 led by 2 (after 1 came back); t-1 led by its preferred replica.
	im = changeT(t, im, 0, 2, 1, 2, 3)
	req := ElectLeaders{Type: ElectPreferred, Partitions: []TopicPartition{{"t", 0}, {"t", 1}, {"t", 9}, {"nope", 0}, {"t", 0}}}
	recs, res := BuildElectLeaders(im, req)
	want := []ElectionOutcome{"", ElectionNotNeeded, ElectionUnknownTopicOrPartition, ElectionUnknownTopicOrPartition, ElectionNotNeeded}
	if got := outcomes(res); !slices.Equal(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if res[2].Message != "No such partition as t-9" || res[3].Message != "No such topic as nope" {
		t.Fatalf("messages %q %q", res[2].Message, res[3].Message)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	cp := recs[0].ChangePartition
	before, _ := im.Partition("t", 0)
	if cp.Leader != 1 || cp.LeaderEpoch != before.LeaderEpoch+1 || !slices.Equal(cp.ISR, []int32{1, 2, 3}) {
		t.Fatalf("change %+v", cp)
	}

	// The preferred replica out of the ISR, or fenced: not available, the
	// current leader stays.
	out := changeT(t, im, 0, 2, 2, 3)
	if _, res := BuildElectLeaders(out, ElectLeaders{Type: ElectPreferred, Partitions: []TopicPartition{{"t", 0}}}); res[0].Outcome != PreferredLeaderNotAvailable {
		t.Fatalf("preferred out of the ISR: %v", res[0].Outcome)
	}
	if recs, res := BuildElectLeaders(fence(t, im, 1, true), ElectLeaders{Type: ElectPreferred, Partitions: []TopicPartition{{"t", 0}}}); res[0].Outcome != PreferredLeaderNotAvailable || len(recs) != 0 {
		t.Fatalf("preferred fenced: %v %v", res[0].Outcome, recs)
	}

	// All: every partition, each result in order.
	recs, res = BuildElectLeaders(im, ElectLeaders{Type: ElectPreferred, All: true})
	if got := outcomes(res); len(recs) != 1 || !slices.Equal(got, []ElectionOutcome{"", ElectionNotNeeded}) {
		t.Fatalf("all: %v, %d records", got, len(recs))
	}
	// Applying the records gives the elections.
	for _, r := range recs {
		var err error
		if im, err = im.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if p, _ := im.Partition("t", 0); p.Leader != 1 {
		t.Fatalf("leader %d after election", p.Leader)
	}
}

func TestBuildElectLeadersUnclean(t *testing.T) {
	im := threeBrokers(t)
	// t-0 offline: its last ISR member 1 is fenced; 2 and 3 are live but
	// out of the ISR.
	im = changeT(t, im, 0, 1, 1)
	im = fence(t, im, 1, true)
	im = changeT(t, im, 0, -1, 1)
	req := ElectLeaders{Type: ElectUnclean, Partitions: []TopicPartition{{"t", 0}, {"t", 1}}}
	recs, res := BuildElectLeaders(im, req)
	if got := outcomes(res); !slices.Equal(got, []ElectionOutcome{"", ElectionNotNeeded}) {
		t.Fatalf("outcomes %v", got)
	}
	cp := recs[0].ChangePartition
	if cp.Leader != 2 || !slices.Equal(cp.ISR, []int32{2}) {
		t.Fatalf("unclean change %+v, want leader 2 ISR [2]", cp)
	}
	// A preferred election does not elect out of the ISR.
	if _, res := BuildElectLeaders(im, ElectLeaders{Type: ElectPreferred, Partitions: []TopicPartition{{"t", 0}}}); res[0].Outcome != PreferredLeaderNotAvailable {
		t.Fatalf("preferred on an offline partition: %v", res[0].Outcome)
	}
	// No live replica: not available.
	dead := fence(t, fence(t, im, 2, true), 3, true)
	if recs, res := BuildElectLeaders(dead, ElectLeaders{Type: ElectUnclean, Partitions: []TopicPartition{{"t", 0}}}); res[0].Outcome != EligibleLeadersNotAvailable || len(recs) != 0 {
		t.Fatalf("unclean without live replicas: %v %v", res[0].Outcome, recs)
	}
	// Back in the ISR, the ISR member is elected cleanly.
	back := fence(t, im, 1, false)
	if recs, _ := BuildElectLeaders(back, ElectLeaders{Type: ElectUnclean, Partitions: []TopicPartition{{"t", 0}}}); len(recs) != 1 || recs[0].ChangePartition.Leader != 1 || !slices.Equal(recs[0].ChangePartition.ISR, []int32{1}) {
		t.Fatalf("clean election first: %+v", recs)
	}
}

func TestFileStoreElectLeaders(t *testing.T) {
	s, err := OpenFile(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.RegisterBroker(ctx, Broker{NodeID: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := s.ElectLeaders(ctx, ElectLeaders{Type: ElectPreferred, Partitions: []TopicPartition{{"t", 0}, {"t", 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(res); !slices.Equal(got, []ElectionOutcome{ElectionNotNeeded, ElectionUnknownTopicOrPartition}) {
		t.Fatalf("outcomes %v", got)
	}
	res, err = s.ElectLeaders(ctx, ElectLeaders{Type: ElectUnclean, All: true})
	if err != nil || !slices.Equal(outcomes(res), []ElectionOutcome{ElectionNotNeeded, ElectionNotNeeded}) {
		t.Fatalf("unclean all: %v %v", outcomes(res), err)
	}
}
