package kafka

// DescribeCluster (key 60), version 0.
//
// The cluster id, the controller (the Raft leader; this node when
// single-node) and the live brokers with their advertised addresses, as in
// Metadata.
// Authorized operations, when asked for: 0 without DESCRIBE on the
// cluster, else the cluster operations the client may do (every one
// without an authorizer, as Kafka); when not asked, Kafka's "omitted"
// value.
// v1 (endpoint types, for KRaft controllers) is not served.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.DescribeCluster.Int16(), 0, 0, handleDescribeCluster) }

func handleDescribeCluster(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	img := s.meta.Image()
	resp.ClusterID = img.ClusterID()
	resp.ControllerID = s.controllerID()
	// Live brokers only, as Metadata lists them (fenced ones are out).
	for _, b := range img.LiveBrokers() {
		host, port, ok := b.Endpoint(r.Listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = b.NodeID, host, port, b.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	resp.ClusterAuthorizedOperations = math.MinInt32
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0
		if s.authorizeCluster(r, acl.OpDescribe) {
			resp.ClusterAuthorizedOperations = s.authorizedOperations(r, acl.ResourceCluster, acl.ClusterName)
		}
	}
	return resp, nil
}
