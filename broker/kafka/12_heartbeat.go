package kafka

// Heartbeat (key 12), versions 0-4.
//
// Keeps a member's session alive. REBALANCE_IN_PROGRESS tells a member of
// a rebalancing group to rejoin; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and
// FENCED_INSTANCE_ID (v3+, static members) that it is out of the group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.Heartbeat.Int16(), 0, 4, handleHeartbeat) }

func handleHeartbeat(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.HeartbeatRequest)
	if !s.authorize(r, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	return coord.Heartbeat(req), nil
}
