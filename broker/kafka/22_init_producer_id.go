package kafka

// InitProducerId (key 22), versions 0-4.
//
// Without a transactional id it hands out a new producer id with epoch 0,
// as Kafka does for idempotent producers (the producer id and epoch a v3+
// client sends to bump its epoch, KIP-360, are ignored there too: a new id
// is always allocated). Ids come from broker/txn's Allocator: reserved in
// durable blocks, so an id is never reused, also after a restart.
//
// With a transactional id: weir has no transaction coordinator yet, so
// the answer is COORDINATOR_NOT_AVAILABLE (clients retry until their
// transaction timeout and then fail). An empty transactional id is
// INVALID_REQUEST, as in Kafka. A failure to reserve ids (disk) is
// UNKNOWN_SERVER_ERROR.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
)

func init() { register(kmsg.InitProducerID.Int16(), 0, 4, handleInitProducerID) }

func handleInitProducerID(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && *req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	case req.TransactionalID != nil && !s.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case req.TransactionalID != nil:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	case !s.idempotentWriteAllowed(r):
		// IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679).
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	pids, err := s.producerIDs()
	var id int64
	if err == nil {
		id, err = pids.Next()
	}
	if err != nil {
		s.log.Error("allocating a producer id failed", zap.Error(err), zap.String("client_id", r.ClientID))
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
