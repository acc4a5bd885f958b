package txn

import (
	"fmt"
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
}

// hasProducer reports whether the batch takes part in idempotence.
func (b Batch) hasProducer() bool { return b.ProducerID >= 0 && !b.Control }

// LastSequence is the sequence of the batch's last record; sequences wrap
// from MaxInt32 to 0, as Kafka's DefaultRecordBatch.incrementSequence.
func (b Batch) LastSequence() int32 { return incrementSequence(b.BaseSequence, b.LastOffsetDelta) }

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
}

// NewState returns an empty state.
func NewState() *State { return &State{producers: make(map[int64]*Producer)} }

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

// Check applies Kafka's idempotence rules to the batches of one append,
// in order, without changing the state:
//
//   - a batch whose epoch and first/last sequence equal a retained batch of
//     its producer is a duplicate: the Verdict carries the original;
//   - an epoch older than the producer's current one is ErrInvalidProducerEpoch;
//   - a newer epoch must start at sequence 0, else ErrOutOfOrderSequence;
//   - the same epoch must continue at last sequence + 1 (wrapping at
//     MaxInt32), else ErrOutOfOrderSequence;
//   - a producer with no state on this partition (new, expired, or its
//     records deleted) is accepted at any sequence, as Kafka 2.5+ does.
//
// Batches without a producer id (-1) and control batches are not checked.
// Errors wrap the sentinels and name the producer and sequences.
func (s *State) Check(batches []Batch) (Verdict, error) {
	type pending struct {
		epoch   int16
		lastSeq int32
	}
	var overlay map[int64]pending // effect of earlier batches of this append
	for i := range batches {
		b := &batches[i]
		if !b.hasProducer() {
			continue
		}
		cur := s.producers[b.ProducerID]
		if cur != nil && b.ProducerEpoch == cur.Epoch {
			for _, m := range cur.Batches {
				if m.FirstSeq == b.BaseSequence && m.LastSeq == b.LastSequence() {
					return Verdict{Duplicate: true, Original: m}, nil
				}
			}
		}
		ov, inOverlay := overlay[b.ProducerID]
		if cur != nil || inOverlay {
			epoch, lastSeq := ov.epoch, ov.lastSeq
			if !inOverlay {
				epoch, lastSeq = cur.Epoch, cur.lastSeq()
			}
			switch {
			case b.ProducerEpoch < epoch:
				return Verdict{}, fmt.Errorf("%w: epoch of producer %d is %d, which is smaller than the last seen epoch %d",
					ErrInvalidProducerEpoch, b.ProducerID, b.ProducerEpoch, epoch)
			case b.ProducerEpoch != epoch:
				if b.BaseSequence != 0 {
					return Verdict{}, fmt.Errorf("%w: invalid sequence number for new epoch of producer %d: %d (request epoch), %d (seq. number), %d (current producer epoch)",
						ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, b.BaseSequence, epoch)
				}
			case cur != nil && !inSequence(lastSeq, b.BaseSequence):
				return Verdict{}, fmt.Errorf("%w: out of order sequence number for producer %d: %d (incoming seq. number), %d (current end sequence number)",
					ErrOutOfOrderSequence, b.ProducerID, b.BaseSequence, lastSeq)
			}
		}
		if overlay == nil {
			overlay = make(map[int64]pending, 1)
		}
		overlay[b.ProducerID] = pending{epoch: b.ProducerEpoch, lastSeq: b.LastSequence()}
	}
	return Verdict{}, nil
}

// Apply records batches that were appended at consecutive offsets starting
// at firstOffset (each batch takes LastOffsetDelta+1 offsets).
// logAppendTime is the broker time stamped into the batches, or -1 when
// they keep their CreateTime; nowMs is the broker's clock for expiry.
// Apply does not check: callers Check first (a live append) or replay what
// the log already holds (recovery), where Kafka also applies unconditionally.
func (s *State) Apply(batches []Batch, firstOffset, logAppendTime, nowMs int64) {
	off := firstOffset
	for i := range batches {
		b := &batches[i]
		base := off
		off += int64(b.LastOffsetDelta) + 1
		if !b.hasProducer() {
			continue
		}
		m := BatchMeta{
			FirstSeq:    b.BaseSequence,
			LastSeq:     b.LastSequence(),
			FirstOffset: base,
			LastOffset:  base + int64(b.LastOffsetDelta),
			Timestamp:   b.MaxTimestamp,
		}
		if logAppendTime >= 0 {
			m.Timestamp, m.LogAppendTime = logAppendTime, true
		}
		s.add(b.ProducerID, b.ProducerEpoch, m, nowMs)
	}
}

func (s *State) add(id int64, epoch int16, m BatchMeta, nowMs int64) {
	p := s.producers[id]
	if p == nil {
		p = &Producer{ID: id, Epoch: epoch, Batches: make([]BatchMeta, 0, NumBatchesToRetain)}
		s.producers[id] = p
	}
	if p.Epoch != epoch {
		p.Epoch = epoch
		p.Batches = p.Batches[:0]
	}
	if len(p.Batches) == NumBatchesToRetain {
		copy(p.Batches, p.Batches[1:])
		p.Batches = p.Batches[:NumBatchesToRetain-1]
	}
	p.Batches = append(p.Batches, m)
	if nowMs > p.LastSeenMs {
		p.LastSeenMs = nowMs
	}
}

// Expire removes producers not seen for expirationMs or longer
// (producer.id.expiration.ms) and returns how many it removed.
func (s *State) Expire(nowMs, expirationMs int64) int {
	n := 0
	for id, p := range s.producers {
		if nowMs-p.LastSeenMs >= expirationMs {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

// Reset forgets every producer.
func (s *State) Reset() { clear(s.producers) }
