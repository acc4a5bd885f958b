package kafka

// DescribeGroups (key 15), versions 0-5.
//
// State, protocol type, protocol and members of each group. Unknown
// groups are reported in state "Dead" without an error, as Kafka does
// below v6. Member metadata and assignments are given only for Stable
// groups. Authorized operations (v3+) are all group operations: weir has
// no ACLs yet.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.DescribeGroups.Int16(), 0, 5, handleDescribeGroups) }

// groupOperations is the AclOperation bitfield of READ, DELETE, DESCRIBE.
const groupOperations = 1<<3 | 1<<6 | 1<<8

func handleDescribeGroups(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	coord, err := s.groups()
	if err != nil {
		for _, id := range req.Groups {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
	var ids []string
	denied := map[string]bool{}
	for _, id := range req.Groups {
		if s.authorize(r, acl.OpDescribe, acl.ResourceGroup, id) {
			ids = append(ids, id)
		} else {
			denied[id] = true
		}
	}
	got := coord.Describe(ids)
	for _, id := range req.Groups {
		if denied[id] {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
		} else if len(got) > 0 {
			resp.Groups = append(resp.Groups, got[0])
			got = got[1:]
		}
	}
	if req.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			if g := &resp.Groups[i]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
				g.AuthorizedOperations = groupOperations
				if s.cfg.Authorizer != nil {
					g.AuthorizedOperations = s.authorizedOperations(r, acl.ResourceGroup, g.Group)
				}
			}
		}
	}
	return resp, nil
}
