package kafka

// The seams between the parts of transactions (issue 17): the produce and
// marker paths (partition side), the transaction coordinator and the group
// coordinator call each other only through these functions. Each body is
// replaced by its owner's implementation; until then they refuse, so no
// transactional data is accepted half-supported. WriteTxnMarkersLocal
// (txlog) is in 27_write_txn_markers.go.

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// verifyTxnProduce checks that a partition is part of the ongoing
// transaction of a producer before its transactional batch is appended
// (KIP-890 part 1). nil means it is.
func (s *Server) verifyTxnProduce(r *Request, transactionalID string, producerID int64, epoch int16, topic string, partition int32) *kerr.Error {
	return kerr.InvalidTxnState
}

// groupTxnMarker tells the group coordinator that a transaction marker was
// appended to a __consumer_offsets partition this broker leads: the
// producer's pending offsets in the groups of that partition become
// committed (commit) or are dropped, as Kafka's
// GroupCoordinator.onTransactionCompleted. Without a running coordinator
// there is nothing pending: loading the partition replays the marker.
func (s *Server) groupTxnMarker(partition int32, producerID int64, producerEpoch int16, commit bool) {
	v, ok := groupSupports.Load(s)
	if !ok {
		return
	}
	gs := v.(*groupSupport)
	gs.mu.Lock()
	coord := gs.coord
	gs.mu.Unlock()
	if coord != nil {
		coord.TxnMarker(partition, producerID, commit)
	}
}
