package console

import (
	"context"
	"errors"
	"sort"

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

// groupLags is kadm.Lag for the groups (all of them when none are
// given) with one ListOffsets of the committed partitions' ends.
func (c *Console) groupLags(ctx context.Context, groups ...string) (kadm.DescribedGroupLags, error) {
	described, err := c.adm.DescribeGroups(ctx, groups...)
	if err != nil && len(described) == 0 {
		return nil, err
	}
	var names []string
	for g, d := range described {
		if d.Err == nil {
			names = append(names, g)
		}
	}
	fetched := c.adm.FetchManyOffsets(ctx, names...)
	parts := map[string][]int32{}
	for t, ps := range fetched.CommittedPartitions() {
		for p := range ps {
			parts[t] = append(parts[t], p)
		}
	}
	ends, eerr := c.listOffsets(ctx, atEnd, parts)
	out := kadm.DescribedGroupLags{}
	for g, d := range described {
		l := kadm.DescribedGroupLag{Group: g, Coordinator: d.Coordinator, State: d.State, ProtocolType: d.ProtocolType,
			Protocol: d.Protocol, Members: d.Members, DescribeErr: d.Err}
		if f, ok := fetched[g]; ok {
			l.FetchErr = f.Err
			if f.Err == nil {
				l.Lag = kadm.CalculateGroupLag(d, f.Fetched, ends)
			}
		}
		out[g] = l
	}
	return out, errors.Join(err, eerr)
}
