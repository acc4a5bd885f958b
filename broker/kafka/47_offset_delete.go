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
)

func init() { registerAsync(kmsg.OffsetDelete.Int16(), 0, 0, handleOffsetDelete) }

func handleOffsetDelete(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.OffsetDeleteRequest)
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return coord.DeleteOffsets(r.Ctx, req)
}
