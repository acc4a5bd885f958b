package kafka

// WriteTxnMarkers (key 27), versions 0-1: the transaction coordinator
// (txcoord's marker sender, on this broker through WriteTxnMarkersLocal or
// from another broker over the inter-broker listener) ends a producer's
// transaction on the partitions this broker leads.
//
// The request needs CLUSTER_ACTION on the cluster (else every partition is
// CLUSTER_AUTHORIZATION_FAILED, as Kafka answers). Per partition, as
// Kafka's ReplicaManager appends markers (origin COORDINATOR, acks=all):
// UNKNOWN_TOPIC_OR_PARTITION for a partition not hosted here,
// NOT_LEADER_OR_FOLLOWER where this broker does not lead; otherwise a
// control batch (control key version 0, type 0 abort / 1 commit; value
// version 0 and the coordinator epoch) is appended through the producer
// state, which fences a marker whose producer epoch is older than the
// producer's (INVALID_PRODUCER_EPOCH) or whose coordinator epoch is older
// than the last marker's (TRANSACTION_COORDINATOR_FENCED), ends the
// producer's transaction, records an aborted one in the partition's
// aborted-transaction index, and moves the last stable offset. The
// answer comes once every marker is committed (the high watermark passed
// it; NOT_ENOUGH_REPLICAS / REQUEST_TIMED_OUT / NOT_LEADER_OR_FOLLOWER
// otherwise, and the coordinator retries). A marker landing on a
// __consumer_offsets partition is then handed to the group coordinator
// (groupTxnMarker), which makes the producer's pending offsets visible or
// drops them.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/group"
	"weir/broker/log"
	"weir/broker/txn"
)

func init() { registerAsync(kmsg.WriteTxnMarkers.Int16(), 0, 1, handleWriteTxnMarkers) }

// markerCommitTimeout bounds the wait for a marker to be committed when
// the caller's context has no deadline (Kafka: request.timeout.ms).
const markerCommitTimeout = 30 * time.Second

func handleWriteTxnMarkers(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.WriteTxnMarkersRequest)
	if !s.authorizeCluster(r, acl.OpClusterAction) {
		return writeTxnMarkersError(req, kerr.ClusterAuthorizationFailed), nil
	}
	return s.WriteTxnMarkersLocal(r.Ctx, req), nil
}

// writeTxnMarkersError answers every partition of req with e.
func writeTxnMarkersError(req *kmsg.WriteTxnMarkersRequest, e *kerr.Error) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, e.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

// markerWait is one appended marker waiting to be committed.
type markerWait struct {
	ts     *topicState
	p      *partition
	end    int64
	code   *int16
	marker *kmsg.WriteTxnMarkersRequestMarker
}

// WriteTxnMarkersLocal writes transaction markers to the partitions this
// broker leads, as the WriteTxnMarkers handler does minus authorization,
// and returns once each marker is committed or failed, per partition.
func (s *Server) WriteTxnMarkersLocal(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := writeTxnMarkersError(req, kerr.UnknownServerError)
	var waits []markerWait
	nowMs := s.now().UnixMilli()
	for i := range req.Markers {
		m := &req.Markers[i]
		rm := &resp.Markers[i]
		for j := range m.Topics {
			for k, part := range m.Topics[j].Partitions {
				code := &rm.Topics[j].Partitions[k].ErrorCode
				ts, p := s.parts.lookup(m.Topics[j].Topic, part)
				if p == nil {
					*code = kerr.UnknownTopicOrPartition.Code
					continue
				}
				end, e := s.appendMarker(ts, p, m, nowMs)
				if e != nil {
					*code = e.Code
					continue
				}
				*code = 0
				waits = append(waits, markerWait{ts: ts, p: p, end: end, code: code, marker: m})
			}
		}
	}
	if len(waits) == 0 {
		return resp
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, markerCommitTimeout)
		defer cancel()
	}
	for _, w := range waits {
		if err := w.p.rep.WaitCommitted(ctx, w.end, int(w.ts.cfg.MinInsyncReplicas)); err != nil {
			*w.code = replicaErr(err).Code
			continue
		}
		if w.ts.name == group.OffsetsTopic {
			s.groupTxnMarker(w.p.index, w.marker.ProducerID, w.marker.ProducerEpoch, w.marker.Committed)
		}
	}
	return resp
}

// appendMarker appends one marker as the partition's leader and returns
// the offset after it.
func (s *Server) appendMarker(ts *topicState, p *partition, m *kmsg.WriteTxnMarkersRequestMarker, nowMs int64) (int64, *kerr.Error) {
	if e := p.leaderErr(-1); e != nil {
		return 0, e
	}
	batch := log.BuildEndTxnMarker(m.ProducerID, m.ProducerEpoch,
		log.EndTxnMarker{Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}, nowMs)
	info, err := p.rep.AppendAsLeader(func(epoch int32) (log.AppendInfo, error) {
		res, err := s.appendIdempotent(p, batch, epoch, txn.FromCoordinator, nil)
		return res.Info, err
	})
	if err != nil {
		return 0, s.appendError(ts, p, err).err
	}
	return info.LastOffset + 1, nil
}
