package metadata

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// threeBrokers returns an image with brokers 1..3 and topic "t" (2
// partitions, replication factor 3).
func threeBrokers(t *testing.T) *Image {
	t.Helper()
	im := &Image{}
	apply := func(r Record) {
		t.Helper()
		next, err := im.Apply(r)
		if err != nil {
			t.Fatalf("apply %s: %v", r.Type, err)
		}
		im = next
	}
	for id := int32(1); id <= 3; id++ {
		apply(Record{Type: TypeRegisterBroker, RegisterBroker: &Broker{NodeID: id, Host: "h", Port: 9000 + id}})
	}
	r, err := BuildCreateTopic(im, TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	apply(r)
	return im
}

func TestAssignNeverSharesABroker(t *testing.T) {
	var bs []Broker
	for id := int32(0); id < 5; id++ {
		bs = append(bs, Broker{NodeID: id})
	}
	for rf := int16(1); rf <= 5; rf++ {
		ps, err := Assign(bs, 3, 20, rf)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for i, p := range ps {
			seen := map[int32]bool{}
			for _, r := range p.Replicas {
				if seen[r] {
					t.Fatalf("rf %d partition %d: replicas %v share a broker", rf, i, p.Replicas)
				}
				seen[r] = true
			}
			if len(p.Replicas) != int(rf) || p.Leader != p.Replicas[0] || !slices.Equal(p.ISR, p.Replicas) {
				t.Fatalf("rf %d partition %d: %+v", rf, i, p)
			}
			leaders[p.Leader]++
		}
		if len(leaders) != 5 {
			t.Fatalf("rf %d: leaders on %d of 5 brokers", rf, len(leaders))
		}
	}
}

func TestAlterPartitionChecksEpochsAndMembers(t *testing.T) {
	im := threeBrokers(t)
	p, _ := im.Partition("t", 0)
	if p.Leader != 1 || p.PartitionEpoch != 0 {
		t.Fatalf("partition 0 = %+v", p)
	}
	req := AlterPartition{Topic: "t", Partition: 0, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 0, ISR: []int32{1, 2}}
	r, err := BuildAlterPartition(im, req)
	if err != nil {
		t.Fatal(err)
	}
	im2, err := im.Apply(r)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := im2.Partition("t", 0)
	if !slices.Equal(p2.ISR, []int32{1, 2}) || p2.PartitionEpoch != 1 || p2.LeaderEpoch != 0 || p2.Leader != 1 {
		t.Fatalf("after shrink: %+v", p2)
	}
	// The same change applied twice is stale: the epoch moved.
	if _, err := im2.Apply(r); !errors.Is(err, ErrStalePartitionEpoch) {
		t.Fatalf("re-applying: %v", err)
	}
	if _, err := BuildAlterPartition(im2, req); !errors.Is(err, ErrStalePartitionEpoch) {
		t.Fatalf("stale request: %v", err)
	}
	bad := req
	bad.PartitionEpoch, bad.LeaderEpoch = 1, 3
	if _, err := BuildAlterPartition(im2, bad); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("wrong leader epoch: %v", err)
	}
	bad = req
	bad.PartitionEpoch, bad.ISR = 1, []int32{2, 3}
	if _, err := BuildAlterPartition(im2, bad); !errors.Is(err, ErrInvalidISR) {
		t.Fatalf("ISR without the leader: %v", err)
	}
	// A fenced broker cannot be added back to the ISR.
	im3, err := im2.Apply(Record{Type: TypeFenceBroker, FenceBroker: &FenceBroker{NodeID: 3, Fenced: true}})
	if err != nil {
		t.Fatal(err)
	}
	add := AlterPartition{Topic: "t", Partition: 0, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{1, 2, 3}}
	if _, err := BuildAlterPartition(im3, add); !errors.Is(err, ErrInvalidISR) {
		t.Fatalf("adding a fenced broker: %v", err)
	}
	if live := im3.LiveBrokers(); len(live) != 2 || im3.Live(3) || !im3.Live(1) {
		t.Fatalf("live brokers %v", live)
	}
	if _, err := BuildAlterPartition(im2, add); err != nil {
		t.Fatalf("adding a live broker: %v", err)
	}
	// New topics are placed on live brokers only.
	if _, err := BuildCreateTopic(im3, TopicSpec{Name: "u", Partitions: 1, ReplicationFactor: 3}); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Fatalf("rf 3 with a fenced broker: %v", err)
	}
	// Snapshots keep fencing and epochs.
	re := &Image{}
	for _, r := range im3.Records() {
		if re, err = re.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if re.Live(3) || !slices.Equal(mustPartition(t, re, "t", 0).ISR, []int32{1, 2}) || mustPartition(t, re, "t", 0).PartitionEpoch != 1 {
		t.Fatalf("snapshot lost state: %+v", mustPartition(t, re, "t", 0))
	}
}

