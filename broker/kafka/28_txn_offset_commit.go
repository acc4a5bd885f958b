package kafka

// TxnOffsetCommit (key 28), versions 0-5: a transactional producer commits
// a consumer group's offsets inside its transaction (KIP-98, KIP-447).
//
// As Kafka's KafkaApis.handleTxnOffsetCommitRequest: WRITE on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the
// group (GROUP_AUTHORIZATION_FAILED), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for that topic's partitions), unknown topics
// and partitions UNKNOWN_TOPIC_OR_PARTITION. Then, as its group
// coordinator runtime's transactional write: the group's
// __consumer_offsets partition must be in the producer's ongoing
// transaction (verifyTxnProduce, as a transactional produce to it), the
// group checks of v3+ fence zombies of older generations (KIP-447), and
// the offsets are appended as a transactional batch of the producer (no
// sequence). They stay pending, invisible to OffsetFetch, until the
// transaction's marker reaches that partition (groupTxnMarker). v0-1 get
// COORDINATOR_NOT_AVAILABLE for COORDINATOR_LOAD_IN_PROGRESS (KAFKA-7296).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/group"
)

func init() { registerAsync(kmsg.TxnOffsetCommit.Int16(), 0, 5, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.TxnOffsetCommitRequest)
	if req.Version < 3 {
		// Not on the wire before v3 (kmsg's defaults).
		req.Generation, req.MemberID, req.InstanceID = -1, "", nil
	}
	resp, err := s.txnOffsetCommit(r, req)
	if err != nil {
		return nil, err
	}
	resp.Version = req.Version
	if req.Version < 2 {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
					p.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
			}
		}
	}
	return resp, nil
}

func (s *Server) txnOffsetCommit(r *Request, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	if !s.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, req.TransactionalID) {
		return group.TxnCommitErrors(req, kerr.TransactionalIDAuthorizationFailed.Code), nil
	}
	if !s.authorize(r, acl.OpRead, acl.ResourceGroup, req.Group) {
		return group.TxnCommitErrors(req, kerr.GroupAuthorizationFailed.Code), nil
	}
	// Topics the client may not READ, and unknown topics and partitions,
	// are answered here; the rest go to the coordinator.
	var (
		failed []kmsg.TxnOffsetCommitResponseTopic
		kept   = make([]kmsg.TxnOffsetCommitRequestTopic, 0, len(req.Topics))
	)
	tab := s.parts.load()
	fail := func(topic string, partition int32, code int16) {
		if len(failed) == 0 || failed[len(failed)-1].Topic != topic {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = topic
			failed = append(failed, rt)
		}
		rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = partition, code
		failed[len(failed)-1].Partitions = append(failed[len(failed)-1].Partitions, rp)
	}
	for _, t := range req.Topics {
		code := int16(0)
		switch ts := tab[t.Topic]; {
		case !s.authorize(r, acl.OpRead, acl.ResourceTopic, t.Topic):
			code = kerr.TopicAuthorizationFailed.Code
		case ts == nil:
			code = kerr.UnknownTopicOrPartition.Code
		}
		if code != 0 {
			for _, p := range t.Partitions {
				fail(t.Topic, p.Partition, code)
			}
			continue
		}
		ts := tab[t.Topic]
		valid := t
		valid.Partitions = nil
		for _, p := range t.Partitions {
			if p.Partition < 0 || int(p.Partition) >= len(ts.parts) {
				fail(t.Topic, p.Partition, kerr.UnknownTopicOrPartition.Code)
				continue
			}
			valid.Partitions = append(valid.Partitions, p)
		}
		if len(valid.Partitions) > 0 {
			kept = append(kept, valid)
		}
	}
	if len(kept) == 0 {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		resp.Topics = failed
		return resp, nil
	}
	cp := *req
	cp.Topics = kept
	resp, err := s.txnOffsetCommitToCoordinator(r, &cp)
	if err != nil {
		return nil, err
	}
	resp.Topics = append(resp.Topics, failed...)
	return resp, nil
}

// txnOffsetCommitToCoordinator checks that this broker coordinates the
// group and that its partition is in the producer's transaction, then
// has the coordinator append the offsets.
func (s *Server) txnOffsetCommitToCoordinator(r *Request, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	if req.Group == "" {
		return group.TxnCommitErrors(req, kerr.InvalidGroupID.Code), nil
	}
	coord, err := s.groups()
	if err != nil {
		return group.TxnCommitErrors(req, kerr.CoordinatorNotAvailable.Code), nil
	}
	if e := coord.CoordinatorFor(req.Group); e != nil {
		return group.TxnCommitErrors(req, e.Code), nil
	}
	p := group.PartitionFor(req.Group, offsetsStorage{s: s}.Partitions())
	if e := s.verifyTxnProduce(r, req.TransactionalID, req.ProducerID, req.ProducerEpoch, group.OffsetsTopic, p); e != nil {
		return group.TxnCommitErrors(req, txnVerifyError(e, req.Version).Code), nil
	}
	return coord.TxnCommit(r.Ctx, req, nil)
}

// txnVerifyError maps a verification failure as Kafka's group coordinator
// answers it (CoordinatorOperationExceptionHelper): retriable partition
// errors become coordinator errors the client retries or looks up again.
func txnVerifyError(e *kerr.Error, version int16) *kerr.Error {
	switch e {
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NetworkException:
		return kerr.CoordinatorLoadInProgress
	case kerr.TransactionAbortable:
		if version < 4 {
			return kerr.InvalidTxnState
		}
	}
	return e
}
