package kafka

// OffsetFetch (key 9), versions 1-9.
//
// v9 (KIP-848) names the member asking: in a consumer-protocol group it
// must be a member (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH).
//
// Committed offsets of a group: for the listed partitions (offset -1 when
// none is committed), or every committed offset when the topic list is
// null (v2+). Unknown groups have no offsets and no error. Group errors
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID) are
// top-level from v2, per partition at v1; v8 asks for several groups at
// once, each with its own error. With RequireStable (v7+, KIP-447) a
// partition with a pending transactional offset (TxnOffsetCommit whose
// transaction has no marker yet) gets UNSTABLE_OFFSET_COMMIT and offset -1,
// which the consumer retries; without it the last committed offset.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.OffsetFetch.Int16(), 1, 9, handleOffsetFetch) }

func handleOffsetFetch(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	coord, cerr := s.groups()
	var fetchAs func(id string, memberID *string, epoch int32, topics []kmsg.OffsetFetchRequestTopic) ([]kmsg.OffsetFetchResponseTopic, *kerr.Error)
	fetch := func(id string, topics []kmsg.OffsetFetchRequestTopic) ([]kmsg.OffsetFetchResponseTopic, *kerr.Error) {
		return fetchAs(id, nil, -1, topics)
	}
	fetchAs = func(id string, memberID *string, epoch int32, topics []kmsg.OffsetFetchRequestTopic) ([]kmsg.OffsetFetchResponseTopic, *kerr.Error) {
		if !s.authorize(r, acl.OpDescribe, acl.ResourceGroup, id) {
			return nil, kerr.GroupAuthorizationFailed
		}
		if cerr != nil {
			return nil, kerr.CoordinatorNotAvailable
		}
		got, e := coord.FetchOffsetsAs(id, memberID, epoch, topics, req.RequireStable)
		return s.offsetFetchAuthz(r, topics == nil, got), e
	}
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []kmsg.OffsetFetchRequestTopic
			if rg.Topics != nil {
				topics = make([]kmsg.OffsetFetchRequestTopic, len(rg.Topics))
				for i, t := range rg.Topics {
					topics[i] = kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions}
				}
			}
			memberID, epoch := rg.MemberID, rg.MemberEpoch
			if req.Version < 9 {
				memberID, epoch = nil, -1
			}
			got, e := fetchAs(rg.Group, memberID, epoch, topics)
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			if e != nil {
				g.ErrorCode = e.Code
			}
			for _, t := range got {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.Topic
				for _, p := range t.Partitions {
					gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					gt.Partitions = append(gt.Partitions, gp)
				}
				g.Topics = append(g.Topics, gt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
	topics := req.Topics
	if req.Version < 2 && topics == nil {
		topics = []kmsg.OffsetFetchRequestTopic{}
	}
	got, e := fetch(req.Group, topics)
	if e == nil {
		resp.Topics = got
		return resp, nil
	}
	if req.Version >= 2 {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	// v1 has no top-level error: report it on every partition asked for.
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.ErrorCode = p, -1, e.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// offsetFetchAuthz applies DESCRIBE on each topic: when all topics were
// asked for, those the client may not describe are left out; when they
// were named, their partitions get TOPIC_AUTHORIZATION_FAILED (Kafka's
// UNAUTHORIZED_PARTITION: offset -1).
func (s *Server) offsetFetchAuthz(r *Request, all bool, got []kmsg.OffsetFetchResponseTopic) []kmsg.OffsetFetchResponseTopic {
	if s.cfg.Authorizer == nil {
		return got
	}
	out := got[:0]
	for _, t := range got {
		if all {
			if s.allowed(r, acl.OpDescribe, acl.ResourceTopic, t.Topic) {
				out = append(out, t)
			}
			continue
		}
		if !s.authorize(r, acl.OpDescribe, acl.ResourceTopic, t.Topic) {
			for i := range t.Partitions {
				p := &t.Partitions[i]
				p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
			}
		}
		out = append(out, t)
	}
	return out
}
