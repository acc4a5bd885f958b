package kafka

// Produce (key 0), versions 3-9.
//
// v3 is the first version carrying record batch v2; zstd needs v7+
// (UNSUPPORTED_COMPRESSION_TYPE below). Only the partition's leader takes
// produces (NOT_LEADER_OR_FOLLOWER elsewhere). Acks: 0 sends no response
// at all, 1 answers after the leader's append, -1 (all) refuses the batch
// with NOT_ENOUGH_REPLICAS when the ISR is smaller than
// min.insync.replicas, and otherwise answers once every ISR member has
// it (the high watermark passed it), with REQUEST_TIMED_OUT after the
// request's timeout, NOT_LEADER_OR_FOLLOWER if leadership moved, or
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum
// meanwhile. The wait does not hold up the connection: the batch is
// appended in request order on the reading goroutine, and the response
// is completed on its own goroutine (responses still go out in order).
// Other acks values get INVALID_REQUIRED_ACKS.
//
// Per partition, batches are validated without decoding records
// (validateBatches: magic 2, length, max.message.bytes -> MESSAGE_TOO_LARGE,
// codec, record count vs lastOffsetDelta, timestamps vs
// message.timestamp.{before,after}.max.ms, record framing of uncompressed
// batches), then appended with one log Append per partition, which checks
// the CRC32C (CORRUPT_MESSAGE) and stamps offsets and the leader epoch
// (and LogAppendTime when message.timestamp.type=LogAppendTime).
// Compressed batches are stored as they arrive; their codec id is
// checked, not their content. Batches with a producer id go through the
// partition's idempotence state (broker/txn): duplicates are answered
// with the original offsets and not appended. Unknown topics are not
// created here: UNKNOWN_TOPIC_OR_PARTITION.
//
// Transactions: a request with a transactional id needs WRITE on it
// (else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as
// Kafka answers); the first produce of a transaction to a partition is
// verified to be in the producer's ongoing transaction (verifyTxnProduce,
// KIP-890 part 1) before its batches are appended, later ones continue
// the transaction the partition holds, and a transactional batch that
// would begin a transaction without a current verification (an abort
// marker came in between) is INVALID_TXN_STATE, as Kafka's
// VerificationGuard (checkTxnProduce, txn.Partition.AppendVerified).
// The producer state starts the transaction
// on the partition (its first offset holds the last stable offset back
// until the marker). Transactional batches in a request without a
// transactional id are INVALID_TXN_STATE. The coordinators' own appends
// (produceTo) run with coordinator origin: no sequence checks.

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/log"
	"weir/broker/replica"
	"weir/broker/txn"
)

func init() { register(kmsg.Produce.Int16(), 3, 9, handleProduce) }

func handleProduce(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	nowMs := s.now().UnixMilli()
	var waits []ackWait
	txnAllowed := true
	if req.TransactionID != nil {
		txnAllowed = s.authorize(r, acl.OpWrite, acl.ResourceTransactionalID, *req.TransactionID)
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		ts := s.parts.load()[rt.Topic]
		writable := s.authorize(r, acl.OpWrite, acl.ResourceTopic, rt.Topic)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			var pe *produceError
			switch {
			case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
				pe = perr(kerr.InvalidRequiredAcks, "acks %d: want -1, 0 or 1", req.Acks)
			case !txnAllowed:
				pe = perr(kerr.TransactionalIDAuthorizationFailed, "not authorized to write with transactional id %q", *req.TransactionID)
			case !writable:
				pe = perr(kerr.TopicAuthorizationFailed, "not authorized to write to topic %q", rt.Topic)
			case ts == nil:
				pe = perr(kerr.UnknownTopicOrPartition, "unknown topic %q", rt.Topic)
			case rp.Partition < 0 || int(rp.Partition) >= len(ts.parts):
				pe = perr(kerr.UnknownTopicOrPartition, "topic %q has no partition %d", rt.Topic, rp.Partition)
			default:
				p := ts.parts[rp.Partition]
				var (
					end int64
					tv  *txnVerification
				)
				if tv, pe = s.checkTxnProduce(r, req, rt.Topic, p, rp); pe != nil {
					break
				}
				end, pe = s.produceAs(txn.FromClient, tv, req.Version, req.Acks, ts, p, rp.Records, nowMs, sp)
				if pe == nil && req.Acks == -1 {
					waits = append(waits, ackWait{ts: ts, p: p, sp: sp, end: end})
				}
			}
			if pe != nil {
				setProduceError(req.Version, ts, sp, pe)
			}
		}
	}
	if req.Acks == 0 {
		return nil, nil
	}
	// Already committed (a single-replica ISR moves the HW with the
	// append): answer now, without a goroutine.
	waits = slices.DeleteFunc(waits, func(a ackWait) bool { return a.committed() })
	if len(waits) == 0 {
		return resp, nil
	}
	// The response outlives the request buffer: own its strings.
	for i := range resp.Topics {
		resp.Topics[i].Topic = strings.Clone(resp.Topics[i].Topic)
	}
	return &produceWait{ProduceResponse: resp, s: s, ctx: r.Ctx, version: req.Version,
		timeout: time.Duration(req.TimeoutMillis) * time.Millisecond, waits: waits}, nil
}

