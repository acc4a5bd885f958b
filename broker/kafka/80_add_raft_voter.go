package kafka

// AddRaftVoter (key 80) and RemoveRaftVoter (key 81), version 0: KIP-853
// controller membership changes (kafka-metadata-quorum add-controller,
// remove-controller), forwarded to the Raft leader of the controller
// quorum (metadata.QuorumAdmin; broker/controller quorum.go).
//
// Kafka's rules (raft AddVoterHandler, RemoveVoterHandler):
//   - CLUSTER ALTER is required: CLUSTER_AUTHORIZATION_FAILED;
//   - a cluster id other than this cluster's: INCONSISTENT_CLUSTER_ID;
//   - adding an id that already votes: DUPLICATE_VOTER; a node that is
//     not an observer caught up with the leader (not running, another
//     directory id, lagging), or another voter change in progress:
//     REQUEST_TIMED_OUT; no endpoint on the controller listener:
//     INVALID_REQUEST (Kafka fails the request there too);
//   - removing a node (id and directory id) that is not a voter, or the
//     last voter: VOTER_NOT_FOUND, with Kafka's message;
//   - a single-node broker has a static quorum of one: UNSUPPORTED_VERSION
//     (as Kafka with kraft.version 0).
//
// The answer comes once the change is committed; nothing changes on an
// error.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() {
	registerAsync(kmsg.AddRaftVoter.Int16(), 0, 0, handleAddRaftVoter)
	registerAsync(kmsg.RemoveRaftVoter.Int16(), 0, 0, handleRemoveRaftVoter)
}

// quorumChange checks what AddRaftVoter and RemoveRaftVoter check before
// asking the quorum: it returns the quorum, or the error to answer.
func (s *Server) quorumChange(r *Request, api string, clusterID *string) (metadata.QuorumAdmin, *kafkaError) {
	if !s.authorizeCluster(r, acl.OpAlter) {
		return nil, kafkaErr(kerr.ClusterAuthorizationFailed, "Request %s is not authorized.", api)
	}
	if clusterID != nil && *clusterID != s.meta.Image().ClusterID() {
		return nil, kafkaErr(kerr.InconsistentClusterID, "The cluster id %q is not this cluster's.", *clusterID)
	}
	qa, ok := s.meta.(metadata.QuorumAdmin)
	if !ok {
		return nil, kafkaErr(kerr.UnsupportedVersion, "Cluster doesn't support changing voters because the kraft.version feature is 0 (a single-node weir broker is its own controller)")
	}
	return qa, nil
}

func handleAddRaftVoter(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	qa, kerrv := s.quorumChange(r, "AddRaftVoter", req.ClusterID)
	if kerrv == nil {
		var eps []metadata.QuorumEndpoint
		for _, l := range req.Listeners {
			eps = append(eps, metadata.QuorumEndpoint{Name: l.Name, Host: l.Host, Port: l.Port})
		}
		ctx := r.Ctx
		if err := qa.AddVoter(ctx, req.VoterID, req.VoterDirectoryID, eps); err != nil {
			code, msg := quorumError(err)
			kerrv = kafkaErr(code, "%s", msg)
		} else {
			s.logAdminChange("controller voter added", r, zap.Int32("voter", req.VoterID), zap.String("directory_id", metadata.UUID(req.VoterDirectoryID).String()))
		}
	}
	if kerrv != nil {
		resp.ErrorCode, resp.ErrorMessage = kerrv.code, kerrv.msgPtr()
	}
	return resp, nil
}

func handleRemoveRaftVoter(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	qa, kerrv := s.quorumChange(r, "RemoveRaftVoter", req.ClusterID)
	if kerrv == nil {
		if err := qa.RemoveVoter(r.Ctx, req.VoterID, req.VoterDirectoryID); err != nil {
			code, msg := quorumError(err)
			kerrv = kafkaErr(code, "%s", msg)
		} else {
			s.logAdminChange("controller voter removed", r, zap.Int32("voter", req.VoterID), zap.String("directory_id", metadata.UUID(req.VoterDirectoryID).String()))
		}
	}
	if kerrv != nil {
		resp.ErrorCode, resp.ErrorMessage = kerrv.code, kerrv.msgPtr()
	}
	return resp, nil
}
