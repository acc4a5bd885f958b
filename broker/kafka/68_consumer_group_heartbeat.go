package kafka

// ConsumerGroupHeartbeat (key 68), versions 0-1: KIP-848's consumer group
// protocol (broker/group/consumer.go). A member joins (epoch 0), heartbeats
// with its epoch and owned partitions, and leaves (-1, static -2); the
// coordinator assigns with its server-side assignor (uniform, range) and
// answers with the member's epoch and assignment. v1 adds
// SubscribedTopicRegex (RE2). Needs READ on the group; a regular
// expression subscription needs nothing more (topics the member may not
// describe are still assigned, as Kafka 4.0 does without topic ACL checks
// on regex resolution).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { registerAsync(kmsg.ConsumerGroupHeartbeat.Int16(), 0, 1, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !s.authorize(r, acl.OpRead, acl.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp, err := coord.ConsumerHeartbeat(r.Ctx, req, r.ClientID, clientHost(r.Remote))
	if err != nil {
		return nil, err
	}
	resp.Version = req.Version
	return resp, nil
}
