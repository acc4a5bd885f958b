package kafka

// FindCoordinator (key 10), versions 0-4.
//
// Key type 0 (group): the coordinator is the leader of the group's
// __consumer_offsets partition; this broker answers with that broker's
// address (COORDINATOR_NOT_AVAILABLE while the partition has no live
// leader). Asking creates __consumer_offsets on first use and this broker
// loads the partitions it leads, so the answer can be
// COORDINATOR_LOAD_IN_PROGRESS for a moment. Key type 1 (transaction)
// is the same over __transaction_state (broker/txncoord): the leader of
// the id's partition; an empty transactional id is INVALID_REQUEST.
// Other types are INVALID_REQUEST. v4 batches keys (CoordinatorKeys).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/group"
	"weir/broker/metadata"
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
		switch {
		case req.CoordinatorType == 0 && !s.authorize(r, acl.OpDescribe, acl.ResourceGroup, key):
			e = kerr.GroupAuthorizationFailed
		case req.CoordinatorType == 1 && !s.authorize(r, acl.OpDescribe, acl.ResourceTransactionalID, key):
			e = kerr.TransactionalIDAuthorizationFailed
		case req.CoordinatorType == 0:
			coord, err := s.groups()
			if err != nil {
				e = kerr.CoordinatorNotAvailable
			} else {
				var b metadata.Broker
				if b, e = s.groupCoordinator(coord, key); e == nil {
					// The coordinator's endpoint on the client's listener.
					if host, port, ok := b.Endpoint(r.Listener); ok {
						c.NodeID, c.Host, c.Port = b.NodeID, host, port
					} else {
						e = kerr.CoordinatorNotAvailable
					}
				}
			}
		case req.CoordinatorType == 1:
			coord, err := s.txns()
			if err != nil {
				e = kerr.CoordinatorNotAvailable
			} else {
				var b metadata.Broker
				if b, e = s.txnCoordinator(coord, key); e == nil {
					if host, port, ok := b.Endpoint(r.Listener); ok {
						c.NodeID, c.Host, c.Port = b.NodeID, host, port
					} else {
						e = kerr.CoordinatorNotAvailable
					}
				}
			}
		default:
			e = kerr.InvalidRequest
			c.ErrorMessage = kmsg.StringPtr("unknown coordinator type")
		}
		if e != nil {
			c.ErrorCode = e.Code
			if c.ErrorMessage == nil {
				c.ErrorMessage = kmsg.StringPtr(e.Message)
			}
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

// groupCoordinator returns the broker coordinating a group: the leader of
// its __consumer_offsets partition (created on first use).
func (s *Server) groupCoordinator(coord *group.Coordinator, key string) (metadata.Broker, *kerr.Error) {
	img := s.meta.Image()
	t, ok := img.Topic(group.OffsetsTopic)
	if !ok {
		// Creates the topic (and loads what this broker leads).
		if e := coord.CoordinatorFor(key); e != nil && e != kerr.NotCoordinator {
			return metadata.Broker{}, e
		}
		img = s.meta.Image()
		if t, ok = img.Topic(group.OffsetsTopic); !ok {
			return metadata.Broker{}, kerr.CoordinatorNotAvailable
		}
	}
	p := group.PartitionFor(key, int32(len(t.Partitions)))
	leader := t.Partitions[p].Leader
	if leader == s.cfg.NodeID {
		switch e := coord.CoordinatorFor(key); e {
		case nil:
			return s.advertised, nil
		case kerr.NotCoordinator:
			// Leading per the metadata, not loaded (yet): make sure a
			// load runs (it is idempotent).
			if _, part := s.parts.lookup(group.OffsetsTopic, p); part != nil && part.rep != nil {
				go s.followGroupLeadership(part.rep)
			}
			return metadata.Broker{}, kerr.CoordinatorLoadInProgress
		default:
			return metadata.Broker{}, e
		}
	}
	if b, ok := img.Broker(leader); ok && !b.Fenced {
		if key == "" {
			return metadata.Broker{}, kerr.InvalidGroupID
		}
		return b, nil
	}
	return metadata.Broker{}, kerr.CoordinatorNotAvailable
}
