package kafka

// DescribeTransactions (key 65), version 0.
//
// Each transactional id's state as its coordinator (this broker) holds it
// (broker/txncoord): state name, producer id and epoch, timeout, start
// time and partitions. DESCRIBE on the transactional id is required
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the partitions of topics the
// client may not describe are left out, as in Kafka. An id this broker
// does not coordinate is NOT_COORDINATOR, an unknown one
// TRANSACTIONAL_ID_NOT_FOUND.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/txncoord"
)

func init() { register(kmsg.DescribeTransactions.Int16(), 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	coord, cerr := s.txns()
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		switch {
		case !s.authorize(r, acl.OpDescribe, acl.ResourceTransactionalID, id):
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case cerr != nil:
			st.ErrorCode = kerr.CoordinatorNotAvailable.Code
		default:
			if e := coord.Describe(func(m *txncoord.Machine, _ time.Time) { st = m.Describe(id) }); e != nil {
				st.ErrorCode = kerr.NotCoordinator.Code
			}
			topics := st.Topics[:0]
			for _, t := range st.Topics {
				if s.allowed(r, acl.OpDescribe, acl.ResourceTopic, t.Topic) {
					topics = append(topics, t)
				}
			}
			st.Topics = topics
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
