package kafka

// EndTxn (key 26), versions 0-4.
//
// Commits or aborts the producer's transaction (broker/txncoord;
// NOT_COORDINATOR when this broker does not coordinate the id): the
// answer comes once PrepareCommit/PrepareAbort is written to
// __transaction_state; the coordinator then writes the markers to every
// partition's leader, retrying until all are written, and completes the
// transaction. A retry of a completed commit (abort) answers NONE, the
// other decision INVALID_TXN_STATE; while the markers are being written
// CONCURRENT_TRANSACTIONS. An unknown transactional id or producer id is
// INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED (below v2
// INVALID_PRODUCER_EPOCH), a transaction with nothing added
// INVALID_TXN_STATE, as in Kafka. WRITE on the transactional id is
// required. v5 (KIP-890 part 2, an epoch bump per transaction) is not
// served: weir does not finalize transaction.version 2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { registerAsync(kmsg.EndTxn.Int16(), 0, 4, handleEndTxn) }

func handleEndTxn(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !s.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	coord, err := s.txns()
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	e, err := coord.EndTxn(r.Ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	if err != nil {
		return nil, err
	}
	if e != nil {
		resp.ErrorCode = fencedForOld(e, req.Version < 2).Code
	}
	return resp, nil
}
