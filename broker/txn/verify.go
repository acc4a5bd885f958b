package txn

import (
	"fmt"

	"weir/broker/log"
)

// Transaction verification on the partition side (KIP-890 part 1, Kafka's
// VerificationGuard and VerificationStateEntry): a client's transactional
// batch that would begin a transaction on a partition is appended only
// after the transaction coordinator confirmed the partition is in the
// producer's transaction, and only if nothing ended a transaction of that
// producer here in between; later batches of the same transaction need no
// verification (the coordinator knows the partition, and the transaction
// is still ongoing here).
//
//  1. StartVerification, before asking the coordinator: nil (Kafka's
//     SENTINEL) when the producer has a transaction ongoing here at that
//     epoch, else the producer's guard, created if it has none.
//  2. AppendVerified, after the coordinator's answer: a transactional
//     batch that continues an ongoing transaction at its epoch is
//     accepted; one that would begin a transaction needs the guard, still
//     the producer's current one, else ErrInvalidTxnState ("not part of an
//     ongoing transaction"). Any transactional append or marker of the
//     producer drops its guard, so an answer that raced with an abort
//     marker (the ABA case of Kafka's UnifiedLog comment) cannot begin a
//     transaction the coordinator does not know.

// VerificationGuard is a producer's pending transaction verification on
// one partition; only its identity matters.
type VerificationGuard struct {
	createdMs int64
	epoch     int16
}

// StartVerification returns nil when producer id has a transaction ongoing
// on this partition at epoch (the append needs no verification), else the
// guard the append must present after the coordinator verified the
// partition (Kafka's UnifiedLog.maybeStartTransactionVerification).
func (p *Partition) StartVerification(id int64, epoch int16) *VerificationGuard {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.startVerification(id, epoch, p.opts.Now().UnixMilli())
}

// AppendVerified is Append for a client's produce with transaction
// verification on: as Append with FromClient, and a transactional batch
// that does not continue its producer's ongoing transaction needs guard
// to be the producer's current one (see StartVerification), else the
// append fails with ErrInvalidTxnState and nothing is appended.
func (p *Partition) AppendVerified(records []byte, guard *VerificationGuard, appendFn func() (log.AppendInfo, error)) (Result, error) {
	return p.append(records, FromClient, &guardCheck{guard: guard}, appendFn)
}

// guardCheck asks Check to require verification of transactional batches
// that begin a transaction.
type guardCheck struct{ guard *VerificationGuard }

func (s *State) startVerification(id int64, epoch int16, nowMs int64) *VerificationGuard {
	if p := s.producers[id]; p != nil && p.TxnFirstOffset >= 0 && p.Epoch == epoch {
		return nil
	}
	g := s.verifications[id]
	if g == nil {
		g = &VerificationGuard{createdMs: nowMs, epoch: epoch}
		if s.verifications == nil {
			s.verifications = map[int64]*VerificationGuard{}
		}
		s.verifications[id] = g
	}
	return g
}

// checkGuard is the verification rule for a client's transactional data
// batch b whose producer is (with this append's earlier batches) in
// transaction inTxn at epoch.
func (s *State) checkGuard(b *Batch, inTxn bool, epoch int16, gc *guardCheck) error {
	if gc == nil || !b.Transactional || b.Control || (inTxn && epoch == b.ProducerEpoch) {
		return nil
	}
	if gc.guard == nil || s.verifications[b.ProducerID] != gc.guard {
		return fmt.Errorf("%w: record was not part of an ongoing transaction: producer %d epoch %d has no ongoing transaction on this partition and its verification by the transaction coordinator is missing or stale",
			ErrInvalidTxnState, b.ProducerID, b.ProducerEpoch)
	}
	return nil
}

// expireVerifications drops guards older than expirationMs (Kafka expires
// them with the producers, producer.id.expiration.ms).
func (s *State) expireVerifications(nowMs, expirationMs int64) {
	for id, g := range s.verifications {
		if nowMs-g.createdMs >= expirationMs {
			delete(s.verifications, id)
		}
	}
}
