package streams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
)

// Exactly-once processing (Config.ExactlyOnce), as Kafka Streams'
// exactly_once_v2:
//
//   - One transactional producer per instance (transactional.id
//     <app>-<random>, new at every start, as Kafka Streams' process id),
//     through franz-go's GroupTransactSession. Everything a commit
//     interval writes (outputs, repartition records, changelog entries
//     and markers, dead letters) and the input offsets of every task
//     (TxnOffsetCommit, bound to the group generation) are one
//     transaction: they become visible together or not at all.
//   - Zombies are fenced by the group generation (KIP-447): an instance
//     that lost its membership gets ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID
//     on TxnOffsetCommit, and the transaction aborts. A killed instance's
//     open transaction is aborted by the coordinator after
//     TransactionTimeout; until then read_committed consumers, and the
//     next owner's offset fetch (require_stable: UNSTABLE_OFFSET_COMMIT),
//     wait.
//   - Rebalances run between transactions: the loop allows one
//     (BlockRebalanceOnPoll) only right after a transaction ended, before
//     the next one writes anything, so a rebalance waits at most one
//     commit interval. Its callbacks restore the tasks they assign, and a
//     restore can last longer than the transaction timeout (it waits
//     until a killed owner's transaction is aborted, then reads the
//     changelog): a transaction with writes open across it would be
//     aborted by the coordinator, which fences the producer (a new
//     epoch), and the instance would stop.
//   - A rebalance that revokes or loses tasks during a transaction, or a
//     commit that fails abortably, aborts the whole transaction: the
//     instance closes every task without checkpoint (its stores hold
//     aborted updates), rewinds to the committed offsets and reopens the
//     tasks it still owns from their changelogs.
//   - Everything is read read_committed: input and repartition topics, and
//     changelogs at restore, which wait until the partition has no open
//     transaction (its last stable offset is its end) and skip aborted
//     data and control records.
//
// The markers of changelog.go stay: they tell restore where input
// processing resumes (in this mode always the committed offset).

// newTxnID returns the transactional.id of one instance's life.
func newTxnID(app string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return app + "-" + hex.EncodeToString(b[:])
}

