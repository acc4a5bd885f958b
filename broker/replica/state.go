package replica

import (
	"slices"
	"time"

	"weir/broker/metadata"
)

// LeaderState is the leader's view of one partition's replication: each
// follower's log end offset and how recently it was caught up, the ISR
// (committed in the metadata, plus at most one change in flight), and the
// high watermark. It is a pure state machine: events go in with the time,
// an Update comes out saying whether the HW moved and which ISR to propose
// to the controller. It does no I/O and reads no clock; the caller holds a
// lock around it.
//
// Rules (Kafka's Partition/ReplicaState):
//   - a follower's fetch offset is its log end offset (LEO);
//   - a follower is caught up at a fetch whose offset reaches the leader's
//     LEO, or the leader's LEO at its previous fetch (then it counts as
//     caught up at that previous fetch);
//   - an ISR member not caught up for LagTime leaves the ISR (Tick);
//   - a follower outside the ISR joins it when its LEO reaches the HW and
//     the start of the leader's current epoch;
//   - HW = min LEO over the maximal ISR (committed ISR plus members being
//     added); it never goes backwards; an unknown follower LEO (no fetch
//     yet in this epoch) holds it back;
//   - one proposal at a time: the next one waits until the metadata shows
//     the result (Committed) or the proposal failed (ProposalFailed).
type LeaderState struct {
	self           int32
	replicas       []int32
	isr            []int32 // committed
	pending        []int32 // proposed, nil when none
	leaderEpoch    int32
	partitionEpoch int32
	epochStart     int64
	leo, hw        int64
	lag            time.Duration
	followers      map[int32]*follower
	lastEvent      time.Time // the latest time an event brought
}

type follower struct {
	leo                int64 // -1: unknown
	lastCaughtUp       time.Time
	lastFetch          time.Time
	lastFetchLeaderLEO int64
}

// Update is what an event changed.
type Update struct {
	// HW is the high watermark after the event; HWAdvanced says it moved.
	HW         int64
	HWAdvanced bool
	// Propose, when not nil, is the ISR to ask the controller for
	// (AlterPartition with the state's epochs, see Epochs).
	Propose []int32
}

// NewLeaderState starts leading p (this broker is p.Leader) with the
// local log at leo and high watermark hw. Every ISR member starts with a
// full LagTime to show up.
func NewLeaderState(self int32, p metadata.Partition, leo, hw int64, lag time.Duration, now time.Time) *LeaderState {
	s := &LeaderState{
		self: self, replicas: slices.Clone(p.Replicas), isr: slices.Clone(p.ISR),
		leaderEpoch: p.LeaderEpoch, partitionEpoch: p.PartitionEpoch,
		epochStart: leo, leo: leo, hw: min(hw, leo), lag: lag,
		followers: map[int32]*follower{}, lastEvent: now,
	}
	for _, r := range p.Replicas {
		if r != self {
			s.followers[r] = &follower{leo: -1, lastCaughtUp: now, lastFetch: now, lastFetchLeaderLEO: -1}
		}
	}
	return s
}

// HW returns the high watermark.
func (s *LeaderState) HW() int64 { return s.hw }

// ISR returns the committed ISR (what min.insync.replicas is checked
// against). The caller must not modify it.
func (s *LeaderState) ISR() []int32 { return s.isr }

// Pending returns the ISR proposal in flight, nil when none.
func (s *LeaderState) Pending() []int32 { return s.pending }

// Epochs returns the leader and partition epochs a proposal must carry.
func (s *LeaderState) Epochs() (leaderEpoch, partitionEpoch int32) {
	return s.leaderEpoch, s.partitionEpoch
}

// FollowerLEO returns a follower's last known LEO (-1 unknown).
func (s *LeaderState) FollowerLEO(id int32) int64 {
	if f := s.followers[id]; f != nil {
		return f.leo
	}
	return -1
}

// Appended records the leader's new LEO after an append.
func (s *LeaderState) Appended(leo int64) Update {
	if leo > s.leo {
		s.leo = leo
	}
	return s.update(nil)
}

