package kafka

// CreatePartitions (key 37), versions 0-3.
//
// Raises a topic's partition count to count; the new partitions' logs are
// open when the response is sent. Per topic:
//
//   - named twice in one request: INVALID_REQUEST;
//   - unknown: UNKNOWN_TOPIC_OR_PARTITION;
//   - count not above the current count: INVALID_PARTITIONS;
//   - an explicit assignment must list count minus current partitions, each
//     with the topic's replication factor of distinct registered brokers,
//     at least one live (INVALID_REPLICA_ASSIGNMENT otherwise); the new
//     partitions are placed as asked, as for CreateTopics; without one
//     they go round robin over the live brokers;
//   - validate_only: every check, no change.
//
// Key-hashed producers send a key to a different partition once the count
// changes, as with Kafka. The timeout is ignored.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { register(kmsg.CreatePartitions.Int16(), 0, 3, handleCreatePartitions) }

func handleCreatePartitions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var e *kafkaError
		if count[rt.Topic] > 1 {
			e = kafkaErr(kerr.InvalidRequest, "topic %q appears more than once in the request", rt.Topic)
		} else if !s.authorize(r, acl.OpAlter, acl.ResourceTopic, rt.Topic) {
			e = kafkaErr(kerr.TopicAuthorizationFailed, "The topic authorization is failed.")
		} else {
			e = s.createPartitions(r, rt, req.ValidateOnly)
		}
		st.ErrorCode, st.ErrorMessage = e.codeOrZero(), e.msgPtr()
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) createPartitions(r *Request, rt *kmsg.CreatePartitionsRequestTopic, validateOnly bool) *kafkaError {
	img := s.meta.Image()
	t, ok := img.Topic(rt.Topic)
	if !ok {
		return kafkaErr(kerr.UnknownTopicOrPartition, "topic %q does not exist", rt.Topic)
	}
	have := int32(len(t.Partitions))
	switch {
	case rt.Count == have:
		return kafkaErr(kerr.InvalidPartitions, "topic %q already has %d partitions", rt.Topic, have)
	case rt.Count < have:
		return kafkaErr(kerr.InvalidPartitions, "topic %q currently has %d partitions, which is higher than the requested %d", rt.Topic, have, rt.Count)
	}
	var assignment [][]int32
	if rt.Assignment != nil {
		assignment = make([][]int32, len(rt.Assignment))
		for j, a := range rt.Assignment {
			assignment[j] = slices.Clone(a.Replicas) // the request aliases the read buffer
		}
	}
	// Every check the metadata layer makes, here too for validate_only.
	if _, err := metadata.BuildCreatePartitions(img, rt.Topic, rt.Count, assignment); err != nil {
		return metadataError(err)
	}
	if validateOnly {
		return nil
	}
	if _, err := s.meta.CreatePartitions(r.Ctx, strings.Clone(rt.Topic), rt.Count, assignment); err != nil {
		return metadataError(err)
	}
	s.logAdminChange("partitions created", r, zap.String("topic", rt.Topic), zap.Int32("from", have), zap.Int32("to", rt.Count))
	return nil
}
