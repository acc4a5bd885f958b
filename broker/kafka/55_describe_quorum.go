package kafka

// DescribeQuorum (key 55), versions 0-2, and the quorum's errors as Kafka
// answers them (used by 64, 80, 81).
//
// A Kafka broker forwards DescribeQuorum to the active controller; a
// weir broker asks the Raft leader of its controller quorum
// (metadata.QuorumAdmin, broker/controller quorum.go) for the state of
// the metadata log, __cluster_metadata partition 0: leader id, epoch
// (the Raft term), high watermark (the commit index), and per voter and
// observer the log end offset (last Raft index), directory id and
// last fetch / last caught-up times; v2 adds the voters' controller
// endpoints (Nodes). kafka-metadata-quorum reaches it with
// --bootstrap-server (a broker listener) and with --bootstrap-controller
// (the controller port also speaks the Kafka protocol: broker/controller
// kafkaport.go; DescribeCluster answers the controllers there). A
// single-node broker (its own controller) answers as a quorum of one
// voter.
//
// Kafka's rules: CLUSTER DESCRIBE is required (else
// CLUSTER_AUTHORIZATION_FAILED at the top level); a request that does
// not ask for exactly __cluster_metadata-0 gets UNKNOWN_TOPIC_OR_PARTITION
// on each partition it names; no reachable leader: NOT_LEADER_OR_FOLLOWER
// on the partition (retriable).

import (
	"errors"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { registerAsync(kmsg.DescribeQuorum.Int16(), 0, 2, handleDescribeQuorum) }

func handleDescribeQuorum(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if !s.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		msg := "Request DescribeQuorum is not authorized."
		resp.ErrorMessage = &msg
		return resp, nil
	}
	if len(req.Topics) != 1 || req.Topics[0].Topic != metadata.ClusterMetadataTopic ||
		len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeQuorumResponseTopic()
			rt.Topic = strings.Clone(t.Topic)
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeQuorumResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	rt := kmsg.NewDescribeQuorumResponseTopic()
	rt.Topic = metadata.ClusterMetadataTopic
	rp := kmsg.NewDescribeQuorumResponseTopicPartition()
	var st metadata.QuorumState
	if qa, ok := s.meta.(metadata.QuorumAdmin); ok {
		var err error
		if st, err = qa.DescribeQuorum(r.Ctx); err != nil {
			code, msg := quorumError(err)
			if code == kerr.RequestTimedOut {
				code = kerr.NotLeaderForPartition
			}
			rp.ErrorCode = code.Code
			rp.ErrorMessage = &msg
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			return resp, nil
		}
	} else {
		// A single node is its own quorum: one voter, always caught up.
		now := time.Now().UnixMilli()
		hw := s.meta.Image().Offset
		st = metadata.QuorumState{LeaderID: s.cfg.NodeID, LeaderEpoch: 1, HighWatermark: hw,
			Voters: []metadata.QuorumReplica{{ID: s.cfg.NodeID, LogEndOffset: hw, LastFetch: now, LastCaughtUp: now}}}
	}
	rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = st.LeaderID, st.LeaderEpoch, st.HighWatermark
	replica := func(q metadata.QuorumReplica) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.ReplicaDirectoryID, rs.LogEndOffset = q.ID, q.DirectoryID, q.LogEndOffset
		rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = q.LastFetch, q.LastCaughtUp
		return rs
	}
	rp.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	rp.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}
	for _, v := range st.Voters {
		rp.CurrentVoters = append(rp.CurrentVoters, replica(v))
		if len(v.Endpoints) == 0 {
			continue
		}
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = v.ID
		for _, e := range v.Endpoints {
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
			n.Listeners = append(n.Listeners, l)
		}
		resp.Nodes = append(resp.Nodes, n)
	}
	for _, o := range st.Observers {
		rp.Observers = append(rp.Observers, replica(o))
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp, nil
}

// quorumErrors are the Kafka codes of the quorum's errors.
var quorumErrors = []struct {
	err  error
	code *kerr.Error
}{
	{metadata.ErrDuplicateVoter, kerr.DuplicateVoter},
	{metadata.ErrVoterNotFound, kerr.VoterNotFound},
	{metadata.ErrVoterNotReady, kerr.RequestTimedOut},
	{metadata.ErrInvalidVoter, kerr.InvalidRequest},
	{metadata.ErrBrokerNotRegistered, kerr.BrokerIDNotRegistered},
	{metadata.ErrBrokerIsVoter, kerr.InvalidRequest},
}

// quorumError is err's Kafka error code and message (the message without
// weir's sentinel prefix: Kafka's own wording where Kafka has one). An
// error without a code (no controller, a deadline) is REQUEST_TIMED_OUT.
func quorumError(err error) (*kerr.Error, string) {
	for _, q := range quorumErrors {
		if errors.Is(err, q.err) {
			return q.code, strings.TrimPrefix(err.Error(), q.err.Error()+": ")
		}
	}
	return kerr.RequestTimedOut, err.Error()
}
