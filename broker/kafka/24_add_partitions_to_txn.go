package kafka

// AddPartitionsToTxn (key 24), versions 0-5.
//
// Served by the transaction coordinator (broker/txncoord) when this broker
// coordinates the transactional id (else NOT_COORDINATOR). v0-v3 come
// from producers: one transaction, WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic
// (TOPIC_AUTHORIZATION_FAILED; internal topics cannot be added this way),
// partitions that do not exist UNKNOWN_TOPIC_OR_PARTITION; any of those
// fails the whole request, the other partitions answering
// OPERATION_NOT_ATTEMPTED, as in Kafka. v4+ is the broker-to-broker
// batched form (KIP-890 part 1): CLUSTER_ACTION on the cluster is
// required (CLUSTER_AUTHORIZATION_FAILED at the top level), several
// transactions per request, and verifyOnly transactions only check that
// the partitions are in the ongoing transaction (TRANSACTION_ABORTABLE
// when one is not) without adding them. Below v2 PRODUCER_FENCED is
// answered as INVALID_PRODUCER_EPOCH.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/txncoord"
)

func init() { registerAsync(kmsg.AddPartitionsToTxn.Int16(), 0, 5, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	txns := req.Transactions
	if req.Version < 4 {
		t := kmsg.NewAddPartitionsToTxnRequestTransaction()
		t.TransactionalID, t.ProducerID, t.ProducerEpoch = req.TransactionalID, req.ProducerID, req.ProducerEpoch
		for _, rt := range req.Topics {
			tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			tt.Topic, tt.Partitions = rt.Topic, rt.Partitions
			t.Topics = append(t.Topics, tt)
		}
		txns = []kmsg.AddPartitionsToTxnRequestTransaction{t}
	} else if !s.authorizeCluster(r, acl.OpClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for _, t := range txns {
		res, err := s.addPartitionsToTxn(r, req.Version, t)
		if err != nil {
			return nil, err
		}
		resp.Transactions = append(resp.Transactions, res)
	}
	if req.Version < 4 {
		for _, rt := range resp.Transactions[0].Topics {
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				p.Partition, p.ErrorCode = rp.Partition, rp.ErrorCode
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		resp.Transactions = nil
	}
	return resp, nil
}

// addPartitionsToTxn serves one transaction of an AddPartitionsToTxn.
func (s *Server) addPartitionsToTxn(r *Request, version int16, t kmsg.AddPartitionsToTxnRequestTransaction) (kmsg.AddPartitionsToTxnResponseTransaction, error) {
	res := kmsg.NewAddPartitionsToTxnResponseTransaction()
	res.TransactionalID = t.TransactionalID
	var tps []txncoord.TP
	for _, rt := range t.Topics {
		for _, p := range rt.Partitions {
			tps = append(tps, txncoord.TP{Topic: rt.Topic, Partition: p})
		}
	}
	answer := func(code func(txncoord.TP) int16) kmsg.AddPartitionsToTxnResponseTransaction {
		idx := map[string]int{}
		for _, tp := range tps {
			i, ok := idx[tp.Topic]
			if !ok {
				i = len(res.Topics)
				idx[tp.Topic] = i
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = tp.Topic
				res.Topics = append(res.Topics, rt)
			}
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = tp.Partition, code(tp)
			res.Topics[i].Partitions = append(res.Topics[i].Partitions, rp)
		}
		return res
	}
	all := func(e *kerr.Error) kmsg.AddPartitionsToTxnResponseTransaction {
		return answer(func(txncoord.TP) int16 { return e.Code })
	}
	if version < 4 && !s.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, t.TransactionalID) {
		return all(kerr.TransactionalIDAuthorizationFailed), nil
	}
	img := s.meta.Image()
	bad := map[txncoord.TP]*kerr.Error{}
	writable := map[string]bool{}
	for _, tp := range tps {
		ok, seen := writable[tp.Topic]
		if !seen {
			ok = version >= 4 || (!isInternalTopic(tp.Topic) && s.authorize(r, acl.OpWrite, acl.ResourceTopic, tp.Topic))
			writable[tp.Topic] = ok
		}
		if !ok {
			bad[tp] = kerr.TopicAuthorizationFailed
		} else if _, exists := img.Partition(tp.Topic, tp.Partition); !exists {
			bad[tp] = kerr.UnknownTopicOrPartition
		}
	}
	if len(bad) > 0 {
		return answer(func(tp txncoord.TP) int16 {
			if e := bad[tp]; e != nil {
				return e.Code
			}
			return kerr.OperationNotAttempted.Code
		}), nil
	}
	coord, err := s.txns()
	if err != nil {
		return all(kerr.CoordinatorNotAvailable), nil
	}
	if t.VerifyOnly {
		perPart, e := coord.Verify(t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps)
		if e != nil {
			return all(e), nil
		}
		return answer(func(tp txncoord.TP) int16 {
			if e := perPart[tp]; e != nil {
				return e.Code
			}
			return 0
		}), nil
	}
	e, err := coord.AddPartitions(r.Ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps)
	if err != nil {
		return res, err
	}
	if e == nil {
		return answer(func(txncoord.TP) int16 { return 0 }), nil
	}
	return all(fencedForOld(e, version < 2)), nil
}

// fencedForOld answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to the
// request versions that predate it (KIP-588), as Kafka does.
func fencedForOld(e *kerr.Error, old bool) *kerr.Error {
	if old && e == kerr.ProducerFenced {
		return kerr.InvalidProducerEpoch
	}
	return e
}
