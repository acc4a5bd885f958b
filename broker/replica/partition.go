package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"weir/broker/log"
	"weir/broker/metadata"
)

// Sentinel errors; the Kafka layer maps them to error codes.
var (
	// ErrNotLeader: this broker does not lead the partition now
	// (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("not the partition leader")
	// ErrFencedLeaderEpoch: the request's leader epoch is older than the
	// partition's (FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("fenced leader epoch")
	// ErrUnknownLeaderEpoch: the request's leader epoch is newer than this
	// broker knows (UNKNOWN_LEADER_EPOCH).
	ErrUnknownLeaderEpoch = errors.New("unknown leader epoch")
	// ErrNotEnoughReplicas: the ISR is smaller than min.insync.replicas
	// before an acks=all append (NOT_ENOUGH_REPLICAS).
	ErrNotEnoughReplicas = errors.New("not enough in-sync replicas")
	// ErrNotEnoughReplicasAfterAppend: the ISR shrank below
	// min.insync.replicas while an acks=all append waited
	// (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
	ErrNotEnoughReplicasAfterAppend = errors.New("not enough in-sync replicas after append")
	// ErrTimeout: an acks=all append was not replicated in time
	// (REQUEST_TIMED_OUT).
	ErrTimeout = errors.New("replication timed out")
)

// Role is what this broker is for a partition.
type Role int

// The roles.
const (
	RoleNone     Role = iota // not (yet) following anyone, or offline
	RoleLeader               // leads: takes produces, serves fetches
	RoleFollower             // copies the leader's log
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// Partition is one partition hosted on this broker: its log and its
// replication role. Safe for concurrent use.
type Partition struct {
	Topic string
	Index int32

	m   *Manager
	log *log.Log

	// leadMu is held shared by leader appends (AppendAsLeader) and
	// exclusively by role changes, so no append of an old leader reaches
	// the log after it became a follower. Taken before mu.
	leadMu sync.RWMutex

	mu        sync.Mutex
	role      Role
	leaderID  int32
	epoch     int32 // leader epoch of the current role
	meta      metadata.Partition
	ls        *LeaderState  // RoleLeader only
	roleCh    chan struct{} // closed at every role or epoch change
	following *fetchState   // RoleFollower with a leader only
	removed   bool
}

// Log returns the partition's log.
func (p *Partition) Log() *log.Log { return p.log }

// Name is "topic-index".
func (p *Partition) Name() string { return fmt.Sprintf("%s-%d", p.Topic, p.Index) }

// State returns the role, the leader's node id (-1 none) and the leader
// epoch.
func (p *Partition) State() (role Role, leader, epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.role, p.leaderID, p.epoch
}

// LeaderEpoch returns the current leader epoch.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// ISR returns the ISR as the leader knows it (committed), nil when not
// leading.
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ls == nil {
		return nil
	}
	return slices.Clone(p.ls.ISR())
}

// ISRSize returns the size of the ISR as the leader knows it, 0 when not
// leading.
func (p *Partition) ISRSize() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ls == nil {
		return 0
	}
	return len(p.ls.ISR())
}

// checkEpochLocked compares a request's current leader epoch (-1: none
// given) with ours.
func (p *Partition) checkEpochLocked(reqEpoch int32) error {
	switch {
	case reqEpoch < 0 || reqEpoch == p.epoch:
		return nil
	case reqEpoch < p.epoch:
		return fmt.Errorf("%s: %w: request has %d, current %d", p.Name(), ErrFencedLeaderEpoch, reqEpoch, p.epoch)
	default:
		return fmt.Errorf("%s: %w: request has %d, this broker knows %d", p.Name(), ErrUnknownLeaderEpoch, reqEpoch, p.epoch)
	}
}

// CheckLeader returns nil when this broker leads the partition and
// reqEpoch (-1 for none) matches, else ErrNotLeader,
// ErrFencedLeaderEpoch or ErrUnknownLeaderEpoch.
func (p *Partition) CheckLeader(reqEpoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkEpochLocked(reqEpoch); err != nil {
		return err
	}
	if p.role != RoleLeader {
		return fmt.Errorf("%s: %w (leader is %d)", p.Name(), ErrNotLeader, p.leaderID)
	}
	return nil
}

// CheckEpoch returns the epoch errors of CheckLeader, without requiring
// leadership (OffsetForLeaderEpoch from a follower of a follower).
func (p *Partition) CheckEpoch(reqEpoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkEpochLocked(reqEpoch)
}

// CheckMinISR returns ErrNotEnoughReplicas (or ErrNotLeader) when the ISR
// is smaller than minISR; an acks=all produce calls it before appending.
func (p *Partition) CheckMinISR(minISR int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != RoleLeader {
		return fmt.Errorf("%s: %w", p.Name(), ErrNotLeader)
	}
	if n := len(p.ls.ISR()); n < minISR {
		return fmt.Errorf("%s: %w: ISR %v has %d, min.insync.replicas is %d", p.Name(), ErrNotEnoughReplicas, p.ls.ISR(), n, minISR)
	}
	return nil
}

