package controller

import (
	"testing"

	"weir/broker/metadata"
)

// regDirs is broker id's registration with the directories that cannot
// write.
func regDirs(id int32, st metadata.StorageState, dirs ...metadata.LogDir) metadata.Broker {
	b := reg(id, st)
	b.Dirs = dirs
	return b
}

// One of a broker's two log directories fails: only the partitions in it
// move (leadership to a writable ISR member, the broker out of their
// ISRs, offline when no one else has them); the partitions in its other
// directory keep their leader and ISR, and it may still lead them after
// another broker fails. A restart (every directory writable) brings the
// offline one back.
func TestStorageDirFailedMovesOnlyItsPartitions(t *testing.T) {
	// p0 p2 p3 in broker 1's directory /a, p1 p4 p5 in /b.
	im := cluster(t, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 1, 3}, []int32{1}, []int32{2, 1}, []int32{1})
	failedA := metadata.LogDir{Path: "/a", State: metadata.StorageFailed, Partitions: map[string][]int32{"t": {0, 2, 3}}}
	im = apply(t, im, RegisterBroker(im, regDirs(1, metadata.StorageOK, failedA), nil)...)
	if got, want := show(im), "p0 L2 e1 [2 3]; p1 L1 e0 [1 2 3]; p2 L2 e0 [2 3]; p3 L-1 e1 [1]; p4 L2 e0 [2 1]; p5 L1 e0 [1]"; got != want {
		t.Fatalf("after 1's /a failed:\n got %s\nwant %s", got, want)
	}
	if !im.Writable(1) || !im.ReplicaWritable(1, "t", 1) || im.ReplicaWritable(1, "t", 0) || !im.ReplicaFailed(1, "t", 3) || im.ReplicaFailed(1, "t", 5) {
		t.Fatal("per-directory writability wrong")
	}
	if RegisterBroker(im, regDirs(1, metadata.StorageOK, failedA), nil) != nil {
		t.Fatal("the same report twice produced records")
	}
	// Its replica in /a cannot rejoin an ISR; its replica in /b can.
	if _, err := metadata.BuildAlterPartition(im, metadata.AlterPartition{Topic: "t", Partition: 0, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{2, 3, 1}}); err == nil {
		t.Fatal("AlterPartition added a replica on a failed directory to the ISR")
	}
	if rs := PreferredLeaders(im, 0); len(rs) != 0 {
		t.Fatalf("preferred election to a replica on a failed directory: %v", rs)
	}
	// Fencing 2: p0 and p2 go to 3 (1's replicas there failed), p4 to 1
	// (its replica in /b writes).
	im = apply(t, im, FenceBroker(im, 2, nil)...)
	if got, want := show(im), "p0 L3 e2 [3]; p1 L1 e0 [1 3]; p2 L3 e1 [3]; p3 L-1 e1 [1]; p4 L1 e1 [1]; p5 L1 e0 [1]"; got != want {
		t.Fatalf("after 2 is fenced:\n got %s\nwant %s", got, want)
	}
	im = apply(t, im, UnfenceBroker(im, 2, nil)...)
	// /b fills up as well: no directory takes writes, the broker-wide
	// state is full. p1 (ISR [1 3]) goes to 3; p4 and p5 stay with 1, no
	// one else has them (a full replica serves reads).
	fullB := metadata.LogDir{Path: "/b", State: metadata.StorageFull, Partitions: map[string][]int32{"t": {1, 4, 5}}}
	im = apply(t, im, RegisterBroker(im, regDirs(1, metadata.StorageFull, failedA, fullB), nil)...)
	if got, want := show(im), "p0 L3 e2 [3]; p1 L3 e1 [3]; p2 L3 e1 [3]; p3 L-1 e1 [1]; p4 L1 e1 [1]; p5 L1 e0 [1]"; got != want {
		t.Fatalf("after 1's /b filled:\n got %s\nwant %s", got, want)
	}
	if im.Writable(1) {
		t.Fatal("broker with every directory full or failed is writable")
	}
	// /b writes again: nothing moves back by itself but p1 may take 1
	// into its ISR again.
	im = apply(t, im, RegisterBroker(im, regDirs(1, metadata.StorageOK, failedA), nil)...)
	if _, err := metadata.BuildAlterPartition(im, metadata.AlterPartition{Topic: "t", Partition: 1, Leader: 3, LeaderEpoch: 1, PartitionEpoch: 2, ISR: []int32{3, 1}}); err != nil {
		t.Fatalf("leader cannot add 1's replica in /b back: %v", err)
	}
	// Restarted with /a recovered: it takes back its offline p3.
	im = apply(t, im, RegisterBroker(im, reg(1, metadata.StorageOK), nil)...)
	if got, want := show(im), "p0 L3 e2 [3]; p1 L3 e1 [3]; p2 L3 e1 [3]; p3 L1 e2 [1]; p4 L1 e1 [1]; p5 L1 e0 [1]"; got != want {
		t.Fatalf("after 1 restarted:\n got %s\nwant %s", got, want)
	}
}

// A registration with a directory in a state that is not full or failed
// is refused (corrupt record), and old registrations without directories
// keep the broker-wide meaning.
func TestStorageDirsRecordChecked(t *testing.T) {
	im := cluster(t, []int32{1, 2}, []int32{1, 2})
	bad := regDirs(1, metadata.StorageOK, metadata.LogDir{Path: "/a", State: metadata.StorageOK})
	if _, err := im.Apply(metadata.Record{Type: metadata.TypeRegisterBroker, RegisterBroker: &bad}); err == nil {
		t.Fatal("accepted a writable directory among those that cannot write")
	}
	im = apply(t, im, RegisterBroker(im, reg(1, metadata.StorageFailed), nil)...)
	if !im.ReplicaFailed(1, "t", 0) || im.ReplicaWritable(1, "t", 0) {
		t.Fatal("a broker-wide failed state does not cover its replicas")
	}
}
