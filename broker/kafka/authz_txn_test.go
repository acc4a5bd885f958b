package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

// The transaction coordinator's requests in the authorization matrix:
// what Kafka's KafkaApis asks for each (WRITE or DESCRIBE on the
// transactional id, WRITE on the topics, READ on the group,
// CLUSTER_ACTION for the broker-to-broker form).
func txnIDACL(op acl.Operation) func(p, res string) []acl.Binding {
	return func(p, res string) []acl.Binding {
		return []acl.Binding{rule(p, op, acl.ResourceTransactionalID, res, acl.PatternLiteral)}
	}
}

func txnAuthzCases() []authzCase {
	addReq := func(version int16) func(res string) kmsg.Request {
		return func(res string) kmsg.Request {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.Version = version
			if version < 4 {
				req.TransactionalID, req.ProducerID = res, 1
				req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: res, Partitions: []int32{0}}}
			} else {
				req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: res, ProducerID: 1, VerifyOnly: true,
					Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: res, Partitions: []int32{0}}}}}
			}
			return req
		}
	}
	addCode := func(r kmsg.Response) int16 {
		resp := r.(*kmsg.AddPartitionsToTxnResponse)
		if resp.ErrorCode != 0 {
			return resp.ErrorCode
		}
		for _, t := range resp.Topics {
			return t.Partitions[0].ErrorCode
		}
		for _, t := range resp.Transactions {
			return t.Topics[0].Partitions[0].ErrorCode
		}
		return -1
	}
	return []authzCase{
		{name: "AddPartitionsToTxn/v3 transactional id", setup: withTopic,
			grant: both(txnIDACL(acl.OpWrite), topicACL(acl.OpWrite)),
			req:   addReq(3), code: addCode,
			ok: kerr.InvalidProducerIDMapping.Code, denied: kerr.TransactionalIDAuthorizationFailed.Code},
		{name: "AddPartitionsToTxn/v3 topic",
			setup: func(t *testing.T, b *aclBroker, res string) {
				withTopic(t, b, res)
				for _, p := range []string{"User:alice", "User:bob"} {
					b.grant(t, rule(p, acl.OpWrite, acl.ResourceTransactionalID, "tx-open-"+res, acl.PatternLiteral))
				}
			},
			grant: topicACL(acl.OpWrite),
			req: func(res string) kmsg.Request {
				req := addReq(3)(res).(*kmsg.AddPartitionsToTxnRequest)
				req.TransactionalID = "tx-open-" + res
				return req
			},
			code: addCode,
			ok:   kerr.InvalidProducerIDMapping.Code, denied: kerr.TopicAuthorizationFailed.Code},
		{name: "AddPartitionsToTxn/v5 verifyOnly", setup: withTopic,
			grant: clusterACL(acl.OpClusterAction),
			req:   addReq(5), code: addCode,
			ok: kerr.InvalidProducerIDMapping.Code, denied: kerr.ClusterAuthorizationFailed.Code},
		{name: "AddOffsetsToTxn",
			grant: both(txnIDACL(acl.OpWrite), groupACL(acl.OpRead)),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrAddOffsetsToTxnRequest()
				req.Version, req.TransactionalID, req.ProducerID, req.Group = 3, res, 1, res
				return req
			},
			code: errorCode,
			ok:   kerr.InvalidProducerIDMapping.Code, denied: kerr.TransactionalIDAuthorizationFailed.Code},
		{name: "EndTxn", grant: txnIDACL(acl.OpWrite),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrEndTxnRequest()
				req.Version, req.TransactionalID, req.ProducerID, req.Commit = 3, res, 1, true
				return req
			},
			code: errorCode,
			ok:   kerr.InvalidProducerIDMapping.Code, denied: kerr.TransactionalIDAuthorizationFailed.Code},
		{name: "DescribeTransactions", grant: txnIDACL(acl.OpDescribe),
			req: func(res string) kmsg.Request {
				req := kmsg.NewPtrDescribeTransactionsRequest()
				req.TransactionalIDs = []string{res}
				return req
			},
			code: func(r kmsg.Response) int16 {
				return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
			},
			ok: kerr.TransactionalIDNotFound.Code, denied: kerr.TransactionalIDAuthorizationFailed.Code},
	}
}

func TestTxnAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	b := startACLBroker(t, acl.Config{})
	bob := b.rawAs(t, "bob")
	alice := b.rawAs(t, "alice")
	// The state topic first (FindCoordinator as the administrator's
	// grant allows), so every case meets a loaded coordinator.
	b.grant(t, rule("User:alice", acl.OpDescribe, acl.ResourceTransactionalID, "boot", acl.PatternLiteral))
	findTxnCoordinator(t, alice, "boot")
	runAuthzCases(t, b, bob, alice, "x", txnAuthzCases())
}
