package connectors

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
)

// readRange reads every record of the given topics from the given start
// offsets (nil map for a topic: every partition from its start; with
// onlyListed, only the partitions a topic's map lists) up to the end
// offsets at the time of the call, calling fn in offset order per
// partition. co builds a short-lived consumer client. committed reads
// with read_committed, once every transaction begun below those ends has
// ended (listEnds): records of aborted transactions are skipped, and the
// control records (kept by the client so the range's end is reached
// without idle polls) are not passed to fn.
func readRange(ctx context.Context, co kafkaclient.Options, adm *kadm.Client, from map[string]map[int32]int64, onlyListed, committed bool, fn func(*kgo.Record)) error {
	if len(from) == 0 {
		return nil
	}
	topics := make([]string, 0, len(from))
	for t := range from {
		topics = append(topics, t)
	}
	ends, err := listEnds(ctx, adm, committed, topics...)
	if err != nil {
		return fmt.Errorf("listing end offsets of %v: %w", topics, err)
	}
	want := map[string]map[int32]int64{} // topic → partition → end
	offs := map[string]map[int32]kgo.Offset{}
	var rerr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			if rerr == nil {
				rerr = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
			}
			return
		}
		start, listed := from[o.Topic][o.Partition]
		if !listed && onlyListed {
			return
		}
		if start >= o.Offset {
			return
		}
		if want[o.Topic] == nil {
			want[o.Topic] = map[int32]int64{}
			offs[o.Topic] = map[int32]kgo.Offset{}
		}
		want[o.Topic][o.Partition] = o.Offset
		offs[o.Topic][o.Partition] = kgo.NewOffset().At(start)
	})
	if rerr != nil {
		return rerr
	}
	if len(want) == 0 {
		return nil
	}
	copts := []kgo.Opt{kgo.ConsumePartitions(offs), kgo.FetchMaxBytes(32 << 20), kgo.FetchMaxWait(200 * time.Millisecond)}
	if committed {
		copts = append(copts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	cl, err := kafkaclient.New(co, copts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	idle := 0
	for len(want) > 0 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %v: %w", topics, err)
		}
		n := 0
		fs.EachError(func(t string, p int32, err error) {
			if err != context.DeadlineExceeded && rerr == nil {
				rerr = fmt.Errorf("reading %s/%d: %w", t, p, err)
			}
		})
		if rerr != nil {
			return rerr
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				end, ok := want[r.Topic][r.Partition]
				if !ok {
					continue
				}
				n++
				if r.Offset < end && !r.Attrs.IsControl() {
					fn(r)
				}
				// At or past the end (a record beyond it: the last
				// ones were aborted, or compacted away): read.
				if r.Offset+1 >= end {
					delete(want[r.Topic], r.Partition)
					if len(want[r.Topic]) == 0 {
						delete(want, r.Topic)
					}
				}
			}
			// A partition whose end is a control record or compacted away
			// reports a high watermark we have reached.
			hw := p.HighWatermark
			if committed {
				hw = p.LastStableOffset
			}
			if w, ok := want[p.Topic][p.Partition]; ok && hw <= w && len(p.Records) > 0 &&
				p.Records[len(p.Records)-1].Offset+1 >= hw {
				delete(want[p.Topic], p.Partition)
				if len(want[p.Topic]) == 0 {
					delete(want, p.Topic)
				}
			}
		})
		if n == 0 {
			// Nothing more arrives (trailing control or compacted-away
			// records): after a few idle polls the range is read.
			if idle++; idle >= 5 {
				return nil
			}
		} else {
			idle = 0
		}
	}
	return nil
}

// listEnds lists the end offsets of topics (their high watermarks).
// committed (a read_committed read up to them) also waits until no
// transaction begun below them is still open: until each partition's
// last stable offset has reached its end. Reading only up to the last
// stable offset instead would miss records committed after another
// producer's transaction began (a killed producer's, until the
// coordinator aborts it): an exactly-once source sharing the offsets
// topic's partition with other sources would resume from stale positions
// and write records again. Transactions end within their timeout, when
// the coordinator aborts them; ctx bounds the wait.
// A topic just created may be unknown to the broker's metadata for a
// moment (Apache Kafka propagates it from the controller): a retriable
// error is retried for up to 30 s.
func listEnds(ctx context.Context, adm *kadm.Client, committed bool, topics ...string) (kadm.ListedOffsets, error) {
	ends, err := listOffsets(ctx, adm, false, topics...)
	if err != nil || !committed {
		return ends, err
	}
	delay := 20 * time.Millisecond
	for {
		stable, err := listOffsets(ctx, adm, true, topics...)
		if err != nil {
			return nil, err
		}
		var open error
		stable.Each(func(o kadm.ListedOffset) {
			if e, ok := ends.Lookup(o.Topic, o.Partition); ok && open == nil && o.Offset < e.Offset {
				open = fmt.Errorf("%s/%d has a transaction open below its end offset %d (last stable offset %d)", o.Topic, o.Partition, e.Offset, o.Offset)
			}
		})
		if open == nil {
			return ends, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", open, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// listOffsets lists the end offsets of topics, or with stable their last
// stable offsets, retrying a retriable error for up to 30 s.
func listOffsets(ctx context.Context, adm *kadm.Client, stable bool, topics ...string) (kadm.ListedOffsets, error) {
	deadline := time.Now().Add(30 * time.Second)
	delay := 20 * time.Millisecond
	for {
		var ls kadm.ListedOffsets
		var err error
		if stable {
			ls, err = adm.ListCommittedOffsets(ctx, topics...)
		} else {
			ls, err = adm.ListEndOffsets(ctx, topics...)
		}
		if err == nil {
			err = ls.Error()
		}
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return ls, err
		}
		select {
		case <-ctx.Done():
			return ls, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}
