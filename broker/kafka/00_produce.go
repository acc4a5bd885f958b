package kafka

// Produce (key 0), versions 3-9.
//
// v3 is the first version carrying record batch v2; zstd needs v7+
// (UNSUPPORTED_COMPRESSION_TYPE below). Acks: 0 sends no response at all,
// 1 answers after the local append, -1 answers after every in-sync
// replica has the batch: single-node that is the local append too
// (min.insync.replicas=1). Other acks values get INVALID_REQUIRED_ACKS.
//
// Per partition, batches are validated without decoding records
// (validateBatches: magic 2, length, max.message.bytes -> MESSAGE_TOO_LARGE,
// codec, record count vs lastOffsetDelta, timestamps vs
// message.timestamp.{before,after}.max.ms, record framing of uncompressed
// batches), then appended with one log Append per partition, which checks
// the CRC32C (CORRUPT_MESSAGE) and stamps offsets (and LogAppendTime when
// message.timestamp.type=LogAppendTime). Compressed batches are stored as
// they arrive; their codec id is checked, not their content. Batches with
// a producer id go through the partition's idempotence state (broker/txn):
// duplicates are answered with the original offsets and not appended.
// The high watermark moves to the new log end (no followers yet).
// Unknown topics are not created here: UNKNOWN_TOPIC_OR_PARTITION.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/log"
)

func init() { register(kmsg.Produce.Int16(), 3, 9, handleProduce) }

func handleProduce(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	nowMs := s.now().UnixMilli()
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		ts := s.parts.load()[rt.Topic]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			var pe *produceError
			switch {
			case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
				pe = perr(kerr.InvalidRequiredAcks, "acks %d: want -1, 0 or 1", req.Acks)
			case req.TransactionID != nil:
				pe = perr(kerr.TransactionalIDAuthorizationFailed, "transactions are not supported yet")
			case ts == nil:
				pe = perr(kerr.UnknownTopicOrPartition, "unknown topic %q", rt.Topic)
			case rp.Partition < 0 || int(rp.Partition) >= len(ts.parts):
				pe = perr(kerr.UnknownTopicOrPartition, "topic %q has no partition %d", rt.Topic, rp.Partition)
			default:
				pe = s.produceTo(req.Version, ts, ts.parts[rp.Partition], rp.Records, nowMs, sp)
			}
			if pe != nil {
				sp.ErrorCode = pe.err.Code
				sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
				if req.Version >= 8 {
					sp.ErrorMessage = kmsg.StringPtr(pe.msg)
				}
				if ts != nil {
					ts.produceErrors.Inc()
				}
			}
		}
	}
	if req.Acks == 0 {
		return nil, nil
	}
	return resp, nil
}

// produceTo validates and appends one partition's batches and fills in the
// success fields of sp.
func (s *Server) produceTo(version int16, ts *topicState, p *partition, records []byte, nowMs int64, sp *kmsg.ProduceResponseTopicPartition) *produceError {
	if p.log == nil {
		return perr(kerr.KafkaStorageError, "partition %s-%d has no usable log on this broker", ts.name, p.index)
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
	if pe := validateBatches(records, &lim, func(v *batchView) {
		nrecords += int64(v.numRecords)
		idempotent = idempotent || v.producerID >= 0
	}); pe != nil {
		return pe
	}
	var (
		info log.AppendInfo
		err  error
	)
	if idempotent {
		var dup bool
		info, dup, err = s.appendIdempotent(p, records)
		if dup {
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = info.FirstOffset, info.LogAppendTime, p.log.StartOffset()
			return nil
		}
	} else {
		info, err = p.log.Append(records, p.leaderEpoch.Load())
	}
	if err != nil {
		return s.appendError(ts, p, err)
	}
	p.log.SetHighWatermark(info.LastOffset + 1)
	ts.bytesIn.Add(float64(len(records)))
	ts.recordsIn.Add(float64(nrecords))
	sp.BaseOffset = info.FirstOffset
	sp.LogAppendTime = info.LogAppendTime
	sp.LogStartOffset = p.log.StartOffset()
	return nil
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
	case errors.Is(err, log.ErrClosed):
		return perr(kerr.NotLeaderForPartition, "partition %s-%d is closing", ts.name, p.index)
	}
	s.log.Error("append failed", zap.String("topic", ts.name), zap.Int32("partition", p.index), zap.Error(err))
	return perr(kerr.KafkaStorageError, "append to %s-%d failed: %v", ts.name, p.index, err)
}

func (e *produceError) Error() string { return e.msg }
