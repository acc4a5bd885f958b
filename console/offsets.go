package console

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cheaper forms of kadm calls for clusters with many partitions: kadm's
// ListStartOffsets/ListEndOffsets and Lag each ask for fresh metadata of
// every topic first; these take the partitions from metadata the page
// already has and send ListOffsets to the leaders the client knows
// (kgo's sharding over its cached metadata).

// Timestamps of ListOffsets.
const (
	atStart int64 = -2
	atEnd   int64 = -1
)

// listOffsets asks the offset at ts of every partition in parts.
func (c *Console) listOffsets(ctx context.Context, ts int64, parts map[string][]int32) (kadm.ListedOffsets, error) {
	out := kadm.ListedOffsets{}
	if len(parts) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for t, ps := range parts {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = t
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	var errs []error
	for _, sh := range c.kcl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			errs = append(errs, sh.Err)
			continue
		}
		resp := sh.Resp.(*kmsg.ListOffsetsResponse)
		for _, t := range resp.Topics {
			m := out[t.Topic]
			if m == nil {
				m = map[int32]kadm.ListedOffset{}
				out[t.Topic] = m
			}
			for _, p := range t.Partitions {
				m[p.Partition] = kadm.ListedOffset{Topic: t.Topic, Partition: p.Partition, Timestamp: p.Timestamp,
					Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)}
			}
		}
	}
	return out, errors.Join(errs...)
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
	m, _, err := c.meta(ctx)
	if err != nil {
		return nil, err
	}
	s := &lagSnapshot{}
	s.Ends, s.EndsErr = c.listOffsets(ctx, atEnd, partitionsOf(m.Topics, m.Names))
	if staleMeta(s.EndsErr, s.Ends) {
		// A topic was deleted since the metadata was taken: take it
		// anew (the deleted topic's ends are not asked for).
		c.metaCache.forget()
		if m, _, err = c.meta(ctx); err != nil {
			return nil, err
		}
		s.Ends, s.EndsErr = c.listOffsets(ctx, atEnd, partitionsOf(m.Topics, m.Names))
	}
	if s.Ends == nil {
		s.Ends = kadm.ListedOffsets{}
	}
	s.Groups, s.LagsErr = c.groupLags(ctx, s.Ends)
	return s, errors.Join(s.EndsErr, s.LagsErr)
}
