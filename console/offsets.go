package console

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cheaper forms of kadm calls for clusters with many partitions: kadm's
// ListStartOffsets/ListEndOffsets and Lag each ask for fresh metadata of
// every topic first (and kgo's sharding of ListOffsets asks for the
// metadata of its topics when its copy is older than 5 s); listOffsets
// sends ListOffsets straight to the leaders named by the shared metadata
// (Console.routingMeta), and asks once more with metadata taken anew for the
// partitions whose answer says it is stale.

// Timestamps of ListOffsets.
const (
	atStart int64 = -2
	atEnd   int64 = -1
)

// listOffsets asks the offset at ts of every partition in parts.
func (c *Console) listOffsets(ctx context.Context, ts int64, parts map[string][]int32) (kadm.ListedOffsets, error) {
	return c.listOffsetsWith(ctx, nil, ts, parts)
}

// listOffsetsWith is listOffsets asking the leaders m names (nil: the
// shared routing metadata).
func (c *Console) listOffsetsWith(ctx context.Context, m *clusterMeta, ts int64, parts map[string][]int32) (kadm.ListedOffsets, error) {
	out := kadm.ListedOffsets{}
	if len(parts) == 0 {
		return out, nil
	}
	if m == nil {
		var err error
		if m, _, err = c.routingMeta(ctx); err != nil {
			return out, err
		}
	}
	stale, err := c.listOffsetsVia(ctx, m, ts, parts, out)
	if len(stale) > 0 && ctx.Err() == nil {
		c.metaCache.forget()
		if m, _, merr := c.meta(ctx); merr == nil {
			_, err = c.listOffsetsVia(ctx, m, ts, stale, out)
		}
	}
	return out, err
}

// staleCodes are the answers that say the metadata asked by is stale.
var staleCodes = map[int16]bool{
	kerr.NotLeaderForPartition.Code:   true,
	kerr.UnknownTopicOrPartition.Code: true,
	kerr.LeaderNotAvailable.Code:      true,
	kerr.FencedLeaderEpoch.Code:       true,
	kerr.UnknownLeaderEpoch.Code:      true,
}

// listOffsetsVia asks each partition's leader in m (one request per
// leader, all at once) and sets the answers in out; stale are the
// partitions whose answer says m is out of date.
func (c *Console) listOffsetsVia(ctx context.Context, m *clusterMeta, ts int64, parts map[string][]int32, out kadm.ListedOffsets) (stale map[string][]int32, _ error) {
	var mu sync.Mutex
	set := func(o kadm.ListedOffset, isStale bool) {
		t := out[o.Topic]
		if t == nil {
			t = map[int32]kadm.ListedOffset{}
			out[o.Topic] = t
		}
		t[o.Partition] = o
		if isStale {
			if stale == nil {
				stale = map[string][]int32{}
			}
			stale[o.Topic] = append(stale[o.Topic], o.Partition)
		}
	}
	reqs := map[int32]*kmsg.ListOffsetsRequest{}
	for t, ps := range parts {
		td, known := m.Topics[t]
		var rts map[int32]int // leader → index of t in its request
		for _, p := range ps {
			pd, ok := td.Partitions[p]
			switch {
			case !known || !ok:
				set(kadm.ListedOffset{Topic: t, Partition: p, Offset: -1, Err: kerr.UnknownTopicOrPartition}, true)
				continue
			case pd.Leader < 0:
				set(kadm.ListedOffset{Topic: t, Partition: p, Offset: -1, Err: kerr.LeaderNotAvailable}, true)
				continue
			}
			req := reqs[pd.Leader]
			if req == nil {
				req = kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = -1
				reqs[pd.Leader] = req
			}
			if rts == nil {
				rts = map[int32]int{}
			}
			i, ok := rts[pd.Leader]
			if !ok {
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = t
				req.Topics = append(req.Topics, rt)
				i = len(req.Topics) - 1
				rts[pd.Leader] = i
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
	}
	var (
		errs []error
		wg   sync.WaitGroup
	)
	for leader, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kr, err := c.kcl.Broker(int(leader)).Request(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("ListOffsets to broker %d: %w", leader, err))
				for _, t := range req.Topics {
					for _, p := range t.Partitions {
						set(kadm.ListedOffset{Topic: t.Topic, Partition: p.Partition, Offset: -1, Err: err}, true)
					}
				}
				return
			}
			for _, t := range kr.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range t.Partitions {
					set(kadm.ListedOffset{Topic: t.Topic, Partition: p.Partition, Timestamp: p.Timestamp,
						Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)}, staleCodes[p.ErrorCode])
				}
			}
		}()
	}
	wg.Wait()
	return stale, errors.Join(errs...)
}

// partitionsOf lists the partitions of the topics in td.
func partitionsOf(td kadm.TopicDetails, names []string) map[string][]int32 {
	out := map[string][]int32{}
	for _, n := range names {
		for p := range td[n].Partitions {
			out[n] = append(out[n], p)
		}
		sort.Slice(out[n], func(i, j int) bool { return out[n][i] < out[n][j] })
	}
	return out
}

// lagSnapshot is every partition's end offset and every group's lag,
// taken together: the sampler's sample and the groups list's data.
type lagSnapshot struct {
	Ends    kadm.ListedOffsets
	EndsErr error // Ends may lack partitions
	Groups  map[string]*groupView
	LagsErr error
}

// lags is the lag snapshot at most maxAge old, and when it was taken.
func (c *Console) lags(ctx context.Context, maxAge time.Duration) (*lagSnapshot, time.Time, error) {
	return c.lagCache.get(ctx, maxAge, c.loadLags)
}

// loadLags asks every partition's end offset (one ListOffsets per
// leader) and every group's committed offsets, and computes the lags
// from those ends. A partial snapshot comes with its error (and is not
// kept).
func (c *Console) loadLags(ctx context.Context) (*lagSnapshot, error) {
	m, _, err := c.routingMeta(ctx)
	if err != nil {
		return nil, err
	}
	s := &lagSnapshot{}
	s.Ends, s.EndsErr = c.listOffsetsWith(ctx, m, atEnd, partitionsOf(m.Topics, m.Names))
	// A topic deleted since the metadata was taken (listOffsets asked
	// again with fresh metadata): it has no end offsets.
	for t, ps := range s.Ends {
		for _, o := range ps {
			if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
				delete(s.Ends, t)
				break
			}
		}
	}
	if s.Ends == nil {
		s.Ends = kadm.ListedOffsets{}
	}
	s.Groups, s.LagsErr = c.groupLags(ctx, s.Ends)
	return s, errors.Join(s.EndsErr, s.LagsErr)
}

// topicMeta is a clusterMeta of the topics in md (a page's own
// metadata), for listOffsetsWith.
func topicMeta(md kadm.Metadata) *clusterMeta {
	return &clusterMeta{Cluster: md.Cluster, Controller: md.Controller, Topics: md.Topics}
}
