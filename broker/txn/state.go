package txn

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Kafka's sentinel values in record batch headers.
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
	NoSequence      int32 = -1
)

// NumBatchesToRetain is how many of a producer's most recent batches a
// partition remembers for duplicate detection (Kafka's
// ProducerStateEntry.NUM_BATCHES_TO_RETAIN, matching the client's limit of
// 5 in-flight requests per connection).
const NumBatchesToRetain = 5

// Batch is what the idempotence state machine needs of one RecordBatch v2
// header.
type Batch struct {
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	LastOffsetDelta int32
	MaxTimestamp    int64
	Control         bool // control batches (transaction markers) carry no sequence
	Transactional   bool // the batch's transactional attribute bit
	// Marker: a control batch holding an end-transaction marker (Control
	// set; a control batch without one, e.g. emptied by compaction,
	// changes nothing). Commit is its type (false: abort).
	Marker           bool
	Commit           bool
	CoordinatorEpoch int32
}

// touchesState reports whether the batch changes producer state: a data
// batch with a producer id or a transaction marker.
func (b Batch) touchesState() bool { return b.ProducerID >= 0 && (!b.Control || b.Marker) }

// LastSequence is the sequence of the batch's last record; sequences wrap
// from MaxInt32 to 0, as Kafka's DefaultRecordBatch.incrementSequence. A
// batch without sequences (-1, a coordinator's) has last sequence -1.
func (b Batch) LastSequence() int32 {
	if b.BaseSequence == NoSequence {
		return NoSequence
	}
	return incrementSequence(b.BaseSequence, b.LastOffsetDelta)
}

// Origin is who appends: Kafka's AppendOrigin. It decides which checks run.
type Origin int8

const (
	// FromClient: a Produce request; every check runs (duplicates,
	// epoch, sequence, transaction state).
	FromClient Origin = iota
	// FromCoordinator: the group or transaction coordinator (offset
	// commits in a transaction, markers): no sequences (-1) and no
	// duplicate detection; epochs are checked.
	FromCoordinator
)

func incrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

// inSequence is Kafka's rule: next follows last by one, wrapping at MaxInt32.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// BatchMeta is what a partition remembers of one appended batch.
type BatchMeta struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	// Timestamp is the batch's max timestamp, or the broker's append time
	// when LogAppendTime is set.
	Timestamp     int64
	LogAppendTime bool
}

// Producer is one producer's state on one partition.
type Producer struct {
	ID         int64
	Epoch      int16
	LastSeenMs int64       // broker time of its last append (expiry clock)
	Batches    []BatchMeta // oldest first, at most NumBatchesToRetain
	// TxnFirstOffset is the offset of the first batch of the producer's
	// ongoing transaction on this partition, -1 when none.
	TxnFirstOffset int64
	// CoordinatorEpoch is the coordinator epoch of the last marker, -1
	// before any.
	CoordinatorEpoch int32
	// LastTimestamp is the timestamp of the last batch or marker (Kafka's
	// lastTimestamp, shown by DescribeProducers), -1 before any.
	LastTimestamp int64
}

func (p *Producer) lastSeq() int32 {
	if len(p.Batches) == 0 {
		return NoSequence
	}
	return p.Batches[len(p.Batches)-1].LastSeq
}

func (p *Producer) clone() Producer {
	c := *p
	c.Batches = slices.Clone(p.Batches)
	return c
}

// Verdict is the outcome of a successful Check.
type Verdict struct {
	// Duplicate is true when a batch repeats one of its producer's retained
	// batches (same epoch, same first and last sequence): nothing must be
	// appended and the append answered with Original's offsets.
	Duplicate bool
	Original  BatchMeta
}

// State is one partition's producer state: for each producer id its epoch
// and last NumBatchesToRetain batches. It is a pure state machine (no I/O,
// no clock, no locking): the caller serializes Check and Apply with the
// partition's appends (Partition does).
type State struct {
	producers map[int64]*Producer
	// ongoing: producer id -> first offset of its ongoing transaction.
	ongoing map[int64]int64
	// unreplicated: completed transactions whose marker may not be
	// committed yet (last offset >= the high watermark last seen): until
	// it is, their data stays unstable (Kafka's unreplicatedTxns).
	unreplicated []CompletedTxn
	// verifications: producer id -> its pending transaction
	// verification (verify.go), in memory only, as Kafka's.
	verifications map[int64]*VerificationGuard
}

