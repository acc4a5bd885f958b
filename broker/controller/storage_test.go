package controller

import (
	"testing"

	"weir/broker/metadata"
)

func reg(id int32, st metadata.StorageState) metadata.Broker {
	return metadata.Broker{NodeID: id, Host: "h", Port: 9000 + id, Storage: st}
}

// A broker whose disk is full hands its leaderships to writable ISR
// members and leaves the ISRs; it keeps what no one else can serve. Once
// it can write again it takes back only offline partitions (followers
// rejoin ISRs through their leaders, leadership through preferred
// election).
func TestStorageFullMovesLeadershipAndISR(t *testing.T) {
	im := cluster(t, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}, []int32{1}, []int32{1, 2})
	im = apply(t, im, RegisterBroker(im, reg(1, metadata.StorageFull), nil)...)
	if got, want := show(im), "p0 L2 e1 [2 3]; p1 L2 e0 [2 3]; p2 L3 e0 [3 2]; p3 L1 e0 [1]; p4 L2 e1 [2]"; got != want {
		t.Fatalf("after 1 is full:\n got %s\nwant %s", got, want)
	}
	if !im.Live(1) || im.Writable(1) {
		t.Fatal("full broker 1 must stay live and not writable")
	}
	if RegisterBroker(im, reg(1, metadata.StorageFull), nil) != nil {
		t.Fatal("the same report twice produced records")
	}
	// The leader cannot add it back while it is full.
	if _, err := metadata.BuildAlterPartition(im, metadata.AlterPartition{Topic: "t", Partition: 0, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{2, 3, 1}}); err == nil {
		t.Fatal("AlterPartition added a broker with a full disk to the ISR")
	}
	// No preferred election goes to it either.
	if rs := PreferredLeaders(im, 0); len(rs) != 0 {
		t.Fatalf("preferred election to a full broker: %v", rs)
	}
	// Fencing 2 elects 3 where it can, and the full 1 only where no one
	// else is left (reads keep working).
	im = apply(t, im, FenceBroker(im, 2, nil)...)
	if got, want := show(im), "p0 L3 e2 [3]; p1 L3 e1 [3]; p2 L3 e0 [3]; p3 L1 e0 [1]; p4 L-1 e2 [2]"; got != want {
		t.Fatalf("after 2 is fenced:\n got %s\nwant %s", got, want)
	}
	im = apply(t, im, UnfenceBroker(im, 2, nil)...)
	// With the other replica full too (and so out of the ISR), leadership
	// stays where it is: no churn between full brokers. Once the leader's
	// directory fails as well, the partition goes offline.
	full := cluster(t, []int32{1, 2}, []int32{1, 2})
	full = apply(t, full, RegisterBroker(full, reg(2, metadata.StorageFull), nil)...)
	full = apply(t, full, RegisterBroker(full, reg(1, metadata.StorageFull), nil)...)
	if got, want := show(full), "p0 L1 e0 [1]"; got != want {
		t.Fatalf("both full:\n got %s\nwant %s", got, want)
	}
	full = apply(t, full, RegisterBroker(full, reg(1, metadata.StorageFailed), nil)...)
	if got, want := show(full), "p0 L-1 e1 [1]"; got != want {
		t.Fatalf("1 failed, 2 full and out of the ISR:\n got %s\nwant %s", got, want)
	}
	// Writable again: registration changes, nothing else (p4 is 2's).
	rs := RegisterBroker(im, reg(1, metadata.StorageOK), nil)
	if len(rs) != 1 {
		t.Fatalf("writable again: %d records, want the registration only", len(rs))
	}
	im = apply(t, im, rs...)
	if !im.Writable(1) {
		t.Fatal("broker 1 not writable after reporting so")
	}
	if _, err := metadata.BuildAlterPartition(im, metadata.AlterPartition{Topic: "t", Partition: 0, Leader: 3, LeaderEpoch: 2, PartitionEpoch: 2, ISR: []int32{3, 1}}); err != nil {
		t.Fatalf("leader cannot add the writable broker back: %v", err)
	}
}

// A failed log directory (EIO, read-only) is Kafka's offline log dir: its
// partitions with no other ISR member go offline, and the broker leads
// nothing until it restarts (registers as writable).
func TestStorageFailedTakesReplicasOffline(t *testing.T) {
	im := cluster(t, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1}, []int32{2, 1})
	im = apply(t, im, RegisterBroker(im, reg(1, metadata.StorageFailed), nil)...)
	if got, want := show(im), "p0 L2 e1 [2 3]; p1 L-1 e1 [1]; p2 L2 e0 [2]"; got != want {
		t.Fatalf("after 1 failed:\n got %s\nwant %s", got, want)
	}
	// Fenced and back with the same failed disk: still nothing to lead.
	im = apply(t, im, FenceBroker(im, 1, nil)...)
	if rs := UnfenceBroker(im, 1, nil); len(rs) != 1 {
		t.Fatalf("unfencing a failed broker elected it: %v", rs)
	}
	// Restarted (writable): it takes back its offline partition.
	im = apply(t, im, UnfenceBroker(im, 1, nil)...)
	im = apply(t, im, RegisterBroker(im, reg(1, metadata.StorageOK), nil)...)
	if got, want := show(im), "p0 L2 e1 [2 3]; p1 L1 e2 [1]; p2 L2 e0 [2]"; got != want {
		t.Fatalf("after 1 restarted:\n got %s\nwant %s", got, want)
	}
}

// New partitions start led by a writable replica; a replica that cannot
// write starts outside the ISR.
func TestNewPartitionsAvoidBrokersThatCannotWrite(t *testing.T) {
	im := cluster(t, []int32{1, 2, 3}, []int32{1, 2, 3})
	im = apply(t, im, RegisterBroker(im, reg(1, metadata.StorageFull), nil)...)
	r, err := metadata.BuildCreateTopic(im, metadata.TopicSpec{Name: "u", Partitions: 3, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range r.CreateTopic.Partitions {
		if p.Leader == 1 || len(p.ISR) != 2 || len(p.Replicas) != 3 {
			t.Fatalf("u-%d: %+v", i, p)
		}
	}
}
