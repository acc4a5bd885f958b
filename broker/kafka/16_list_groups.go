package kafka

// ListGroups (key 16), versions 0-4.
//
// Every group this broker coordinates (including groups that only hold
// committed offsets, which are Empty), with its protocol type and, from
// v4, its state; v4 filters by state names (case-insensitive).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.ListGroups.Int16(), 0, 4, handleListGroups) }

func handleListGroups(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	coord, err := s.groups()
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.Groups = coord.List(req.StatesFilter)
	// Without DESCRIBE on the cluster, only the groups the client may
	// describe are listed (no error).
	if !s.allowed(r, acl.OpDescribe, acl.ResourceCluster, acl.ClusterName) {
		kept := resp.Groups[:0]
		for _, g := range resp.Groups {
			if s.allowed(r, acl.OpDescribe, acl.ResourceGroup, g.Group) {
				kept = append(kept, g)
			}
		}
		resp.Groups = kept
	}
	return resp, nil
}
