package connectors

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
)

// readRange reads every record of the given topics from the given start
// offsets (nil map for a topic: every partition from its start; with
// onlyListed, only the partitions a topic's map lists) up to the end
// offsets at the time of the call, calling fn in offset order per
// partition. co builds a short-lived consumer client. committed reads
// with read_committed, once every transaction begun below those ends has
// ended (kafkaclient.ListEnds): records of aborted transactions are skipped, and the
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
	ends, err := kafkaclient.ListEnds(ctx, adm, committed, topics...)
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