// Truncated records the leader's LEO going down (never happens to a
// leader's committed data; used when the log was reset).
func (s *LeaderState) Truncated(leo int64) {
	s.leo = leo
	s.hw = min(s.hw, leo)
}

// FollowerFetch records a fetch by follower id at fetchOffset (its LEO).
// A replica not assigned to the partition is ignored.
func (s *LeaderState) FollowerFetch(id int32, fetchOffset int64, now time.Time) Update {
	if now.After(s.lastEvent) {
		s.lastEvent = now
	}
	f := s.followers[id]
	if f == nil {
		return s.update(nil)
	}
	if fetchOffset >= s.leo {
		if now.After(f.lastCaughtUp) {
			f.lastCaughtUp = now
		}
	} else if f.lastFetchLeaderLEO >= 0 && fetchOffset >= f.lastFetchLeaderLEO {
		if f.lastFetch.After(f.lastCaughtUp) {
			f.lastCaughtUp = f.lastFetch
		}
	}
	f.leo = min(fetchOffset, s.leo)
	f.lastFetch = now
	f.lastFetchLeaderLEO = s.leo
	var propose []int32
	if s.pending == nil && !slices.Contains(s.isr, id) && f.leo >= s.hw && f.leo >= s.epochStart {
		propose = append(slices.Clone(s.isr), id)
	}
	return s.update(propose)
}

// Tick checks the ISR members' lag at now and proposes removing those
// not caught up within LagTime.
func (s *LeaderState) Tick(now time.Time) Update {
	if now.After(s.lastEvent) {
		s.lastEvent = now
	}
	if s.pending != nil {
		return s.update(nil)
	}
	var keep []int32
	removed := false
	for _, r := range s.isr {
		f := s.followers[r]
		if r != s.self && f != nil && now.Sub(f.lastCaughtUp) > s.lag {
			removed = true
			continue
		}
		keep = append(keep, r)
	}
	if !removed {
		return s.update(nil)
	}
	if len(keep) == 0 {
		keep = []int32{s.self}
	}
	return s.update(keep)
}

// Committed takes the partition's state from the metadata (same leader
// epoch; a new epoch means a new LeaderState). A new partition epoch ends
// the proposal in flight, whatever its outcome.
func (s *LeaderState) Committed(p metadata.Partition) Update {
	if p.PartitionEpoch != s.partitionEpoch {
		s.pending = nil
	}
	s.isr = slices.Clone(p.ISR)
	s.partitionEpoch = p.PartitionEpoch
	if !slices.Equal(s.replicas, p.Replicas) {
		// A reassignment added replicas (they start unknown, so the HW
		// waits for nobody outside the ISR) or removed them.
		s.replicas = slices.Clone(p.Replicas)
		for id := range s.followers {
			if !slices.Contains(p.Replicas, id) {
				delete(s.followers, id)
			}
		}
		for _, r := range p.Replicas {
			if r != s.self && s.followers[r] == nil {
				s.followers[r] = &follower{leo: -1, lastCaughtUp: s.lastEvent, lastFetch: s.lastEvent, lastFetchLeaderLEO: -1}
			}
		}
	}
	return s.update(nil)
}

// ProposalFailed ends the proposal in flight without a change (the
// controller refused it or could not be reached); the next event may
// propose again.
func (s *LeaderState) ProposalFailed() { s.pending = nil }

// update recomputes the HW and records a proposal.
func (s *LeaderState) update(propose []int32) Update {
	if propose != nil {
		s.pending = propose
	}
	u := Update{HW: s.hw, Propose: propose}
	hw := s.leo
	for _, r := range s.maximalISR() {
		if r == s.self {
			continue
		}
		f := s.followers[r]
		if f == nil || f.leo < 0 {
			return u
		}
		hw = min(hw, f.leo)
	}
	if hw > s.hw {
		s.hw = hw
		u.HW, u.HWAdvanced = hw, true
	}
	return u
}

// maximalISR is the committed ISR plus the members a pending proposal adds.
func (s *LeaderState) maximalISR() []int32 {
	if s.pending == nil {
		return s.isr
	}
	out := slices.Clone(s.isr)
	for _, r := range s.pending {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
