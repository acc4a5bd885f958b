package connectors

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// Exactly-once sources (SourceOptions.ExactlyOnce), as Kafka Connect's
// KIP-618: the task's producer is transactional (one transactional id per
// task, stable across restarts). Records are produced inside an open
// transaction; each commit flushes them, writes the positions they reach
// (and the scan marks) to the offsets topic in the same transaction and
// commits it, then begins the next. On start the task first fences its
// transactional id (InitProducerId: a zombie of the task is fenced and its
// open transaction aborted), then reads positions with read_committed.
// Records and the positions covering them are thus visible together or
// not at all: a kill -9 loses the open transaction's records, and the
// restarted task reads them again from the last committed positions.
//
// Any failure inside a transaction (a record the producer gave up on, a
// failed commit) aborts it and stops the task with the error: the source
// has read past records that are no longer in the topic, so only a
// restart (a pipeline restarts a failed component) resumes exactly. A
// record the broker refuses for its content (too large, invalid) goes to
// the dead-letter topic inside the transaction, without the at-least-once
// mode's retry alone (that would write outside the transaction). Pushed
// records (PushSource) carry no positions; what exactly-once gives them is
// that a sender is answered only after the transaction holding its
// records commits.

// txnState is a source task's exactly-once state.
type txnState struct {
	on       bool
	produced int            // records produced in the open transaction (loop goroutine)
	promises sync.WaitGroup // produced records whose promise has not returned
	err      error          // first failure in the open transaction (guarded by mu)
	broken   error          // the aborted transaction's cause: the task stops
	settles  []txnSettle    // pushed records' fates, told when the transaction ends (mu)
	epoch    int16          // producer epoch after fencing: > 0 if the transactional id was used before
	marked   bool           // a transaction has committed the scan record (RequirePositions)
}

// txnSettle is a pushed record's fate, told when its transaction ends.
type txnSettle struct {
	b   *pushBatch
	f   fate
	err error
}

// recordRefusal reports whether err is the broker refusing one record
// for its content (the record goes to the dead-letter topic) rather than
// a failure of the transaction.
func recordRefusal(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) || errors.Is(err, kerr.InvalidTimestamp)
}

// txnFailed records the first failure of the open transaction.
func (t *sourceTask) txnFailed(err error) {
	t.mu.Lock()
	if t.txn.err == nil {
		t.txn.err = err
	}
	t.mu.Unlock()
}

// fence begins the task's first transaction and initializes the task's
// transactional id (InitProducerId, which kgo would otherwise send only
// with the first record), which bumps its epoch, so a zombie producer of
// this task is fenced and the transaction it left open is aborted by the
// coordinator (the client waits out CONCURRENT_TRANSACTIONS until the
// abort markers are written), and the last stable offsets move past it
// before positions are read. The epoch it gets (0 for a transactional id
// never used, or forgotten after transactional.id.expiration.ms) tells
// whether the task ran before.
func (t *sourceTask) fence(ctx context.Context) error {
	if err := t.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("initializing transactional id %q: %w", t.opts.TransactionalID, err)
	}
	_, epoch, err := t.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("initializing transactional id %q: %w", t.opts.TransactionalID, err)
	}
	t.txn.epoch = epoch
	return nil
}

// commitTxn commits the open transaction with the positions its records
// reach, tells the pushed records' senders and a Committer source, and
// begins the next transaction. On any failure it aborts the transaction
// and stops the task (abortTxn).
func (t *sourceTask) commitTxn(ctx context.Context) error {
	if t.txn.broken != nil {
		return t.txn.broken
	}
	err := t.cl.Flush(ctx)
	if err == nil {
		// Every promise has run (a record failed before it was buffered
		// is not waited for by Flush), so the dead letters they write
		// inside the transaction are counted, then written.
		t.txn.promises.Wait()
		t.dlqWG.Wait()
		err = t.cl.Flush(ctx)
	}
	t.mu.Lock()
	if err == nil {
		if err = t.txn.err; err == nil {
			err = t.fatal
		}
	}
	t.mu.Unlock()
	if err != nil {
		return t.abortTxn(ctx, err)
	}
	recs, stored, committed := t.positionRecords()
	if t.txn.produced == 0 && len(stored) == 0 && (t.txn.marked || !t.opts.RequirePositions) {
		return nil // nothing new: no transaction to commit
	}
	if err := t.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return t.abortTxn(ctx, fmt.Errorf("storing positions in %s: %w", t.rt.offsetsTopic(), err))
	}
	if err := t.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return t.abortTxn(ctx, fmt.Errorf("committing the transaction: %w", err))
	}
	t.txn.produced = 0
	t.txn.marked = true
	t.positionsStored(stored, committed) // counts the commit first
	t.mu.Lock()
	settles := t.txn.settles
	t.txn.settles = nil
	t.mu.Unlock()
	for _, s := range settles {
		s.b.settle(s.f, s.err)
	}
	if err := t.cl.BeginTransaction(); err != nil {
		return t.abortTxn(ctx, err)
	}
	return nil
}

// abortTxn aborts the open transaction after cause, fails the pushed
// records it held, and stops the task: its source read past records that
// are not in the topic now, and a restart resumes from the last committed
// positions.
func (t *sourceTask) abortTxn(ctx context.Context, cause error) error {
	t.log.Warn("aborting the source transaction; the task stops and resumes from its last committed positions when restarted", zap.Error(cause))
	t.m.Error("transaction")
	err := t.cl.AbortBufferedRecords(ctx)
	if err == nil {
		err = t.cl.EndTransaction(ctx, kgo.TryAbort)
	}
	if err != nil {
		t.log.Warn("aborting the source transaction failed; the coordinator aborts it after the transaction timeout or when the task restarts", zap.Error(err))
	}
	t.txn.broken = fmt.Errorf("transaction aborted: %w", cause)
	t.mu.Lock()
	settles := t.txn.settles
	t.txn.settles = nil
	if t.fatal == nil {
		t.fatal = t.txn.broken
	}
	t.mu.Unlock()
	for _, s := range settles {
		s.b.settle(fateFailed, t.txn.broken)
	}
	return t.txn.broken
}
