package kafka

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A single-node broker is its own controller: DescribeQuorum answers a
// quorum of one voter (itself, caught up), in every version; a request
// for anything but __cluster_metadata-0 gets UNKNOWN_TOPIC_OR_PARTITION
// per partition, as KafkaRaftClient answers it. The replicated quorum is
// tested in broker/controller and, with Kafka's kafka-metadata-quorum, in
// broker/brokertest.
func TestDescribeQuorumSingleNode(t *testing.T) {
	b := startBroker(t)
	cl := b.client()
	ask := func(version int16, topic string, parts ...int32) *kmsg.DescribeQuorumResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Version = version
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewDescribeQuorumRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(0).Request(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DescribeQuorumResponse)
	}
	for v := int16(0); v <= 2; v++ {
		resp := ask(v, "__cluster_metadata", 0)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LeaderID != b.srv.cfg.NodeID || p.LeaderEpoch < 1 || p.HighWatermark < 1 ||
			len(p.CurrentVoters) != 1 || len(p.Observers) != 0 {
			t.Fatalf("v%d: partition %+v", v, p)
		}
		voter := p.CurrentVoters[0]
		if voter.ReplicaID != p.LeaderID || voter.LogEndOffset != p.HighWatermark {
			t.Fatalf("v%d: voter %+v (high watermark %d)", v, voter, p.HighWatermark)
		}
		if v >= 1 && (voter.LastFetchTimestamp <= 0 || voter.LastCaughtUpTimestamp <= 0) {
			t.Fatalf("v%d: voter timestamps %+v", v, voter)
		}
	}
	for _, bad := range []struct {
		topic string
		parts []int32
	}{{"__cluster_metadata", []int32{1}}, {"other", []int32{0}}, {"__cluster_metadata", []int32{0, 1}}} {
		resp := ask(2, bad.topic, bad.parts...)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(bad.parts) {
			t.Fatalf("%v: %+v", bad, resp)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("%v: partition %d error %d", bad, p.Partition, p.ErrorCode)
			}
		}
	}
}

// DescribeCluster endpoint types (KIP-919) on a broker listener: BROKER
// is served, CONTROLLER is MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST
// would be v0's), an unknown type UNSUPPORTED_ENDPOINT_TYPE. The
// controller listener's answer is tested with kafka-metadata-quorum
// --bootstrap-controller in broker/brokertest.
func TestDescribeClusterEndpointTypes(t *testing.T) {
	b := startBroker(t)
	cl := b.client()
	ask := func(version int16, typ int8) *kmsg.DescribeClusterResponse {
		t.Helper()
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType, req.IncludeFencedBrokers = version, typ, true
		resp, err := cl.Broker(0).Request(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DescribeClusterResponse)
	}
	for v := int16(0); v <= 2; v++ {
		resp := ask(v, 1)
		if resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.ClusterID == "" || resp.Brokers[0].IsFenced {
			t.Fatalf("v%d broker endpoints: %+v", v, resp)
		}
	}
	if resp := ask(1, 2); resp.ErrorCode != kerr.MismatchedEndpointType.Code || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER" {
		t.Fatalf("controller endpoints from a broker: %+v", resp)
	}
	if resp := ask(2, 3); resp.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("endpoint type 3: %+v", resp)
	}
}
