package kafka

// OffsetForLeaderEpoch (key 23), versions 2-4.
//
// For each partition, the largest leader epoch <= the asked one that the
// leader's log holds, and the offset where it ends (where the next epoch
// starts, or the log end offset for the latest epoch); -1/-1 when the
// asked epoch is newer than any the log knows. Followers use it to cut
// exactly their divergent tail after a leader change (KIP-101/279);
// consumers use it to detect truncation (KIP-320). Only the leader
// answers (NOT_LEADER_OR_FOLLOWER elsewhere); CurrentLeaderEpoch is
// checked as in Fetch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.OffsetForLeaderEpoch.Int16(), 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	tab := s.parts.load()
	// Followers ask with CLUSTER_ACTION; others need DESCRIBE per topic.
	clusterAction := s.allowed(r, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
		ts := tab[rt.Topic]
		describable := clusterAction || s.authorize(r, acl.OpDescribe, acl.ResourceTopic, rt.Topic)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			if !describable {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if ts == nil || rp.Partition < 0 || int(rp.Partition) >= len(ts.parts) {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				continue
			}
			p := ts.parts[rp.Partition]
			if e := p.leaderErr(rp.CurrentLeaderEpoch); e != nil {
				sp.ErrorCode = e.Code
				continue
			}
			sp.LeaderEpoch, sp.EndOffset = p.log.EndOffsetForEpoch(rp.LeaderEpoch)
		}
	}
	return resp, nil
}