func setProduceError(version int16, ts *topicState, sp *kmsg.ProduceResponseTopicPartition, pe *produceError) {
	sp.ErrorCode = pe.err.Code
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
	sp.ErrorMessage = nil
	if version >= 8 {
		sp.ErrorMessage = kmsg.StringPtr(pe.msg)
	}
	if ts != nil {
		ts.produceErrors.Inc()
	}
}

// ackWait is one partition of an acks=all produce waiting for its
// records to be committed (HW >= end).
type ackWait struct {
	ts  *topicState
	p   *partition
	sp  *kmsg.ProduceResponseTopicPartition
	end int64
}

// committed reports whether the records are committed already with the
// ISR at min.insync.replicas (what WaitCommitted would find at once).
func (a ackWait) committed() bool {
	if a.p.log.HighWatermark() < a.end {
		return false
	}
	return a.p.rep.ISRSize() >= int(a.ts.cfg.MinInsyncReplicas)
}

// produceWait is an acks=all Produce response that is complete once every
// partition's records are committed; the connection calls wait on its own
// goroutine before encoding it (see deferred in conn.go).
type produceWait struct {
	*kmsg.ProduceResponse
	s       *Server
	ctx     context.Context
	version int16
	timeout time.Duration
	waits   []ackWait
}

func (w *produceWait) wait() {
	ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
	defer cancel()
	for _, a := range w.waits {
		err := a.p.rep.WaitCommitted(ctx, a.end, int(a.ts.cfg.MinInsyncReplicas))
		if err != nil {
			setProduceError(w.version, a.ts, a.sp, &produceError{err: replicaErr(err), msg: err.Error()})
		}
	}
}

// txnVerification is what a client's checked transactional produce
// carries to its append (Kafka's VerificationGuard): guard nil when the
// partition continues the producer's ongoing transaction, else the
// guard taken before the coordinator verified the partition.
type txnVerification struct{ guard *txn.VerificationGuard }

// checkTxnProduce verifies a partition's transactional batches: the
// request must name a transactional id, and the coordinator must have the
// partition in the producer's ongoing transaction. As Kafka's
// ReplicaManager, it asks the coordinator only when the partition has no
// ongoing transaction of the producer at that epoch (the first produce of
// a transaction to the partition); the append then checks, under the
// producer-state lock, that the transaction is still ongoing or the
// verification still current (txn.Partition.AppendVerified). It returns
// nil when verification is off (transaction.partition.verification.enable
// false) or the batches are not transactional.
func (s *Server) checkTxnProduce(r *Request, req *kmsg.ProduceRequest, topic string, p *partition, rp *kmsg.ProduceRequestTopicPartition) (*txnVerification, *produceError) {
	if len(rp.Records) < log.BatchHeaderSize {
		return nil, nil // validation answers
	}
	h := log.ReadBatchHeader(rp.Records)
	if !h.IsTransactional() {
		return nil, nil
	}
	if req.TransactionID == nil {
		return nil, perr(kerr.InvalidTxnState, "transactional batch from producer %d in a request without a transactional id", h.ProducerID)
	}
	if h.ProducerID < 0 {
		return nil, perr(kerr.InvalidRecord, "transactional batch without a producer id")
	}
	if !s.txnVerificationEnabled() {
		return nil, nil
	}
	tv := &txnVerification{}
	if prod := p.producers(); prod != nil {
		if tv.guard = prod.StartVerification(h.ProducerID, h.ProducerEpoch); tv.guard == nil {
			return tv, nil // verified when the transaction began here
		}
	}
	if e := s.verifyTxnProduce(r, *req.TransactionID, h.ProducerID, h.ProducerEpoch, topic, rp.Partition); e != nil {
		return nil, perr(e, "partition %s-%d is not in the ongoing transaction of producer %d epoch %d (transactional id %q)",
			topic, rp.Partition, h.ProducerID, h.ProducerEpoch, *req.TransactionID)
	}
	return tv, nil
}

