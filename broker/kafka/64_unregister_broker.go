package kafka

// UnregisterBroker (key 64), version 0: decommissions a broker for good
// (Kafka's ReplicationControlManager.unregisterBroker, forwarded to the
// controller): it is fenced (its leaderships and ISR memberships go to
// the other replicas) and its registration removed in one metadata
// change, and it leaves the controller quorum's observers. Its id stays
// in the replica lists of its partitions until they are reassigned. A
// broker that still runs registers again with its next heartbeat, as in
// Kafka: stop it first.
//
// Kafka's rules: CLUSTER ALTER is required (CLUSTER_AUTHORIZATION_FAILED);
// an id that is not registered: BROKER_ID_NOT_REGISTERED ("Broker ID N is
// not currently registered"). weir runs brokers and controllers in one
// process: a broker that is still a controller voter is refused with
// INVALID_REQUEST (remove the voter first). A single-node broker cannot
// unregister itself: UNSUPPORTED_VERSION.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { registerAsync(kmsg.UnregisterBroker.Int16(), 0, 0, handleUnregisterBroker) }

func handleUnregisterBroker(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	var ke *kafkaError
	qa, ok := s.meta.(metadata.QuorumAdmin)
	switch {
	case !s.authorizeCluster(r, acl.OpAlter):
		ke = kafkaErr(kerr.ClusterAuthorizationFailed, "Request UnregisterBroker is not authorized.")
	case !ok:
		ke = kafkaErr(kerr.UnsupportedVersion, "a single-node weir broker is its own controller and cannot be unregistered")
	default:
		if err := qa.UnregisterBroker(r.Ctx, req.BrokerID); err != nil {
			code, msg := quorumError(err)
			ke = kafkaErr(code, "%s", msg)
		} else {
			s.logAdminChange("broker unregistered", r, zap.Int32("broker", req.BrokerID))
		}
	}
	if ke != nil {
		resp.ErrorCode, resp.ErrorMessage = ke.code, ke.msgPtr()
	}
	return resp, nil
}
