package kafka

// DescribeCluster (key 60), version 0.
//
// The cluster id, the controller (the Raft leader; this node when
// single-node) and the live brokers with their advertised addresses, as in
// Metadata.
// Authorized operations: weir has no authorizer, so when asked for it
// reports every operation Kafka defines on the cluster resource, as Kafka
// does without an authorizer; when not asked, Kafka's "omitted" value.
// v1 (endpoint types, for KRaft controllers) is not served.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.DescribeCluster.Int16(), 0, 0, handleDescribeCluster) }

// clusterOperations is the bit set of the ACL operations Kafka defines on
// the CLUSTER resource, by operation code: CREATE(5), ALTER(7),
// DESCRIBE(8), CLUSTER_ACTION(9), DESCRIBE_CONFIGS(10), ALTER_CONFIGS(11),
// IDEMPOTENT_WRITE(12).
const clusterOperations int32 = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12

func handleDescribeCluster(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	img := s.meta.Image()
	resp.ClusterID = img.ClusterID()
	resp.ControllerID = s.controllerID()
	// Live brokers only, as Metadata lists them (fenced ones are out).
	for _, b := range img.LiveBrokers() {
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = b.NodeID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterOperations
	}
	return resp, nil
}
