package kafka

// SyncGroup (key 14), versions 0-5.
//
// Async: members wait until the group leader's assignment is stored in
// __consumer_offsets, then each gets its own part; in a Stable group the
// answer is immediate. v5 checks the protocol type and name
// (INCONSISTENT_GROUP_PROTOCOL) and returns them.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { registerAsync(kmsg.SyncGroup.Int16(), 0, 5, handleSyncGroup) }

func handleSyncGroup(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.SyncGroupRequest)
	if !s.authorize(r, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return coord.Sync(r.Ctx, req)
}
