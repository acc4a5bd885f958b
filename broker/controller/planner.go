package controller

import (
	"slices"

	"weir/broker/metadata"
)

// The planner decides what the controller writes. Every function here is
// pure: it reads an image and returns the records to append (or nothing),
// so the rules are tested without Raft, sockets or clocks.
//
// Rules (KRaft's, without ZooKeeper's history):
//   - a fenced broker leads nothing: each partition it led gets a new
//     leader, the first replica (in assignment order) that is in the ISR
//     and live; the leader epoch goes up by one;
//   - a fenced broker leaves every ISR it was in, except that an ISR never
//     becomes empty: when the fenced broker was the last member, it stays
//     (it holds every committed record) and the partition goes offline
//     (leader -1) until it, or with unclean election any replica, returns;
//   - unclean.leader.election.enable lets a live replica outside the ISR
//     lead an offline partition (ISR = [it]); records it lacks are lost;
//   - a broker that registers or is unfenced leads the offline partitions
//     whose ISR holds it;
//   - the preferred replica (the first assigned) takes leadership back
//     when it is writable, in the ISR, and not leading;
//   - a broker whose log directory cannot write (metadata.StorageFull,
//     StorageFailed, reported with its heartbeats for each directory with
//     the partitions it holds) hands each partition of that directory it
//     leads to the first writable member of the rest of the ISR and leaves
//     the ISRs of those partitions it is not the last member of
//     (StorageMoves; its other directories' partitions stay), as Kafka's
//     controller does for an offline log directory
//     (ReplicationControlManager.handleDirectoriesOffline). With no one to
//     take over, a full broker keeps leading (its records stay readable;
//     produces get KAFKA_STORAGE_ERROR) while a failed one's partition goes
//     offline, as in Kafka. Elections prefer writable replicas, then live
//     ones with a full disk; a failed one is never elected.

// Unclean reports whether a topic allows unclean leader election.
type Unclean func(t *metadata.Topic) bool

// change builds a ChangePartition record for partition i of t.
func change(t *metadata.Topic, i int, leader, leaderEpoch int32, isr []int32) metadata.Record {
	cur := t.Partitions[i]
	return metadata.Record{Type: metadata.TypeChangePartition, ChangePartition: &metadata.ChangePartition{
		Topic: t.Name, ID: t.ID, Partition: int32(i),
		Leader: leader, LeaderEpoch: leaderEpoch, PartitionEpoch: cur.PartitionEpoch + 1,
		ISR: isr,
	}}
}

// electFrom returns the first replica of partition part of topic in
// assignment order that is in candidates and whose replica is writable in
// im; else the first that is live with its replica on a full directory
// (it can serve what it has); else -1.
func electFrom(im *metadata.Image, topic string, part int32, replicas, candidates []int32, skip int32) int32 {
	for _, r := range replicas {
		if r != skip && slices.Contains(candidates, r) && im.ReplicaWritable(r, topic, part) {
			return r
		}
	}
	for _, r := range replicas {
		if r != skip && slices.Contains(candidates, r) && im.Live(r) && !im.ReplicaFailed(r, topic, part) {
			return r
		}
	}
	return -1
}

// FenceBroker returns the records that fence broker id and move its
// leaderships and ISR memberships away. Nothing when id is unknown or
// already fenced.
func FenceBroker(im *metadata.Image, id int32, unclean Unclean) []metadata.Record {
	b, ok := im.Broker(id)
	if !ok || b.Fenced {
		return nil
	}
	out := []metadata.Record{{Type: metadata.TypeFenceBroker, FenceBroker: &metadata.FenceBroker{NodeID: id, Fenced: true}}}
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			if !slices.Contains(p.ISR, id) && p.Leader != id {
				continue
			}
			isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
			if p.Leader != id {
				// A follower leaves the ISR unless it is the last one.
				if len(isr) > 0 && len(isr) < len(p.ISR) {
					out = append(out, change(t, i, p.Leader, p.LeaderEpoch, isr))
				}
				continue
			}
			leader := electFrom(im, t.Name, int32(i), p.Replicas, isr, id)
			switch {
			case leader >= 0:
			case unclean != nil && unclean(t):
				if leader = electFrom(im, t.Name, int32(i), p.Replicas, p.Replicas, id); leader >= 0 {
					isr = []int32{leader}
				}
			}
			if leader < 0 {
				// Offline; the ISR keeps what it had (never empty).
				if len(isr) == 0 {
					isr = []int32{id}
				}
			}
			out = append(out, change(t, i, leader, p.LeaderEpoch+1, isr))
		}
	}
	return out
}

// UnfenceBroker returns the records that unfence broker id and give it
// the offline partitions it can lead. Nothing when id is unknown or live.
func UnfenceBroker(im *metadata.Image, id int32, unclean Unclean) []metadata.Record {
	b, ok := im.Broker(id)
	if !ok || !b.Fenced {
		return nil
	}
	out := []metadata.Record{{Type: metadata.TypeFenceBroker, FenceBroker: &metadata.FenceBroker{NodeID: id, Fenced: false}}}
	return append(out, electOffline(im, id, unclean)...)
}

