package kafka

// ConsumerGroupDescribe (key 69), versions 0-1: consumer-protocol groups
// (KIP-848) with their epochs, assignor and members (subscriptions,
// current and target assignments). A classic group or an unknown one is
// GROUP_ID_NOT_FOUND, as in Kafka (the Admin client then describes it
// with DescribeGroups). Needs DESCRIBE on each group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.ConsumerGroupDescribe.Int16(), 0, 1, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	coord, cerr := s.groups()
	var ids []string
	denied := map[string]bool{}
	for _, id := range req.Groups {
		if s.authorize(r, acl.OpDescribe, acl.ResourceGroup, id) {
			ids = append(ids, id)
		} else {
			denied[id] = true
		}
	}
	var got []kmsg.ConsumerGroupDescribeResponseGroup
	if cerr == nil {
		got = coord.ConsumerDescribe(ids)
	}
	for _, id := range req.Groups {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group = id
		switch {
		case denied[id]:
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case cerr != nil:
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		default:
			g = got[0]
			got = got[1:]
		}
		if req.IncludeAuthorizedOperations && g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
			g.AuthorizedOperations = groupOperations
			if s.cfg.Authorizer != nil {
				g.AuthorizedOperations = s.authorizedOperations(r, acl.ResourceGroup, id)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