// produceTo appends one partition's batches for a coordinator (the group
// coordinator's offset commits, transactional ones included): as a
// client's produce, but without sequence checks. See produceAs.
func (s *Server) produceTo(version, acks int16, ts *topicState, p *partition, records []byte, nowMs int64, sp *kmsg.ProduceResponseTopicPartition) (int64, *produceError) {
	return s.produceAs(txn.FromCoordinator, nil, version, acks, ts, p, records, nowMs, sp)
}

// produceAs validates and appends one partition's batches and fills in the
// success fields of sp. It returns the offset after the appended (or
// duplicate) records, which acks=all waits for. tv, for a client's
// transactional produce, is its verification (checkTxnProduce).
func (s *Server) produceAs(origin txn.Origin, tv *txnVerification, version, acks int16, ts *topicState, p *partition, records []byte, nowMs int64, sp *kmsg.ProduceResponseTopicPartition) (int64, *produceError) {
	if e := p.leaderErr(-1); e != nil {
		return 0, perr(e, "this broker does not lead %s-%d", ts.name, p.index)
	}
	lim := produceLimits{
		version:         version,
		maxMessageBytes: ts.cfg.MaxMessageBytes,
		nowMs:           nowMs,
		beforeMaxMs:     ts.cfg.TimestampBeforeMaxMs,
		afterMaxMs:      ts.cfg.TimestampAfterMaxMs,
		logAppendTime:   ts.cfg.LogAppendTime,
	}
	var (
		nrecords   int64
		idempotent bool
	)
	if pe := validateBatches(records, &lim, func(v log.BatchHeader) {
		nrecords += int64(v.NumRecords)
		idempotent = idempotent || v.ProducerID >= 0
	}); pe != nil {
		return 0, pe
	}
	if acks == -1 {
		if err := p.rep.CheckMinISR(int(ts.cfg.MinInsyncReplicas)); err != nil {
			return 0, &produceError{err: replicaErr(err), msg: err.Error()}
		}
	}
	var dup bool
	info, err := p.rep.AppendAsLeader(func(epoch int32) (log.AppendInfo, error) {
		if idempotent {
			res, err := s.appendIdempotent(p, records, epoch, origin, tv)
			dup = res.Duplicate
			return res.Info, err
		}
		return p.log.Append(records, epoch)
	})
	if err != nil {
		return 0, s.appendError(ts, p, err)
	}
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = info.FirstOffset, info.LogAppendTime, p.log.StartOffset()
	if !dup {
		ts.bytesIn.Add(float64(len(records)))
		ts.recordsIn.Add(float64(nrecords))
	}
	return info.LastOffset + 1, nil
}

// appendError maps an append failure to a partition error.
func (s *Server) appendError(ts *topicState, p *partition, err error) *produceError {
	if pe := (*produceError)(nil); errors.As(err, &pe) {
		return pe
	}
	if code, ok := idempotenceCode(err); ok {
		return &produceError{err: code, msg: err.Error()}
	}
	switch {
	case errors.Is(err, log.ErrCorruptBatch):
		return perr(kerr.CorruptMessage, "%v", err)
	case errors.Is(err, log.ErrClosed), errors.Is(err, txn.ErrClosed):
		return perr(kerr.NotLeaderForPartition, "partition %s-%d is closing", ts.name, p.index)
	case errors.Is(err, replica.ErrNotLeader):
		return perr(kerr.NotLeaderForPartition, "%v", err)
	}
	s.storageError(ts.name, p.index, err)
	name := ts.name + "-" + strconv.Itoa(int(p.index))
	s.warn.Log("append/"+name, err.Error(), "append failed", zap.String("partition", name), zap.Error(err))
	return perr(kerr.KafkaStorageError, "append to %s failed: %v", name, err)
}

func (e *produceError) Error() string { return e.msg }