func mustPartition(t *testing.T, im *Image, topic string, p int32) Partition {
	t.Helper()
	part, ok := im.Partition(topic, p)
	if !ok {
		t.Fatalf("%s-%d missing", topic, p)
	}
	return part
}

func TestChangePartitionValidation(t *testing.T) {
	im := threeBrokers(t)
	ch := func(leader, epoch, pepoch int32, isr ...int32) error {
		_, err := im.Apply(Record{Type: TypeChangePartition, ChangePartition: &ChangePartition{
			Topic: "t", Partition: 1, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: pepoch, ISR: isr}})
		return err
	}
	if err := ch(3, 1, 1, 3, 1); err != nil {
		t.Fatalf("valid election: %v", err)
	}
	if err := ch(-1, 1, 1, 3); err != nil {
		t.Fatalf("offline: %v", err)
	}
	for _, tc := range []struct {
		err    error
		leader int32
		ep, pe int32
		isr    []int32
	}{
		{ErrStalePartitionEpoch, 2, 1, 0, []int32{2}},
		{ErrStalePartitionEpoch, 2, 1, 2, []int32{2}},
		{ErrFencedLeaderEpoch, 2, -1, 1, []int32{2}},
		{ErrInvalidISR, 2, 1, 1, nil},
		{ErrInvalidISR, 2, 1, 1, []int32{3}},
		{ErrInvalidISR, 2, 1, 1, []int32{2, 2}},
		{ErrInvalidISR, 2, 1, 1, []int32{2, 7}},
	} {
		if err := ch(tc.leader, tc.ep, tc.pe, tc.isr...); !errors.Is(err, tc.err) {
			t.Errorf("change leader %d epoch %d/%d isr %v: got %v, want %v", tc.leader, tc.ep, tc.pe, tc.isr, err, tc.err)
		}
	}
	if _, err := im.Apply(Record{Type: TypeFenceBroker, FenceBroker: &FenceBroker{NodeID: 9, Fenced: true}}); !errors.Is(err, ErrUnknownBroker) {
		t.Fatalf("fencing an unknown broker: %v", err)
	}
}

func TestFileStoreAlterPartitionAndRecordsRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir)
	if err := s.RegisterBroker(ctx, Broker{NodeID: 1, Host: "h", Port: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTopic(ctx, TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := s.AlterPartition(ctx, AlterPartition{Topic: "t", Partition: 0, Leader: 1, ISR: []int32{1}})
	if err != nil || p.PartitionEpoch != 1 {
		t.Fatalf("AlterPartition = %+v, %v", p, err)
	}
	s.Close()
	s2 := openT(t, dir)
	if got := mustPartition(t, s2.Image(), "t", 0); got.PartitionEpoch != 1 {
		t.Fatalf("after reopen: %+v", got)
	}
	rs := s2.Image().Records()
	b, err := EncodeRecords(rs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeRecords(b)
	if err != nil || len(back) != len(rs) {
		t.Fatalf("DecodeRecords: %d records, %v", len(back), err)
	}
	if _, err := DecodeRecords([]byte(`[{"type":"fence_broker"}]`)); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("record without payload: %v", err)
	}
}
