package kafka

// OffsetCommit (key 8), versions 2-8.
//
// Validated against the group as Kafka does: generation -1 on an Empty or
// unknown group is a simple (non-group) commit; otherwise the member and
// generation must match (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// REBALANCE_IN_PROGRESS while the group awaits its assignment,
// FENCED_INSTANCE_ID for v7+ static members). Per partition: unknown
// topics or partitions get UNKNOWN_TOPIC_OR_PARTITION, metadata longer
// than offset.metadata.max.bytes OFFSET_METADATA_TOO_LARGE. The offsets
// are appended to __consumer_offsets (commits arriving together share one
// batch) and the response is sent after the append. The v2-4 retention
// time is ignored (offsets live offsets.retention.minutes after the group
// empties, as since Kafka 2.1).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAsync(kmsg.OffsetCommit.Int16(), 2, 8, handleOffsetCommit) }

func handleOffsetCommit(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.OffsetCommitRequest)
	coord, err := s.groups()
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.CoordinatorNotAvailable.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	tab := s.parts.load()
	exists := func(topic string, p int32) bool {
		ts := tab[topic]
		return ts != nil && p >= 0 && int(p) < len(ts.parts)
	}
	resp, err := coord.Commit(r.Ctx, req, exists)
	if err != nil {
		return nil, err
	}
	return resp, nil
}
