package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"weir/broker/metadata"
)

// cluster builds an image with live brokers ids and one topic "t" whose
// partitions have the given replica lists (leader = first, ISR = all).
func cluster(t *testing.T, ids []int32, parts ...[]int32) *metadata.Image {
	t.Helper()
	im := &metadata.Image{}
	for _, id := range ids {
		im = apply(t, im, metadata.Record{Type: metadata.TypeRegisterBroker, RegisterBroker: &metadata.Broker{NodeID: id, Host: "h", Port: 9000 + id}})
	}
	var ps []metadata.Partition
	for _, reps := range parts {
		ps = append(ps, metadata.Partition{Leader: reps[0], Replicas: reps, ISR: slices.Clone(reps)})
	}
	return apply(t, im, metadata.Record{Type: metadata.TypeCreateTopic, CreateTopic: &metadata.CreateTopic{Name: "t", ID: metadata.NewUUID(), Partitions: ps}})
}

func apply(t *testing.T, im *metadata.Image, rs ...metadata.Record) *metadata.Image {
	t.Helper()
	for _, r := range rs {
		next, err := im.Apply(r)
		if err != nil {
			t.Fatalf("apply %s: %v", r.Type, err)
		}
		im = next
	}
	return im
}

// show renders partitions as "p0 L1 e0 [1 2 3]; ...".
func show(im *metadata.Image) string {
	tp, _ := im.Topic("t")
	var parts []string
	for i, p := range tp.Partitions {
		parts = append(parts, fmt.Sprintf("p%d L%d e%d %v", i, p.Leader, p.LeaderEpoch, p.ISR))
	}
	return strings.Join(parts, "; ")
}

func TestFenceMovesLeadershipAndShrinksISR(t *testing.T) {
	im := cluster(t, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}, []int32{1})
	im = apply(t, im, FenceBroker(im, 1, nil)...)
	if got, want := show(im), "p0 L2 e1 [2 3]; p1 L2 e0 [2 3]; p2 L3 e0 [3 2]; p3 L-1 e1 [1]"; got != want {
		t.Fatalf("after fencing 1:\n got %s\nwant %s", got, want)
	}
	if im.Live(1) {
		t.Fatal("broker 1 still live")
	}
	if FenceBroker(im, 1, nil) != nil {
		t.Fatal("fencing twice produced records")
	}
	im = apply(t, im, FenceBroker(im, 2, nil)...)
	if got, want := show(im), "p0 L3 e2 [3]; p1 L3 e1 [3]; p2 L3 e0 [3]; p3 L-1 e1 [1]"; got != want {
		t.Fatalf("after fencing 2:\n got %s\nwant %s", got, want)
	}
	im = apply(t, im, FenceBroker(im, 3, nil)...)
	if got, want := show(im), "p0 L-1 e3 [3]; p1 L-1 e2 [3]; p2 L-1 e1 [3]; p3 L-1 e1 [1]"; got != want {
		t.Fatalf("after fencing 3:\n got %s\nwant %s", got, want)
	}
	// Broker 1 returns: it is not in the ISR of p0-p2 (3 holds what was
	// committed), so they stay offline; p3 is its own.
	im = apply(t, im, UnfenceBroker(im, 1, nil)...)
	if got, want := show(im), "p0 L-1 e3 [3]; p1 L-1 e2 [3]; p2 L-1 e1 [3]; p3 L1 e2 [1]"; got != want {
		t.Fatalf("after 1 returns:\n got %s\nwant %s", got, want)
	}
	im = apply(t, im, UnfenceBroker(im, 3, nil)...)
	if got, want := show(im), "p0 L3 e4 [3]; p1 L3 e3 [3]; p2 L3 e2 [3]; p3 L1 e2 [1]"; got != want {
		t.Fatalf("after 3 returns:\n got %s\nwant %s", got, want)
	}
}

func TestUncleanElection(t *testing.T) {
	im := cluster(t, []int32{1, 2}, []int32{1, 2})
	// 2 fell out of the ISR earlier.
	im = apply(t, im, metadata.Record{Type: metadata.TypeChangePartition, ChangePartition: &metadata.ChangePartition{
		Topic: "t", Partition: 0, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{1}}})
	clean := apply(t, im, FenceBroker(im, 1, nil)...)
	if got, want := show(clean), "p0 L-1 e1 [1]"; got != want {
		t.Fatalf("clean: got %s, want %s", got, want)
	}
	all := func(*metadata.Topic) bool { return true }
	dirty := apply(t, im, FenceBroker(im, 1, all)...)
	if got, want := show(dirty), "p0 L2 e1 [2]"; got != want {
		t.Fatalf("unclean at fence: got %s, want %s", got, want)
	}
	// Offline partition, unclean allowed: a returning non-ISR replica leads.
	im2 := apply(t, im, FenceBroker(im, 2, nil)...)
	im2 = apply(t, im2, FenceBroker(im2, 1, nil)...)
	im2 = apply(t, im2, UnfenceBroker(im2, 2, all)...)
	if got, want := show(im2), "p0 L2 e2 [2]"; got != want {
		t.Fatalf("unclean at unfence: got %s, want %s", got, want)
	}
}

func TestRegisterAndPreferredLeaders(t *testing.T) {
	im := cluster(t, []int32{1, 2}, []int32{1, 2}, []int32{2, 1})
	if RegisterBroker(im, metadata.Broker{NodeID: 1, Host: "h", Port: 9001}, nil) != nil {
		t.Fatal("same registration produced records")
	}
	im = apply(t, im, FenceBroker(im, 1, nil)...)
	if got, want := show(im), "p0 L2 e1 [2]; p1 L2 e0 [2]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	// Re-registering with a new address unfences.
	im = apply(t, im, RegisterBroker(im, metadata.Broker{NodeID: 1, Host: "h", Port: 9999}, nil)...)
	if b, _ := im.Broker(1); b.Port != 9999 || b.Fenced {
		t.Fatalf("broker 1 = %+v", b)
	}
	// Not in the ISR yet: no preferred election.
	if rs := PreferredLeaders(im, 0); len(rs) != 0 {
		t.Fatalf("preferred election of a non-ISR replica: %d records", len(rs))
	}
	im = apply(t, im, metadata.Record{Type: metadata.TypeChangePartition, ChangePartition: &metadata.ChangePartition{
		Topic: "t", Partition: 0, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 2, ISR: []int32{2, 1}}})
	im = apply(t, im, PreferredLeaders(im, 0)...)
	if got, want := show(im), "p0 L1 e2 [2 1]; p1 L2 e0 [2]"; got != want {
		t.Fatalf("after preferred election: got %s, want %s", got, want)
	}
	if !LeadsAny(im, 1) {
		t.Fatal("LeadsAny(1) = false")
	}
	im = apply(t, im, ShuttingDownLeaders(im, 1)...)
	if got, want := show(im), "p0 L2 e3 [2]; p1 L2 e0 [2]"; got != want {
		t.Fatalf("after controlled shutdown of 1: got %s, want %s", got, want)
	}
}

func TestParseVoters(t *testing.T) {
	vs, err := ParseVoters("1@127.0.0.1:9093, 2@h2:9093,3@[::1]:9093")
	if err != nil || len(vs) != 3 || vs[2].Addr != "[::1]:9093" || vs[1].ID != 2 {
		t.Fatalf("ParseVoters = %v, %v", vs, err)
	}
	for _, bad := range []string{"", "1@h", "x@h:1", "1@h:1,1@h:2", "-1@h:1"} {
		if _, err := ParseVoters(bad); err == nil {
			t.Errorf("ParseVoters(%q) accepted", bad)
		}
	}
}
