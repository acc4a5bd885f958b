package kafka

// ListGroups (key 16), versions 0-5.
//
// Every group this broker coordinates (including groups that only hold
// committed offsets, which are Empty), with its protocol type and, from
// v4, its state; v4 filters by state names (case-insensitive). v5 adds
// the group type (KIP-848): "classic" or "consumer" (a group of the
// consumer group protocol; weir has no share or streams groups), and
// TypesFilter keeps the groups
// whose type is named, case-insensitively as Kafka's GroupType.parse; a
// name Kafka does not know matches nothing.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.ListGroups.Int16(), 0, 5, handleListGroups) }

func handleListGroups(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	coord, err := s.groups()
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.Groups = coord.List(req.StatesFilter)
	if len(req.TypesFilter) > 0 {
		kept := resp.Groups[:0]
		for _, g := range resp.Groups {
			for _, t := range req.TypesFilter {
				if strings.EqualFold(t, g.GroupType) {
					kept = append(kept, g)
					break
				}
			}
		}
		resp.Groups = kept
	}
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
