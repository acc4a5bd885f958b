package kafka

// DescribeCluster (key 60), versions 0-2.
//
// The cluster id, the controller (the Raft leader; this node when
// single-node) and the live brokers with their advertised addresses, as in
// Metadata; v2 with IncludeFencedBrokers lists fenced brokers too
// (IsFenced). Authorized operations, when asked for: 0 without DESCRIBE
// on the cluster, else the cluster operations the client may do (every
// one without an authorizer, as Kafka); when not asked, Kafka's
// "omitted" value.
//
// Endpoint types (v1+, KIP-919) as Kafka's AuthHelper.
// computeDescribeClusterResponse: a broker listener answers BROKER (1),
// the controller listener (Listener.Controller: weir's controller port
// also speaks the Kafka protocol, for --bootstrap-controller) answers
// CONTROLLER (2) with the quorum's voters at their controller endpoints
// and the Raft leader as controller, and requires ALTER on the cluster
// there, as Kafka's ControllerApis; the other type: MISMATCHED_ENDPOINT_TYPE
// (INVALID_REQUEST in v0), an unknown one UNSUPPORTED_ENDPOINT_TYPE.

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { register(kmsg.DescribeCluster.Int16(), 0, 2, handleDescribeCluster) }

const (
	endpointBroker     int8 = 1
	endpointController int8 = 2
)

var endpointNames = map[int8]string{endpointBroker: "BROKER", endpointController: "CONTROLLER"}

// controllerListener reports whether name is the controller listener.
func (s *Server) controllerListener(name string) bool {
	for _, l := range s.cfg.Listeners {
		if l.Name == name {
			return l.Controller
		}
	}
	return false
}

func handleDescribeCluster(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	want := req.EndpointType
	if r.Version == 0 {
		want = endpointBroker
	}
	served := endpointBroker
	if s.controllerListener(r.Listener) {
		served = endpointController
	}
	fail := func(code, v0 *kerr.Error, msg string) (kmsg.Response, error) {
		if r.Version == 0 {
			code = v0
		}
		resp.ErrorCode, resp.ErrorMessage = code.Code, &msg
		return resp, nil
	}
	switch {
	case endpointNames[want] == "":
		return fail(kerr.UnsupportedEndpointType, kerr.InvalidRequest, fmt.Sprintf("Unsupported endpoint type %d", want))
	case want != served:
		return fail(kerr.MismatchedEndpointType, kerr.InvalidRequest,
			fmt.Sprintf("The request was sent to an endpoint of type %s, but we wanted an endpoint of type %s", endpointNames[served], endpointNames[want]))
	case served == endpointController && !s.authorizeCluster(r, acl.OpAlter):
		return fail(kerr.ClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed, "Request DescribeCluster is not authorized.")
	}
	resp.EndpointType = served
	img := s.meta.Image()
	resp.ClusterID = img.ClusterID()
	if served == endpointController {
		qa, ok := s.meta.(metadata.QuorumAdmin)
		if !ok {
			return fail(kerr.UnsupportedVersion, kerr.UnsupportedVersion, "a single-node weir broker has no controller listener")
		}
		st, err := qa.DescribeQuorum(r.Ctx)
		if err != nil {
			return fail(kerr.RequestTimedOut, kerr.RequestTimedOut, fmt.Sprintf("describing the controller quorum: %v", err))
		}
		resp.ControllerID = -1
		for _, v := range st.Voters {
			for _, e := range v.Endpoints {
				if e.Name != r.Listener {
					continue
				}
				rb := kmsg.NewDescribeClusterResponseBroker()
				rb.NodeID, rb.Host, rb.Port = v.ID, e.Host, int32(e.Port)
				resp.Brokers = append(resp.Brokers, rb)
				if v.ID == st.LeaderID {
					resp.ControllerID = v.ID
				}
			}
		}
	} else {
		resp.ControllerID = s.controllerID()
		// Live brokers, as Metadata lists them; fenced ones too when v2
		// asks for them.
		for _, b := range img.Brokers() {
			if b.Fenced && !req.IncludeFencedBrokers {
				continue
			}
			host, port, ok := b.Endpoint(r.Listener)
			if !ok {
				continue
			}
			rb := kmsg.NewDescribeClusterResponseBroker()
			rb.NodeID, rb.Host, rb.Port, rb.Rack, rb.IsFenced = b.NodeID, host, port, b.Rack, b.Fenced
			resp.Brokers = append(resp.Brokers, rb)
		}
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