// newSession builds the instance's client as a GroupTransactSession.
func (a *App) newSession(opts []kgo.Opt) error {
	base, err := a.client().Opts()
	if err != nil {
		return err
	}
	opts = append(base, append(opts,
		kgo.TransactionalID(newTxnID(a.cfg.ApplicationID)),
		kgo.TransactionTimeout(a.cfg.TransactionTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)...)
	s, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	a.sess, a.cl = s, s.Client()
	return nil
}

// begin starts the next transaction (exactly-once only).
func (a *App) begin() error {
	if a.sess == nil {
		return nil
	}
	a.processed = false
	if err := a.sess.Begin(); err != nil {
		return fmt.Errorf("streams app %s: beginning a transaction: %w", a.cfg.ApplicationID, err)
	}
	return nil
}

// commitTxn is the exactly-once commit of every task: flush the stores
// into the transaction, then end it with the consumed offsets. committed
// is false when the transaction was aborted instead (a rebalance, an
// abortable error): the caller resets the tasks. err is fatal.
func (a *App) commitTxn(ctx context.Context) (committed bool, err error) {
	// Not cut short by a stop: a transaction end whose request is
	// canceled leaves its outcome unknown, and the session refuses to
	// commit after that. Bounded by the transaction timeout (past it the
	// coordinator aborts the transaction anyway): a zombie whose group
	// membership is gone can wait on a heartbeat that never comes, and
	// then stops with the error (fail-stop; its supervisor starts it
	// again with a new producer and the committed offsets).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.TransactionTimeout+5*time.Second)
	defer cancel()
	ts := a.taskList()
	var ferr error
	for _, t := range ts {
		if ferr = t.flush(); ferr != nil {
			break
		}
	}
	if ferr == nil {
		if err := a.cl.Flush(ctx); err != nil {
			return false, fmt.Errorf("streams app %s: waiting for acknowledgements: %w", a.cfg.ApplicationID, err)
		}
		ferr = a.produceErr()
	}
	if ferr != nil {
		if _, err := a.sess.End(ctx, kgo.TryAbort); err != nil {
			a.log.Warn("aborting after a failure", zap.Error(err))
			return false, ferr
		}
		if abortableProduce(ferr) {
			a.log.Warn("a write was refused: the transaction aborted", zap.Error(ferr))
			return false, nil
		}
		return false, ferr
	}
	committed, err = a.sess.End(ctx, kgo.TryCommit)
	if err != nil {
		return false, fmt.Errorf("streams app %s: committing the transaction: %w", a.cfg.ApplicationID, err)
	}
	if committed {
		a.txns.Add(1)
	}
	return committed, nil
}

// abortableProduce reports whether err, a write the exactly-once producer
// had refused, dooms only the open transaction: TRANSACTION_ABORTABLE, or
// INVALID_TXN_STATE, the name Produce v10 and older give it (the broker's
// transaction verification found the partition outside the producer's
// ongoing transaction, KIP-890). As Kafka Streams does with
// TransactionAbortableException (TaskCorruptedException), the transaction
// aborts and the tasks reopen from their changelogs; every other refused
// write stops the app.
func abortableProduce(err error) bool {
	return errors.Is(err, ErrProduce) && (errors.Is(err, kerr.TransactionAbortable) || errors.Is(err, kerr.InvalidTxnState))
}

// abortTxn aborts the open transaction and resets the tasks.
func (a *App) abortTxn(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	if _, err := a.sess.End(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("streams app %s: aborting the transaction: %w", a.cfg.ApplicationID, err)
	}
	return a.resetTasks()
}

// abortAndBegin aborts the open transaction (abortTxn) and begins the
// next one.
func (a *App) abortAndBegin(ctx context.Context) error {
	if err := a.abortTxn(ctx); err != nil {
		return err
	}
	return a.begin()
}

// resetTasks follows an aborted transaction: the tasks' stores hold its
// updates, so every task is closed without checkpoint and opened again
// from its changelog (the session has rewound the consumer to the
// committed offsets). A transaction aborted before it processed anything
// (a rebalance revoked tasks right after a commit, the usual case, since
// rebalances run between transactions) left the stores as that commit
// did: the tasks stay open, as Kafka Streams keeps them when it commits
// before tasks move.
func (a *App) resetTasks() error {
	a.aborts.Add(1)
	a.abortPending.Store(false)
	a.prodMu.Lock()
	a.prodErr = nil // the records it is about were aborted
	a.prodMu.Unlock()
	if !a.processed {
		return nil
	}
	ts := a.taskList()
	a.log.Info("transaction aborted: reopening tasks from their changelogs", zap.Int("tasks", len(ts)))
	a.dropTasks(ts, false)
	rd := &kgoReader{a: a}
	for _, old := range ts {
		if _, err := a.openTask(old.src, old.partition, rd); err != nil {
			return err
		}
	}
	return nil
}

// changelogEnd returns the end offset of changelog partition topic/p
// that a restore reads up to (kafkaclient.ListEnd). With stable set it
// waits until the partition has no open transaction, so a restore reads
// everything decided and nothing undecided; a killed writer's
// transaction lasts until the coordinator aborts it (its timeout). A
// partition the answer leaves out (a topic another worker has just
// created, not yet in every broker's metadata) or an error that may
// clear by itself (kafkaclient.Retriable) is asked again until ctx ends.
func changelogEnd(ctx context.Context, adm *kadm.Client, topic string, p int32, stable bool) (int64, error) {
	for {
		end, err := kafkaclient.ListEnd(ctx, adm, stable, topic, p)
		if err == nil || ctx.Err() != nil || !kafkaclient.Retriable(err) {
			return end, err
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %w", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
