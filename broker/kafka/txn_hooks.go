package kafka

// The seams between the parts of transactions (issue 17): the produce and
// marker paths (partition side), the transaction coordinator and the group
// coordinator call each other only through these functions. Each body is
// replaced by its owner's implementation; until then they refuse, so no
// transactional data is accepted half-supported. WriteTxnMarkersLocal
// (txlog) is in 27_write_txn_markers.go.

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/txncoord"
)

// verifyTxnProduce checks that a partition is part of the ongoing
// transaction of a producer before its transactional batch is appended
// (KIP-890 part 1). nil means it is.
//
// Owner: txcoord. The coordinator of transactionalID (the leader of its
// __transaction_state partition) answers: this broker's coordinator
// directly, another broker through AddPartitionsToTxn v4+ verifyOnly over
// the inter-broker listener. The answer is translated as Kafka's
// AddPartitionsToTxnManager and ReplicaManager translate it for the
// Produce response: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH;
// TRANSACTION_ABORTABLE (not in the transaction) stays for Produce v11+
// and is INVALID_TXN_STATE below; the retriable coordinator errors
// (CONCURRENT_TRANSACTIONS, COORDINATOR_*, NOT_COORDINATOR, a network
// failure) become NOT_ENOUGH_REPLICAS so every client retries the
// produce; CLUSTER_AUTHORIZATION_FAILED from the coordinator broker is
// INVALID_TXN_STATE. Kafka verifies only when the partition has no
// ongoing transaction of that producer yet; Produce does the same
// (checkTxnProduce).
// With transaction.partition.verification.enable=false (a static broker
// config, as Kafka reads it) a Produce is not verified.
func (s *Server) verifyTxnProduce(r *Request, transactionalID string, producerID int64, epoch int16, topic string, partition int32) *kerr.Error {
	if r.Key == kmsg.Produce.Int16() && !s.txnVerificationEnabled() {
		return nil
	}
	e := s.verifyTxnPartition(r.Ctx, transactionalID, producerID, epoch, topic, partition)
	switch e {
	case nil:
		return nil
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.TransactionAbortable:
		// Clients that know it: Produce v11+; TxnOffsetCommit maps it
		// itself by version (v4+ keeps it, as Kafka's
		// CoordinatorPartitionWriter).
		if r.Version > 10 || r.Key == kmsg.TxnOffsetCommit.Int16() {
			return e
		}
		return kerr.InvalidTxnState
	case kerr.ConcurrentTransactions, kerr.NetworkException, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
		return kerr.NotEnoughReplicas
	case kerr.ClusterAuthorizationFailed:
		return kerr.InvalidTxnState
	}
	return e
}

// txnVerificationEnabled is transaction.partition.verification.enable.
func (s *Server) txnVerificationEnabled() bool {
	v, _, ok := s.cfg.BrokerConfig.Value("transaction.partition.verification.enable")
	return !ok || !strings.EqualFold(v, "false")
}

// verifyTxnPartition asks the coordinator of transactionalID whether the
// partition is in the producer's ongoing transaction; the coordinator's
// error (nil: it is).
func (s *Server) verifyTxnPartition(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32) *kerr.Error {
	if transactionalID == "" {
		return kerr.InvalidRequest
	}
	tp := txncoord.TP{Topic: topic, Partition: partition}
	img := s.meta.Image()
	st, ok := img.Topic(txncoord.StateTopic)
	if !ok {
		// No transaction was ever begun in this cluster.
		return kerr.InvalidProducerIDMapping
	}
	leader := st.Partitions[txncoord.PartitionFor(transactionalID, int32(len(st.Partitions)))].Leader
	switch {
	case leader < 0:
		return kerr.CoordinatorNotAvailable
	case leader == s.cfg.NodeID:
		coord, err := s.txns()
		if err != nil {
			return kerr.CoordinatorNotAvailable
		}
		res, e := coord.Verify(transactionalID, producerID, epoch, []txncoord.TP{tp})
		if e != nil {
			return e
		}
		return res[tp]
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = transactionalID, producerID, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, []int32{partition}
	t.Topics = append(t.Topics, tt)
	req.Transactions = append(req.Transactions, t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	kr, err := s.interBrokerRequest(ctx, leader, req)
	if err != nil {
		return kerr.NetworkException
	}
	resp := kr.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return kerr.TypedErrorForCode(resp.ErrorCode)
	}
	for _, rt := range resp.Transactions {
		for _, rtt := range rt.Topics {
			for _, rp := range rtt.Partitions {
				if rt.TransactionalID == transactionalID && rtt.Topic == topic && rp.Partition == partition {
					return kerr.TypedErrorForCode(rp.ErrorCode)
				}
			}
		}
	}
	return kerr.UnknownServerError
}

// groupTxnMarker tells the group coordinator that a transaction marker was
// appended to a __consumer_offsets partition this broker leads: the
// producer's pending offsets in the groups of that partition become
// committed (commit) or are dropped, as Kafka's
// GroupCoordinator.onTransactionCompleted. Without a running coordinator
// there is nothing pending: loading the partition replays the marker.
func (s *Server) groupTxnMarker(partition int32, producerID int64, producerEpoch int16, commit bool) {
	if coord, ok := s.groupCoord.running(); ok {
		coord.TxnMarker(partition, producerID, commit)
	}
}
