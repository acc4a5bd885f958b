package kafka

// FindCoordinator (key 10), versions 0-4.
//
// Key type 0 (group): this broker coordinates every group while weir is
// single-node (the leader of the group's __consumer_offsets partition);
// asking creates and loads __consumer_offsets on first use, so the answer
// can be COORDINATOR_LOAD_IN_PROGRESS for a moment. Key type 1
// (transaction) gets COORDINATOR_NOT_AVAILABLE until transactions exist;
// other types INVALID_REQUEST. v4 batches keys (CoordinatorKeys).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.FindCoordinator.Int16(), 0, 4, handleFindCoordinator) }

func handleFindCoordinator(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Port = -1, -1
		var e *kerr.Error
		switch req.CoordinatorType {
		case 0:
			coord, err := s.groups()
			if err != nil {
				e = kerr.CoordinatorNotAvailable
			} else {
				e = coord.CoordinatorFor(key)
			}
		case 1:
			e = kerr.CoordinatorNotAvailable
			c.ErrorMessage = kmsg.StringPtr("transactions are not supported yet")
		default:
			e = kerr.InvalidRequest
			c.ErrorMessage = kmsg.StringPtr("unknown coordinator type")
		}
		if e != nil {
			c.ErrorCode = e.Code
			if c.ErrorMessage == nil {
				c.ErrorMessage = kmsg.StringPtr(e.Message)
			}
		} else {
			c.NodeID, c.Host, c.Port = s.advertised.NodeID, s.advertised.Host, s.advertised.Port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
		if c.ErrorCode == 0 {
			resp.ErrorMessage = nil
		}
		resp.Coordinators = nil
	}
	return resp, nil
}
