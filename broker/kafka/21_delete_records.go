package kafka

// DeleteRecords (key 21), versions 0-2.
//
// Moves each partition's log start offset up to the given offset (-1: the
// high watermark), deleting whole segments below it; records below the new
// start are no longer served. Per partition:
//
//   - unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION;
//   - an offset above the high watermark, or negative other than -1:
//     OFFSET_OUT_OF_RANGE;
//   - a topic whose cleanup.policy does not contain "delete"
//     (compact-only): POLICY_VIOLATION, as Kafka;
//   - a partition whose log could not be opened: KAFKA_STORAGE_ERROR.
//
// The low watermark returned is the new log start offset. An offset at or
// below the current start changes nothing and returns the current start.
// The timeout is ignored: the change is made before the response is sent.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/log"
)

func init() { register(kmsg.DeleteRecords.Int16(), 0, 2, handleDeleteRecords) }

func handleDeleteRecords(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		deletable := s.authorize(r, acl.OpDelete, acl.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			low, code := int64(0), kerr.TopicAuthorizationFailed
			if deletable {
				low, code = s.deleteRecords(r, rt.Topic, rp.Partition, rp.Offset)
			}
			if code == nil {
				sp.LowWatermark = low
			} else {
				sp.ErrorCode = code.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) deleteRecords(r *Request, topic string, partition int32, offset int64) (int64, *kerr.Error) {
	ts, p := s.parts.lookup(topic, partition)
	switch {
	case ts == nil || p == nil:
		return 0, kerr.UnknownTopicOrPartition
	case p.leaderErr(-1) != nil:
		// Only the leader moves the log start; followers learn it from
		// their fetches.
		return 0, p.leaderErr(-1)
	case !ts.cfg.Delete:
		return 0, kerr.PolicyViolation
	case offset < -1:
		return 0, kerr.OffsetOutOfRange
	}
	low, err := p.log.DeleteRecordsBefore(offset)
	switch {
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return 0, kerr.OffsetOutOfRange
	case errors.Is(err, log.ErrClosed):
		return 0, kerr.UnknownTopicOrPartition // deleted meanwhile
	case err != nil:
		s.log.Error("delete records failed", zap.String("topic", topic), zap.Int32("partition", partition), zap.Int64("offset", offset), zap.Error(err))
		return 0, kerr.KafkaStorageError
	}
	s.logAdminChange("records deleted", r, zap.String("topic", topic), zap.Int32("partition", partition), zap.Int64("log_start_offset", low))
	return low, nil
}
