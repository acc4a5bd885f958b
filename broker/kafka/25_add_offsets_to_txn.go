package kafka

// AddOffsetsToTxn (key 25), versions 0-4.
//
// Adds the group's __consumer_offsets partition (group.PartitionFor) to
// the producer's transaction, so the coordinator's markers reach the
// offsets a TxnOffsetCommit writes there (served by the transaction
// coordinator, broker/txncoord; NOT_COORDINATOR when this broker does not
// coordinate the id). WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the group
// (GROUP_AUTHORIZATION_FAILED) are required, as in Kafka. The offsets
// topic is created if it does not exist yet. Below v2 PRODUCER_FENCED is
// answered as INVALID_PRODUCER_EPOCH.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/group"
	"weir/broker/txncoord"
)

func init() { registerAsync(kmsg.AddOffsetsToTxn.Int16(), 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	fail := func(e *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = fencedForOld(e, req.Version < 2).Code
		return resp, nil
	}
	switch {
	case !s.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID):
		return fail(kerr.TransactionalIDAuthorizationFailed)
	case !s.authorize(r, acl.OpRead, acl.ResourceGroup, req.Group):
		return fail(kerr.GroupAuthorizationFailed)
	}
	n, e := s.offsetsPartitions(req.Group)
	if e != nil {
		return fail(e)
	}
	coord, err := s.txns()
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable)
	}
	tp := txncoord.TP{Topic: group.OffsetsTopic, Partition: group.PartitionFor(req.Group, n)}
	e, err = coord.AddPartitions(r.Ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txncoord.TP{tp})
	if err != nil {
		return nil, err
	}
	if e != nil {
		return fail(e)
	}
	return resp, nil
}

// offsetsPartitions is the partition count of __consumer_offsets,
// creating the topic (through the group coordinator) if needed.
func (s *Server) offsetsPartitions(groupID string) (int32, *kerr.Error) {
	if t, ok := s.meta.Image().Topic(group.OffsetsTopic); ok {
		return int32(len(t.Partitions)), nil
	}
	gc, err := s.groups()
	if err != nil {
		return 0, kerr.CoordinatorNotAvailable
	}
	if e := gc.CoordinatorFor(groupID); e == kerr.CoordinatorNotAvailable {
		return 0, e
	}
	if t, ok := s.meta.Image().Topic(group.OffsetsTopic); ok {
		return int32(len(t.Partitions)), nil
	}
	return 0, kerr.CoordinatorNotAvailable
}
