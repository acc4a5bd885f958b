package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EndsRetryFor is how long ListEnds asks again after errors that may
// clear by themselves before it returns the last one.
const EndsRetryFor = 30 * time.Second

// ListEnds lists the end offsets (high watermarks) of topics'
// partitions: where a reader that wants everything written so far stops.
//
// With stable (a read_committed reader's end) it then waits until no
// transaction begun below those ends is still open: until each
// partition's last stable offset has reached its end. Stopping at the
// last stable offset as of the call instead would miss records committed
// after another producer's transaction began: a killed producer's stays
// open until the coordinator aborts it (its transaction timeout). ctx
// bounds that wait; the error then says which partition was still open.
//
// A Retriable error is asked again, pausing 20 ms doubling to 500 ms, for
// up to EndsRetryFor, then returned (with ctx's error once ctx ends). A
// partition's own error (kadm.ListedOffset.Err) counts as the answer's
// error.
func ListEnds(ctx context.Context, adm *kadm.Client, stable bool, topics ...string) (kadm.ListedOffsets, error) {
	return listEnds(ctx, adm, stable, nil, topics)
}

// ListEnd is ListEnds for one partition: only its transactions are
// waited for. A partition missing from the answer (ErrPartitionMissing:
// a topic's new partitions, not yet in the metadata of the broker asked)
// is asked again like a Retriable error.
func ListEnd(ctx context.Context, adm *kadm.Client, stable bool, topic string, p int32) (int64, error) {
	deadline := time.Now().Add(EndsRetryFor)
	delay := 20 * time.Millisecond
	var missing error // the partition last found missing
	for {
		ends, err := listEnds(ctx, adm, stable, func(o kadm.ListedOffset) bool { return o.Partition == p }, []string{topic})
		if err != nil {
			return 0, cutShort(ctx, missing, err)
		}
		if o, ok := ends.Lookup(topic, p); ok {
			return o.Offset, nil
		}
		missing = fmt.Errorf("end offset of %s/%d: %w", topic, p, ErrPartitionMissing)
		if time.Now().After(deadline) {
			return 0, missing
		}
		if err := pause(ctx, &delay, missing); err != nil {
			return 0, err
		}
	}
}

// ErrPartitionMissing is ListEnd's error for a partition the answer left
// out.
var ErrPartitionMissing = errors.New("partition missing from the answer")

// listEnds is ListEnds for the partitions keep accepts (all if nil).
func listEnds(ctx context.Context, adm *kadm.Client, stable bool, keep func(kadm.ListedOffset) bool, topics []string) (kadm.ListedOffsets, error) {
	ends, err := listOffsets(ctx, adm, false, topics)
	if err != nil {
		return nil, err
	}
	if keep != nil {
		for _, ps := range ends {
			for p, o := range ps {
				if !keep(o) {
					delete(ps, p)
				}
			}
		}
	}
	if !stable {
		return ends, nil
	}
	delay := 20 * time.Millisecond
	var open error // the transaction last seen open
	for {
		lso, err := listOffsets(ctx, adm, true, topics)
		if err != nil {
			return nil, cutShort(ctx, open, err)
		}
		open = nil
		lso.Each(func(o kadm.ListedOffset) {
			if e, ok := ends.Lookup(o.Topic, o.Partition); ok && open == nil && o.Offset < e.Offset {
				open = fmt.Errorf("%s/%d has a transaction open below its end offset %d (last stable offset %d)", o.Topic, o.Partition, e.Offset, o.Offset)
			}
		})
		if open == nil {
			return ends, nil
		}
		if err := pause(ctx, &delay, open); err != nil {
			return nil, err
		}
	}
}

// listOffsets lists the end offsets of topics, or with lso their last
// stable offsets, asking again after a Retriable error for up to
// EndsRetryFor.
func listOffsets(ctx context.Context, adm *kadm.Client, lso bool, topics []string) (kadm.ListedOffsets, error) {
	deadline := time.Now().Add(EndsRetryFor)
	delay := 20 * time.Millisecond
	var last error // the last Retriable error
	for {
		var ls kadm.ListedOffsets
		var err error
		if lso {
			ls, err = adm.ListCommittedOffsets(ctx, topics...)
		} else {
			ls, err = adm.ListEndOffsets(ctx, topics...)
		}
		if err == nil {
			err = ls.Error()
		}
		if err == nil {
			return ls, nil
		}
		if lso {
			err = fmt.Errorf("last stable offsets: %w", err)
		}
		if !Retriable(err) || time.Now().After(deadline) {
			return nil, cutShort(ctx, last, err)
		}
		last = err
		if err := pause(ctx, &delay, err); err != nil {
			return nil, err
		}
	}
}

// cutShort is the error of a request that failed while waiting for
// waited (nil: nothing yet): once ctx has ended (kadm reports a request
// cut short by it as a shard error that does not wrap it), waited, or
// else err, joined with ctx's error; before that, err.
func cutShort(ctx context.Context, waited, err error) error {
	switch {
	case ctx.Err() == nil || errors.Is(err, ctx.Err()) && waited == nil:
		return err
	case waited != nil:
		return fmt.Errorf("%w: %w", waited, ctx.Err())
	default:
		return fmt.Errorf("%w: %w", err, ctx.Err())
	}
}

// pause waits *delay (then doubles it, up to 500 ms) unless ctx ends
// first; then it returns last joined with ctx's error.
func pause(ctx context.Context, delay *time.Duration, last error) error {
	t := time.NewTimer(*delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", last, ctx.Err())
	case <-t.C:
	}
	*delay = min(2**delay, 500*time.Millisecond)
	return nil
}

// Retriable reports whether err, from a request to the cluster, may
// clear by itself if asked again: ErrPartitionMissing, a retriable Kafka error
// (UNKNOWN_TOPIC_OR_PARTITION while a new topic reaches every broker's
// metadata, NOT_LEADER_OR_FOLLOWER, COORDINATOR_LOAD_IN_PROGRESS...),
// one of kgo's retryable broker errors, or a broker that could not be
// reached (a dial error or EOF: a killed leader until its partitions
// have moved; kgo leaves those to the caller). A context's end is not
// retriable.
func Retriable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var op *net.OpError
	return errors.Is(err, ErrPartitionMissing) || kerr.IsRetriable(err) || kgo.IsRetryableBrokerErr(err) || errors.As(err, &op) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
