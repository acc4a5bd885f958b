package kafka

// LeaveGroup (key 13), versions 0-4.
//
// v0-2 remove one member by member id (the error is top-level); v3+ remove
// a batch of members, each by member id and/or group instance id, with an
// error per member (FENCED_INSTANCE_ID when both are given and disagree).
// The group rebalances without them.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.LeaveGroup.Int16(), 0, 4, handleLeaveGroup) }

func handleLeaveGroup(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.LeaveGroupRequest)
	if !s.authorize(r, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return coord.Leave(req), nil
}
