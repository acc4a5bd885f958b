package txn

import (
	"errors"
	"testing"

	"weir/broker/log"
	"weir/broker/log/vfs"
)

func (f *fixture) appendVerified(b []byte, g *VerificationGuard) (Result, error) {
	return f.p.AppendVerified(b, g, func() (log.AppendInfo, error) { return f.l.Append(b, 0) })
}

// TestVerificationGuard: the first transactional append of a producer to
// a partition needs a current verification; later ones of the same
// transaction need none; a marker (or any transactional append) uses the
// guard up, so a verification that raced with an abort marker cannot
// begin a transaction, and the next transaction verifies again (Kafka's
// VerificationGuard, KIP-890 part 1).
func TestVerificationGuard(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), "/d/t-0")
	mustTxnState := func(err error, what string) {
		t.Helper()
		if !errors.Is(err, ErrInvalidTxnState) {
			t.Fatalf("%s: err %v, want ErrInvalidTxnState", what, err)
		}
	}
	// Without a guard nothing begins a transaction.
	_, err := f.appendVerified(txnBatch(1, 0, 0, 1), nil)
	mustTxnState(err, "no verification")
	if f.l.EndOffset() != 0 {
		t.Fatalf("log end %d after a refused append", f.l.EndOffset())
	}
	g := f.p.StartVerification(1, 0)
	if g == nil {
		t.Fatal("no guard for a producer without a transaction here")
	}
	if again := f.p.StartVerification(1, 0); again != g {
		t.Fatal("a second verification before the append got another guard")
	}
	if _, err := f.appendVerified(txnBatch(1, 0, 0, 2), g); err != nil {
		t.Fatal(err)
	}
	// Ongoing at epoch 0: no verification needed, the sentinel continues.
	if g2 := f.p.StartVerification(1, 0); g2 != nil {
		t.Fatal("a verification asked for while the transaction is ongoing here")
	}
	if _, err := f.appendVerified(txnBatch(1, 0, 2, 1), nil); err != nil {
		t.Fatal(err)
	}
	// Another epoch is verified again.
	if g2 := f.p.StartVerification(1, 1); g2 == nil {
		t.Fatal("no verification for another epoch")
	}
	// The ABA race: a verification is taken, an abort marker lands, the
	// stale guard must not begin a transaction.
	f.appendAs(FromCoordinator, log.BuildEndTxnMarker(1, 1, log.EndTxnMarker{Commit: false, CoordinatorEpoch: 0}, 5))
	stale := g
	g = f.p.StartVerification(1, 1)
	f.appendAs(FromCoordinator, log.BuildEndTxnMarker(1, 1, log.EndTxnMarker{Commit: false, CoordinatorEpoch: 0}, 5))
	_, err = f.appendVerified(txnBatch(1, 1, 0, 1), g)
	mustTxnState(err, "guard used up by a marker")
	_, err = f.appendVerified(txnBatch(1, 1, 0, 1), stale)
	mustTxnState(err, "guard of an earlier transaction")
	// A fresh verification begins the next transaction.
	g = f.p.StartVerification(1, 1)
	if _, err := f.appendVerified(txnBatch(1, 1, 0, 1), g); err != nil {
		t.Fatal(err)
	}
	// Non-transactional idempotent batches of another producer need none.
	if _, err := f.appendVerified(makeBatch(2, 0, 0, 1, 1), nil); err != nil {
		t.Fatal(err)
	}
	// Pending verifications expire with producer.id.expiration.ms.
	f.p.StartVerification(3, 0)
	if n := len(f.p.state.verifications); n != 1 {
		t.Fatalf("%d pending verifications, want producer 3's", n)
	}
	f.clock.Add(f.p.opts.Expiration)
	f.p.Expire()
	if n := len(f.p.state.verifications); n != 0 {
		t.Fatalf("%d pending verifications after the expiration, want 0", n)
	}
}
