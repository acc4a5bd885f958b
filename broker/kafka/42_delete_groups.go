package kafka

// DeleteGroups (key 42), versions 0-2.
//
// Deletes Empty groups and their committed offsets (tombstones in
// __consumer_offsets); a group with members gets NON_EMPTY_GROUP, an
// unknown one GROUP_ID_NOT_FOUND. Async: answers once the tombstones are
// written.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { registerAsync(kmsg.DeleteGroups.Int16(), 0, 2, handleDeleteGroups) }

func handleDeleteGroups(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	coord, err := s.groups()
	if err != nil {
		for _, id := range req.Groups {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
	var ids []string
	for _, id := range req.Groups {
		if s.authorize(r, acl.OpDelete, acl.ResourceGroup, id) {
			ids = append(ids, id)
		} else {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
		}
	}
	if len(ids) == 0 {
		return resp, nil
	}
	groups, err := coord.Delete(r.Ctx, ids)
	if err != nil {
		return nil, err
	}
	resp.Groups = append(resp.Groups, groups...)
	return resp, nil
}
