package kafka

// OffsetDelete (key 47), version 0.
//
// Deletes committed offsets of a group. Offsets of topics a non-empty
// consumer group still subscribes to are kept (GROUP_SUBSCRIBED_TO_TOPIC
// per partition); a non-empty group of another protocol type gets
// NON_EMPTY_GROUP, an unknown group GROUP_ID_NOT_FOUND. Async: answers
// once the tombstones are written.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { registerAsync(kmsg.OffsetDelete.Int16(), 0, 0, handleOffsetDelete) }

func handleOffsetDelete(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.OffsetDeleteRequest)
	if !s.authorize(r, acl.OpDelete, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	var denied []kmsg.OffsetDeleteRequestTopic
	if s.cfg.Authorizer != nil {
		var kept []kmsg.OffsetDeleteRequestTopic
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
	resp, err := coord.DeleteOffsets(r.Ctx, req)
	if err != nil || len(denied) == 0 {
		return resp, err
	}
	if dr := resp; dr.ErrorCode == 0 {
		for _, t := range denied {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	}
	return resp, nil
}
