package kafka

// OffsetCommit (key 8), versions 2-9.
//
// v9 (KIP-848) is the same request; its generation is the member epoch of
// a consumer-protocol group's member, which must commit with v9+
// (UNSUPPORTED_VERSION below), and a stale epoch is STALE_MEMBER_EPOCH
// (see broker/group/consumer_admin.go).
//
// Validated against the group as Kafka does: generation -1 on an Empty or
// unknown group is a simple (non-group) commit; otherwise the member and
// generation must match (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// REBALANCE_IN_PROGRESS while the group awaits its assignment,
// FENCED_INSTANCE_ID for v7+ static members). Per partition: unknown
// topics or partitions get UNKNOWN_TOPIC_OR_PARTITION, metadata longer
// than offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE. The offsets
// are appended to __consumer_offsets (commits arriving together share one
// batch) and the response is sent after the append. The v2-4 retention
// time is ignored (offsets live offsets.retention.minutes after the group
// empties, as since Kafka 2.1).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { registerAsync(kmsg.OffsetCommit.Int16(), 2, 9, handleOffsetCommit) }

func handleOffsetCommit(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.OffsetCommitRequest)
	if !s.authorize(r, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Topics = offsetCommitErrors(req.Topics, kerr.GroupAuthorizationFailed.Code)
		return resp, nil
	}
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.Topics = offsetCommitErrors(req.Topics, kerr.CoordinatorNotAvailable.Code)
		return resp, nil
	}
	// Topics the client may not READ: TOPIC_AUTHORIZATION_FAILED, the
	// others committed.
	var denied []kmsg.OffsetCommitRequestTopic
	if s.cfg.Authorizer != nil {
		kept := make([]kmsg.OffsetCommitRequestTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			if s.authorize(r, acl.OpRead, acl.ResourceTopic, t.Topic) {
				kept = append(kept, t)
			} else {
				denied = append(denied, t)
			}
		}
		if len(denied) > 0 {
			cp := *req
			cp.Topics = kept
			req = &cp
		}
	}
	tab := s.parts.load()
	exists := func(topic string, p int32) bool {
		ts := tab[topic]
		return ts != nil && p >= 0 && int(p) < len(ts.parts)
	}
	resp, err := coord.Commit(r.Ctx, req, exists)
	if err != nil {
		return nil, err
	}
	if len(denied) > 0 {
		resp.Topics = append(resp.Topics, offsetCommitErrors(denied, kerr.TopicAuthorizationFailed.Code)...)
	}
	return resp, nil
}

// offsetCommitErrors answers every partition of topics with code.
func offsetCommitErrors(topics []kmsg.OffsetCommitRequestTopic, code int16) []kmsg.OffsetCommitResponseTopic {
	var out []kmsg.OffsetCommitResponseTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
