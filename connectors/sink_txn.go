package connectors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// TransactionalSink is an optional Sink capability of sinks that write
// to Kafka topics of the cluster the runtime consumes from (the kafka
// sink, a pipeline's stream). Under SinkOptions.ExactlyOnce the runtime
// calls UseProducer before Open with its own transactional client; the
// sink then produces every record through p (Produce only: no Flush, no
// transaction calls of its own), and reports a failed record from Flush
// as an error. The records of each flush interval and the offsets of the
// records consumed are then one transaction (Kafka's consume-transform-
// produce exactly-once): a read_committed consumer of the sink's topics
// sees every result once, whatever crashes, rebalances or failed writes
// happened (they abort the transaction and the input is consumed again
// from the committed offsets).
type TransactionalSink interface {
	Sink
	UseProducer(p Producer)
}

// Producer is the part of a franz-go client a TransactionalSink uses.
type Producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
}

// txnSession builds the task's client as a transact session (the
// transactional.id is new at every start, as Kafka Streams' EOS v2;
// zombies are fenced by the group generation, KIP-447).
func (t *sinkTask) txnSession(opts []kgo.Opt) error {
	ts, ok := t.sink.(TransactionalSink)
	if !ok {
		return fmt.Errorf("%w: sink connector %q: exactly-once needs a sink that writes to Kafka topics through the runtime", ErrConfig, t.name)
	}
	base, err := t.co.Opts()
	if err != nil {
		return err
	}
	opts = append(base, append(opts,
		kgo.TransactionalID(fmt.Sprintf("%s-%d", t.opts.Group, time.Now().UnixNano())),
		kgo.TransactionTimeout(t.opts.TransactionTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)...)
	s, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	t.sess, t.cl = s, s.Client()
	ts.UseProducer(t.cl)
	return nil
}

// begin opens the next transaction (exactly-once only).
func (t *sinkTask) begin() error {
	if t.sess == nil {
		return nil
	}
	if err := t.sess.Begin(); err != nil {
		return fmt.Errorf("beginning a transaction: %w", err)
	}
	return nil
}

// flushAndCommitTxn is flushAndCommit under exactly-once: flush the sink
// (its records are in the open transaction), then end the transaction
// with the consumed offsets. A failed flush or a rebalance aborts it: the
// session rewinds to the committed offsets, so the records are consumed
// and written again. A retriable failure waits out a backoff. t.mu is
// held.
func (t *sinkTask) flushAndCommitTxn(ctx context.Context) error {
	if t.closed {
		return nil
	}
	// Not cut short by a stop: a transaction end whose request is
	// canceled leaves its outcome unknown, and the session refuses to
	// commit after that.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.opts.StopTimeout)
	defer cancel()
	err := t.cl.Flush(ctx) // the sink's records and dead letters
	if err == nil {
		err = t.sink.Flush(ctx)
	}
	if err == nil {
		err = t.getFatal()
	}
	if err != nil {
		t.m.Error("flush")
		t.log.Warn("sink flush failed; aborting the transaction", zap.Error(err))
		if _, aerr := t.sess.End(ctx, kgo.TryAbort); aerr != nil {
			return fmt.Errorf("aborting the transaction after %v: %w", err, aerr)
		}
		t.txnFails++
		if !errors.Is(err, ErrRetriable) || (t.opts.Backoff.Attempts > 0 && t.txnFails > t.opts.Backoff.Attempts) {
			return fmt.Errorf("flush: %w", err)
		}
		t.m.Retries.Inc()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(t.opts.Backoff.Delay(t.txnFails - 1)):
		}
		t.dirty = false
		return t.begin()
	}
	committed, err := t.sess.End(ctx, kgo.TryCommit)
	if err != nil {
		t.m.Error("commit")
		return fmt.Errorf("committing the transaction of group %s: %w", t.opts.Group, err)
	}
	t.dirty = false
	if committed {
		t.txnFails = 0
		t.m.Commits.Inc()
	} else {
		t.log.Info("transaction aborted (the group rebalanced); its records are consumed again")
	}
	return t.begin()
}
