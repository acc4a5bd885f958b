package kafka

// JoinGroup (key 11), versions 0-7.
//
// Served by the group coordinator (broker/group). Async: the response is
// sent when the group's rebalance completes (all members rejoined, the
// rebalance timeout, or the initial rebalance delay of a new group).
// From v4 a join without a member id gets MEMBER_ID_REQUIRED with the id
// to rejoin with (KIP-394); v5 adds static membership (group.instance.id),
// v7 the protocol type and name in the response. v0 has no rebalance
// timeout: the session timeout stands in for it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { registerAsync(kmsg.JoinGroup.Int16(), 0, 7, handleJoinGroup) }

func handleJoinGroup(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.JoinGroupRequest)
	if !s.authorize(r, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = kerr.GroupAuthorizationFailed.Code, -1
		return resp, nil
	}
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.MemberID, resp.Generation = kerr.CoordinatorNotAvailable.Code, req.MemberID, -1
		return resp, nil
	}
	return coord.Join(r.Ctx, req, r.ClientID, clientHost(r.Remote))
}
