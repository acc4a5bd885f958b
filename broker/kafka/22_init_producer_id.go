package kafka

// InitProducerId (key 22), versions 0-4.
//
// Without a transactional id it hands out a new producer id with epoch 0,
// as Kafka does for idempotent producers (the producer id and epoch a v3+
// client sends to bump its epoch, KIP-360, are ignored there too: a new id
// is always allocated). Ids come from broker/txn's Allocator: reserved in
// durable blocks, so an id is never reused, also after a restart.
//
// With a transactional id it is served by the transaction coordinator
// (broker/txncoord, txn_support.go) when this broker coordinates the id
// (else NOT_COORDINATOR): a new producer id with epoch 0 for a new id, an
// epoch bump for a known one (fencing the producer that had the previous
// epoch), a new producer id when the epoch is exhausted; an ongoing
// transaction is aborted first (fencing its epoch) and the answer is
// CONCURRENT_TRANSACTIONS until that completes; v3+ producer id/epoch
// (KIP-360) are checked as Kafka checks them. WRITE on the transactional
// id is required (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). An empty
// transactional id, or only one of producer id and epoch, is
// INVALID_REQUEST; a timeout outside (0, transaction.max.timeout.ms] is
// INVALID_TRANSACTION_TIMEOUT. Below v4 PRODUCER_FENCED is answered as
// INVALID_PRODUCER_EPOCH (older clients do not know it). A failure to
// reserve ids (disk) is UNKNOWN_SERVER_ERROR.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
)

func init() { registerAsync(kmsg.InitProducerID.Int16(), 0, 4, handleInitProducerID) }

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
		return s.initTransactionalProducerID(r, req, resp)
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

// initTransactionalProducerID serves InitProducerId for a transactional
// id (the checks above done).
func (s *Server) initTransactionalProducerID(r *Request, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) (kmsg.Response, error) {
	pid, epoch := req.ProducerID, req.ProducerEpoch
	if req.Version < 3 {
		pid, epoch = -1, -1
	}
	if (pid == -1) != (epoch == -1) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	coord, err := s.txns()
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	res, err := coord.InitProducerID(r.Ctx, *req.TransactionalID, req.TransactionTimeoutMillis, pid, epoch)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		resp.ErrorCode = fencedForOld(res.Err, req.Version < 4).Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
	return resp, nil
}
