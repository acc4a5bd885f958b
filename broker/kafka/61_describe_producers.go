package kafka

// DescribeProducers (key 61), version 0: the active producers of
// partitions this broker leads, as Kafka's KafkaApis answers it
// (kafka-transactions describe-producers and find-hanging use it).
//
// Per topic: an invalid name is INVALID_TOPIC_EXCEPTION, a topic the
// client may not READ is TOPIC_AUTHORIZATION_FAILED, an unknown one
// UNKNOWN_TOPIC_OR_PARTITION, for every partition asked. Per partition:
// UNKNOWN_TOPIC_OR_PARTITION if the topic has no such partition,
// NOT_LEADER_OR_FOLLOWER unless this broker leads it; otherwise each
// producer in the partition's producer state (broker/txn) with its epoch,
// last sequence (-1 without one), last timestamp, the coordinator epoch of
// its last marker (-1 before any) and the first offset of its ongoing
// transaction (-1 when none).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { register(kmsg.DescribeProducers.Int16(), 0, 0, handleDescribeProducers) }

func handleDescribeProducers(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	tab := s.parts.load()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		ts := tab[rt.Topic]
		var topicErr *kerr.Error
		switch {
		case metadata.ValidateTopicName(rt.Topic) != nil:
			topicErr = kerr.InvalidTopicException
		case !s.authorize(r, acl.OpRead, acl.ResourceTopic, rt.Topic):
			topicErr = kerr.TopicAuthorizationFailed
		case ts == nil:
			topicErr = kerr.UnknownTopicOrPartition
		}
		for _, idx := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = idx
			switch {
			case topicErr != nil:
				sp.ErrorCode = topicErr.Code
			case idx < 0 || int(idx) >= len(ts.parts):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				s.describeProducers(ts.parts[idx], &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) describeProducers(p *partition, sp *kmsg.DescribeProducersResponseTopicPartition) {
	if e := p.leaderErr(-1); e != nil {
		sp.ErrorCode = e.Code
		return
	}
	prod := p.producers()
	if prod == nil {
		sp.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	for _, pr := range prod.Producers() {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = pr.ID
		ap.ProducerEpoch = int32(pr.Epoch)
		ap.LastSequence = -1
		if n := len(pr.Batches); n > 0 {
			ap.LastSequence = pr.Batches[n-1].LastSeq
		}
		ap.LastTimestamp = pr.LastTimestamp
		if ap.LastTimestamp < 0 && len(pr.Batches) > 0 { // state from a v1 snapshot
			ap.LastTimestamp = pr.Batches[len(pr.Batches)-1].Timestamp
		}
		ap.CoordinatorEpoch = pr.CoordinatorEpoch
		ap.CurrentTxnStartOffset = pr.TxnFirstOffset
		sp.ActiveProducers = append(sp.ActiveProducers, ap)
	}
}