// CompletedTxn is a transaction ended by a marker at LastOffset (Kafka's
// CompletedTxn); LastStableOffset is the partition's last stable offset
// right after it, as the aborted-transaction index records it.
type CompletedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	Aborted          bool
	LastStableOffset int64
}

// NewState returns an empty state.
func NewState() *State {
	return &State{producers: make(map[int64]*Producer), ongoing: make(map[int64]int64)}
}

// Len is the number of producers tracked.
func (s *State) Len() int { return len(s.producers) }

// Producer returns a copy of producer id's state.
func (s *State) Producer(id int64) (Producer, bool) {
	p, ok := s.producers[id]
	if !ok {
		return Producer{}, false
	}
	return p.clone(), true
}

// Producers returns copies of every producer's state, by id.
func (s *State) Producers() []Producer {
	out := make([]Producer, 0, len(s.producers))
	for _, p := range s.producers {
		out = append(out, p.clone())
	}
	slices.SortFunc(out, func(a, b Producer) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// Check applies Kafka's rules (ProducerAppendInfo) to the batches of one
// append, in order, without changing the state. For a client's append:
//
//   - a batch whose epoch and first/last sequence equal a retained batch of
//     its producer is a duplicate: the Verdict carries the original;
//   - an epoch older than the producer's current one is ErrInvalidProducerEpoch;
//   - a newer epoch must start at sequence 0, else ErrOutOfOrderSequence;
//   - the same epoch must continue at last sequence + 1 (wrapping at
//     MaxInt32), else ErrOutOfOrderSequence;
//   - a producer with no state on this partition (new, expired, or its
//     records deleted) is accepted at any sequence, as Kafka 2.5+ does;
//   - a non-transactional batch while the producer has a transaction
//     ongoing is ErrInvalidTxnState.
//
// A coordinator's append skips the duplicate and sequence checks (its
// batches carry sequence -1). A marker (control batch) checks the epoch
// (ErrInvalidProducerEpoch) and its coordinator epoch against the last
// marker's (ErrTransactionCoordinatorFenced).
//
// Batches without a producer id (-1) are not checked. Errors wrap the
// sentinels and name the producer and sequences.
func (s *State) Check(batches []Batch, origin Origin) (Verdict, error) {
	return s.check(batches, origin, nil)
}

// check is Check; gc, when set, also applies the verification rule of
// AppendVerified (verify.go) to transactional data batches.
func (s *State) check(batches []Batch, origin Origin, gc *guardCheck) (Verdict, error) {
	type pending struct {
		epoch      int16
		lastSeq    int32
		inTxn      bool
		coordEpoch int32
	}
	var overlay map[int64]pending // effect of earlier batches of this append
	for i := range batches {
		b := &batches[i]
		if !b.touchesState() {
			continue
		}
		cur := s.producers[b.ProducerID]
		ov, inOverlay := overlay[b.ProducerID]
		known := cur != nil || inOverlay
		if !inOverlay && cur != nil {
			ov = pending{epoch: cur.Epoch, lastSeq: cur.lastSeq(), inTxn: cur.TxnFirstOffset >= 0, coordEpoch: cur.CoordinatorEpoch}
		}
		if known && b.ProducerEpoch < ov.epoch {
			return Verdict{}, fmt.Errorf("%w: epoch of producer %d is %d, which is smaller than the last seen epoch %d",
				ErrInvalidProducerEpoch, b.ProducerID, b.ProducerEpoch, ov.epoch)
		}
		if b.Control {
			if known && ov.coordEpoch > b.CoordinatorEpoch {
				return Verdict{}, fmt.Errorf("%w: invalid coordinator epoch for producer %d: %d (zombie), %d (current)",
					ErrTransactionCoordinatorFenced, b.ProducerID, b.CoordinatorEpoch, ov.coordEpoch)
			}
			if overlay == nil {
				overlay = make(map[int64]pending, 1)
			}
			overlay[b.ProducerID] = pending{epoch: b.ProducerEpoch, lastSeq: ov.lastSeq, coordEpoch: b.CoordinatorEpoch}
			if b.ProducerEpoch != ov.epoch {
				overlay[b.ProducerID] = pending{epoch: b.ProducerEpoch, lastSeq: NoSequence, coordEpoch: b.CoordinatorEpoch}
			}
			continue
		}
		if origin == FromClient {
			if cur != nil && b.ProducerEpoch == cur.Epoch {
				for _, m := range cur.Batches {
					if m.FirstSeq == b.BaseSequence && m.LastSeq == b.LastSequence() {
						return Verdict{Duplicate: true, Original: m}, nil
					}
				}
			}
			if known {
				switch {
				case b.ProducerEpoch != ov.epoch:
					if b.BaseSequence != 0 {
						return Verdict{}, fmt.Errorf("%w: invalid sequence number for new epoch of producer %d: %d (request epoch), %d (seq. number), %d (current producer epoch)",
							ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, b.BaseSequence, ov.epoch)
					}
				case cur != nil && !inSequence(ov.lastSeq, b.BaseSequence):
					return Verdict{}, fmt.Errorf("%w: out of order sequence number for producer %d: %d (incoming seq. number), %d (current end sequence number)",
						ErrOutOfOrderSequence, b.ProducerID, b.BaseSequence, ov.lastSeq)
				}
			}
		}
		if err := s.checkGuard(b, ov.inTxn, ov.epoch, gc); err != nil {
			return Verdict{}, err
		}
		if ov.inTxn && !b.Transactional {
			return Verdict{}, fmt.Errorf("%w: expected transactional write from producer %d, which has a transaction ongoing",
				ErrInvalidTxnState, b.ProducerID)
		}
		if overlay == nil {
			overlay = make(map[int64]pending, 1)
		}
		overlay[b.ProducerID] = pending{epoch: b.ProducerEpoch, lastSeq: b.LastSequence(), inTxn: ov.inTxn || b.Transactional, coordEpoch: ov.coordEpoch}
	}
	return Verdict{}, nil
}

// Apply records batches that were appended at consecutive offsets starting
// at firstOffset (each batch takes LastOffsetDelta+1 offsets) and returns
// the transactions their markers completed.
// logAppendTime is the broker time stamped into the batches, or -1 when
// they keep their CreateTime; nowMs is the broker's clock for expiry.
// Apply does not check: callers Check first (a live append) or replay what
// the log already holds (recovery, followers), where Kafka also applies
// unconditionally.
func (s *State) Apply(batches []Batch, firstOffset, logAppendTime, nowMs int64) []CompletedTxn {
	off := firstOffset
	var done []CompletedTxn
	for i := range batches {
		b := &batches[i]
		base := off
		off += int64(b.LastOffsetDelta) + 1
		if !b.touchesState() {
			continue
		}
		if b.Transactional || b.Control {
			// The transaction began or ended here: a pending
			// verification is used up (Kafka's updateProducers).
			delete(s.verifications, b.ProducerID)
		}
		ts := b.MaxTimestamp
		if logAppendTime >= 0 {
			ts = logAppendTime
		}
		if b.Control {
			if c, ok := s.endTxn(b, base, ts, nowMs); ok {
				done = append(done, c)
			}
			continue
		}
		m := BatchMeta{
			FirstSeq:    b.BaseSequence,
			LastSeq:     b.LastSequence(),
			FirstOffset: base,
			LastOffset:  base + int64(b.LastOffsetDelta),
			Timestamp:   ts,
		}
		m.LogAppendTime = logAppendTime >= 0
		p := s.add(b.ProducerID, b.ProducerEpoch, m, nowMs)
		if b.Transactional && p.TxnFirstOffset < 0 {
			p.TxnFirstOffset = base
			s.ongoing[p.ID] = base
		}
	}
	return done
}

func (s *State) producer(id int64, epoch int16) *Producer {
	p := s.producers[id]
	if p == nil {
		p = &Producer{ID: id, Epoch: epoch, Batches: make([]BatchMeta, 0, NumBatchesToRetain),
			TxnFirstOffset: -1, CoordinatorEpoch: -1, LastTimestamp: -1}
		s.producers[id] = p
	}
	if p.Epoch != epoch {
		p.Epoch = epoch
		p.Batches = p.Batches[:0]
	}
	return p
}

func (s *State) add(id int64, epoch int16, m BatchMeta, nowMs int64) *Producer {
	p := s.producer(id, epoch)
	if len(p.Batches) == NumBatchesToRetain {
		copy(p.Batches, p.Batches[1:])
		p.Batches = p.Batches[:NumBatchesToRetain-1]
	}
	p.Batches = append(p.Batches, m)
	p.LastTimestamp = m.Timestamp
	if nowMs > p.LastSeenMs {
		p.LastSeenMs = nowMs
	}
	return p
}

// endTxn applies a marker at offset off: the producer's transaction ends
// (Kafka emits a CompletedTxn only for a non-empty one).
func (s *State) endTxn(b *Batch, off, ts, nowMs int64) (CompletedTxn, bool) {
	p := s.producer(b.ProducerID, b.ProducerEpoch)
	var c CompletedTxn
	had := p.TxnFirstOffset >= 0
	if had {
		c = CompletedTxn{ProducerID: p.ID, FirstOffset: p.TxnFirstOffset, LastOffset: off, Aborted: !b.Commit}
		// Kafka's ProducerStateManager.lastStableOffset(completedTxn):
		// the first offset of the earliest other ongoing transaction,
		// else just past the marker.
		c.LastStableOffset = off + 1
		for id, first := range s.ongoing {
			if id != p.ID && first < c.LastStableOffset {
				c.LastStableOffset = first
			}
		}
		delete(s.ongoing, p.ID)
		s.unreplicated = append(s.unreplicated, c)
	}
	p.TxnFirstOffset = -1
	p.CoordinatorEpoch = b.CoordinatorEpoch
	p.LastTimestamp = ts
	if nowMs > p.LastSeenMs {
		p.LastSeenMs = nowMs
	}
	return c, had
}

// FirstUnstableOffset is the first offset a read_committed consumer may not
// see yet given high watermark hw: the first offset of the earliest ongoing
// transaction or of a completed one whose marker is at or above hw; -1
// when there is none. The last stable offset is min(hw, this) (Kafka's
// UnifiedLog.lastStableOffset).
func (s *State) FirstUnstableOffset(hw int64) int64 {
	first := int64(-1)
	for _, f := range s.ongoing {
		if first < 0 || f < first {
			first = f
		}
	}
	for _, c := range s.unreplicated {
		if c.LastOffset >= hw && (first < 0 || c.FirstOffset < first) {
			first = c.FirstOffset
		}
	}
	return first
}

// LastStableOffset is min(hw, FirstUnstableOffset(hw)).
func (s *State) LastStableOffset(hw int64) int64 {
	if f := s.FirstUnstableOffset(hw); f >= 0 && f < hw {
		return f
	}
	return hw
}

// OnHighWatermark forgets completed transactions whose marker is below hw
// (committed: they no longer hold the last stable offset back).
func (s *State) OnHighWatermark(hw int64) {
	s.unreplicated = slices.DeleteFunc(s.unreplicated, func(c CompletedTxn) bool { return c.LastOffset < hw })
}

// hasTxns reports whether any transaction is ongoing or unreplicated.
func (s *State) hasTxns() bool { return len(s.ongoing) > 0 || len(s.unreplicated) > 0 }

// Ongoing returns producer id -> first offset of every ongoing transaction.
func (s *State) Ongoing() map[int64]int64 { return maps.Clone(s.ongoing) }

// Expire removes producers not seen for expirationMs or longer
// (producer.id.expiration.ms) and returns how many it removed.
func (s *State) Expire(nowMs, expirationMs int64) int {
	s.expireVerifications(nowMs, expirationMs)
	n := 0
	for id, p := range s.producers {
		// A producer with a transaction ongoing is kept (Kafka's
		// isProducerExpired); the transaction's timeout aborts it.
		if p.TxnFirstOffset < 0 && nowMs-p.LastSeenMs >= expirationMs {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// Reset forgets every producer.
func (s *State) Reset() {
	clear(s.producers)
	clear(s.ongoing)
	clear(s.verifications)
	s.unreplicated = nil
}