// RegisterBroker returns the records that register b (new, or a changed
// address) as a live broker, with the elections UnfenceBroker would make.
// Nothing when the same live registration is already there.
func RegisterBroker(im *metadata.Image, b metadata.Broker, unclean Unclean) []metadata.Record {
	b.Fenced = false
	if cur, ok := im.Broker(b.NodeID); ok && metadata.SameRegistration(cur, b) {
		return nil
	}
	out := []metadata.Record{{Type: metadata.TypeRegisterBroker, RegisterBroker: &b}}
	next, err := im.Apply(out[0])
	if err != nil {
		return out // the caller's Apply reports it
	}
	if b.Storage == metadata.StorageOK && len(b.Dirs) == 0 {
		return append(out, electOffline(next, b.NodeID, unclean)...)
	}
	moves := StorageMoves(next, b.NodeID)
	if b.Storage != metadata.StorageOK {
		return append(out, moves...)
	}
	// Some directories cannot write, others can: their partitions move,
	// the rest may lead what is offline.
	out = append(out, moves...)
	for _, r := range moves {
		if next, err = next.Apply(r); err != nil {
			return out // the caller's Apply reports it
		}
	}
	return append(out, electOffline(next, b.NodeID, unclean)...)
}

// StorageMoves returns the elections and ISR changes that take broker id
// off the partitions whose replica it cannot write (its broker-wide
// Storage, or the directory holding the replica, as its registration in
// im says): each such partition it leads goes to the first writable
// member of the rest of the ISR (leader epoch + 1) and it leaves every
// such ISR it is not the last member of. A partition no one else can take
// stays with a full replica (reads work) and goes offline with a failed
// one. Its replicas in writable directories are untouched. Nothing when
// every replica of id can write.
func StorageMoves(im *metadata.Image, id int32) []metadata.Record {
	b, ok := im.Broker(id)
	if !ok || (b.Storage == metadata.StorageOK && len(b.Dirs) == 0) {
		return nil
	}
	var out []metadata.Record
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			if !slices.Contains(p.Replicas, id) {
				continue
			}
			st := im.ReplicaStorage(id, t.Name, int32(i))
			if st == metadata.StorageOK {
				continue
			}
			failed := st == metadata.StorageFailed
			isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
			if p.Leader != id {
				if len(isr) > 0 && len(isr) < len(p.ISR) {
					out = append(out, change(t, i, p.Leader, p.LeaderEpoch, isr))
				}
				continue
			}
			leader := electFrom(im, t.Name, int32(i), p.Replicas, isr, id)
			if !failed && leader >= 0 && !im.ReplicaWritable(leader, t.Name, int32(i)) {
				leader = -1 // another full broker would serve no better
			}
			switch {
			case leader >= 0:
				out = append(out, change(t, i, leader, p.LeaderEpoch+1, isr))
			case failed:
				// Offline; the ISR keeps what it had (never empty).
				out = append(out, change(t, i, -1, p.LeaderEpoch+1, p.ISR))
			}
		}
	}
	return out
}

// electOffline makes id the leader of the offline partitions it may lead
// once it is live.
func electOffline(im *metadata.Image, id int32, unclean Unclean) []metadata.Record {
	var out []metadata.Record
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			if p.Leader >= 0 || !slices.Contains(p.Replicas, id) || im.ReplicaFailed(id, t.Name, int32(i)) {
				continue
			}
			switch {
			case slices.Contains(p.ISR, id):
				out = append(out, change(t, i, id, p.LeaderEpoch+1, p.ISR))
			case unclean != nil && unclean(t):
				out = append(out, change(t, i, id, p.LeaderEpoch+1, []int32{id}))
			}
		}
	}
	return out
}

// PreferredLeaders returns the elections that give each partition back to
// its preferred replica where that replica is live, in the ISR and not
// the leader; at most max records (0: no limit).
func PreferredLeaders(im *metadata.Image, max int) []metadata.Record {
	var out []metadata.Record
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			pref := p.Replicas[0]
			if p.Leader == pref || !slices.Contains(p.ISR, pref) || !im.ReplicaWritable(pref, t.Name, int32(i)) {
				continue
			}
			out = append(out, change(t, i, pref, p.LeaderEpoch+1, p.ISR))
			if max > 0 && len(out) >= max {
				return out
			}
		}
	}
	return out
}

// ShuttingDownLeaders returns the elections that move leadership away from
// a broker shutting down cleanly (Kafka's controlled shutdown): each
// partition it leads goes to another live ISR member, the broker leaves
// those ISRs. Partitions with no other live ISR member stay with it.
func ShuttingDownLeaders(im *metadata.Image, id int32) []metadata.Record {
	var out []metadata.Record
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			if p.Leader != id {
				continue
			}
			isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
			if leader := electFrom(im, t.Name, int32(i), p.Replicas, isr, id); leader >= 0 {
				out = append(out, change(t, i, leader, p.LeaderEpoch+1, isr))
			}
		}
	}
	return out
}

// LeadsAny reports whether broker id leads any partition in im.
func LeadsAny(im *metadata.Image, id int32) bool {
	for _, t := range im.Topics() {
		for _, p := range t.Partitions {
			if p.Leader == id {
				return true
			}
		}
	}
	return false
}