// AppendAsLeader runs fn, which appends to the log stamping the given
// leader epoch, only while this broker leads the partition; no role
// change happens while fn runs. After a successful append the HW is
// updated (at once with a one-member ISR). It returns ErrNotLeader when
// this broker does not lead.
func (p *Partition) AppendAsLeader(fn func(epoch int32) (log.AppendInfo, error)) (log.AppendInfo, error) {
	p.leadMu.RLock()
	defer p.leadMu.RUnlock()
	p.mu.Lock()
	role, epoch, leader := p.role, p.epoch, p.leaderID
	p.mu.Unlock()
	if role != RoleLeader {
		return log.AppendInfo{}, fmt.Errorf("%s: %w (leader is %d)", p.Name(), ErrNotLeader, leader)
	}
	info, err := fn(epoch)
	if err == nil {
		p.Appended()
	}
	return info, err
}

// Appended tells the leader state the log grew (after every leader
// append); with a one-member ISR it moves the HW at once.
func (p *Partition) Appended() {
	leo := p.log.EndOffset()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ls == nil {
		return
	}
	if u := p.ls.Appended(leo); u.HWAdvanced {
		p.log.SetHighWatermark(u.HW)
	}
}

// WaitCommitted waits until the HW reaches offset (the records before it
// are on every ISR member) while this broker stays leader in the epoch it
// had when called. It returns ErrNotLeader when leadership moves,
// ErrNotEnoughReplicasAfterAppend when the ISR is below minISR once the
// records are committed, ErrTimeout when ctx ends first.
func (p *Partition) WaitCommitted(ctx context.Context, offset int64, minISR int) error {
	p.mu.Lock()
	epoch := p.epoch
	p.mu.Unlock()
	for {
		p.mu.Lock()
		if p.role != RoleLeader || p.epoch != epoch {
			p.mu.Unlock()
			return fmt.Errorf("%s: %w: leadership moved while waiting for replication", p.Name(), ErrNotLeader)
		}
		ch := p.roleCh
		isr := len(p.ls.ISR())
		p.mu.Unlock()
		hwc := p.log.HWChanged()
		if p.log.HighWatermark() >= offset {
			if isr < minISR {
				return fmt.Errorf("%s: %w: ISR has %d, min.insync.replicas is %d", p.Name(), ErrNotEnoughReplicasAfterAppend, isr, minISR)
			}
			return nil
		}
		select {
		case <-hwc:
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%s: %w: offset %d not replicated (HW %d)", p.Name(), ErrTimeout, offset, p.log.HighWatermark())
		}
	}
}

// FollowerFetch is a follower's Fetch at the leader: it records the
// follower's LEO (fetchOffset) and returns the HW to send it.
func (p *Partition) FollowerFetch(replica int32, fetchOffset int64, reqEpoch int32) (int64, error) {
	now := p.m.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkEpochLocked(reqEpoch); err != nil {
		return 0, err
	}
	if p.role != RoleLeader {
		return 0, fmt.Errorf("%s: %w", p.Name(), ErrNotLeader)
	}
	// The follower may have fetched records whose append has not told
	// the leader state yet: take the log end as it is now.
	p.applyLocked(p.ls.Appended(p.log.EndOffset()))
	u := p.ls.FollowerFetch(replica, fetchOffset, now)
	p.applyLocked(u)
	return p.log.HighWatermark(), nil
}

// applyLocked acts on a LeaderState update: HW to the log, proposal to
// the controller.
func (p *Partition) applyLocked(u Update) {
	if u.HWAdvanced {
		p.log.SetHighWatermark(u.HW)
	}
	if u.Propose != nil {
		for _, id := range u.Propose {
			if !slices.Contains(p.ls.ISR(), id) && !p.m.isrEligible(id, p.Topic, p.Index) {
				// Fenced (or otherwise unable to take writes): it stays
				// out until the metadata says otherwise.
				p.ls.ProposalFailed()
				return
			}
		}
		le, pe := p.ls.Epochs()
		req := metadata.AlterPartition{Topic: p.Topic, Partition: p.Index, Leader: p.m.cfg.NodeID, LeaderEpoch: le, PartitionEpoch: pe, ISR: slices.Clone(u.Propose)}
		ls := p.ls
		p.m.startPropose(p, ls, req)
	}
}

// tick runs the ISR lag check (leaders only).
func (p *Partition) tick(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ls != nil {
		p.applyLocked(p.ls.Tick(now))
	}
}

// changeRoleLocked closes roleCh (waking acks=all waiters) and makes a
// new one.
func (p *Partition) changeRoleLocked(role Role, leader, epoch int32) {
	p.role, p.leaderID, p.epoch = role, leader, epoch
	if p.roleCh != nil {
		close(p.roleCh)
	}
	p.roleCh = make(chan struct{})
}
