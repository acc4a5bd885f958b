package kafka

// ElectLeaders (key 43), versions 0-2 (v0 is always a preferred election).
//
// Elects leaders as Kafka's controller does (metadata.BuildElectLeaders:
// ReplicationControlManager.electLeaders with PartitionChangeBuilder),
// decided and written by the controller in one change (metadata.LeaderElector;
// the single-node store answers too). The response comes once the change
// is applied on this broker. Kafka's rules:
//
//   - CLUSTER ALTER is required; without it the top-level error and every
//     listed partition's error is CLUSTER_AUTHORIZATION_FAILED;
//   - an election type other than 0 (preferred) or 1 (unclean):
//     INVALID_REQUEST;
//   - per partition: NONE (elected), ELECTION_NOT_NEEDED (preferred: the
//     preferred replica leads; unclean: the partition has a leader),
//     PREFERRED_LEADER_NOT_AVAILABLE (the preferred replica is not alive
//     or not in the ISR), ELIGIBLE_LEADERS_NOT_AVAILABLE (unclean: no
//     live replica), UNKNOWN_TOPIC_OR_PARTITION;
//   - a null topic list elects every partition, and partitions that need
//     no election are left out of the answer (every topic is listed);
//   - the metadata change not made in time_ms: REQUEST_TIMED_OUT.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { registerAsync(kmsg.ElectLeaders.Int16(), 0, 2, handleElectLeaders) }

// Kafka's default messages of the election errors (Errors.java).
var electionMessages = map[metadata.ElectionOutcome]string{
	metadata.ElectionNotNeeded:           "Leader election not needed for topic partition.",
	metadata.PreferredLeaderNotAvailable: "The preferred leader was not available.",
	metadata.EligibleLeadersNotAvailable: "Eligible topic partition leaders are not available.",
}

var electionCodes = map[metadata.ElectionOutcome]*kerr.Error{
	metadata.ElectionNotNeeded:               kerr.ElectionNotNeeded,
	metadata.PreferredLeaderNotAvailable:     kerr.PreferredLeaderNotAvailable,
	metadata.EligibleLeadersNotAvailable:     kerr.EligibleLeadersNotAvailable,
	metadata.ElectionUnknownTopicOrPartition: kerr.UnknownTopicOrPartition,
	metadata.ElectionInvalidType:             kerr.InvalidRequest,
}

func handleElectLeaders(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ElectLeadersRequest)
	typ := metadata.ElectionType(req.ElectionType)
	if r.Version == 0 {
		typ = metadata.ElectPreferred
	}
	if !s.authorizeCluster(r, acl.OpAlter) {
		return electLeadersError(req, kafkaErr(kerr.ClusterAuthorizationFailed, "Request ElectLeaders is not authorized.")), nil
	}
	if typ != metadata.ElectPreferred && typ != metadata.ElectUnclean {
		return electLeadersError(req, kafkaErr(kerr.InvalidRequest, "Unknown election type %d", req.ElectionType)), nil
	}
	el, ok := s.meta.(metadata.LeaderElector)
	if !ok {
		return electLeadersError(req, kafkaErr(kerr.UnsupportedVersion, "this broker's metadata store cannot elect leaders")), nil
	}
	e := metadata.ElectLeaders{Type: typ, All: req.Topics == nil}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			// The request aliases the read buffer.
			e.Partitions = append(e.Partitions, metadata.TopicPartition{Topic: strings.Clone(t.Topic), Partition: p})
		}
	}
	ctx, cancel := controllerCtx(r, req.TimeoutMillis)
	defer cancel()
	results, err := el.ElectLeaders(ctx, e)
	if err != nil {
		return electLeadersError(req, controllerErr("electing leaders", err)), nil
	}
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	elected := partitionResultsByTopic(results, electionCodes, electionMessages,
		func(topic string) {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = topic
			resp.Topics = append(resp.Topics, rt)
		},
		func(ti int, res metadata.ElectionResult, code int16, msg *string) {
			if e.All && res.Outcome == metadata.ElectionNotNeeded {
				return
			}
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = res.Partition, code, msg
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
		})
	if len(elected) > 0 {
		s.logAdminChange("leaders elected", r, zap.Stringer("election_type", typ), zap.Strings("partitions", elected))
	}
	return resp, nil
}

// electLeadersError answers every listed partition with e, and e as the
// top-level error (Kafka's ElectLeadersRequest.getErrorResponse).
func electLeadersError(req *kmsg.ElectLeadersRequest, e *kafkaError) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = e.code
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition = p
			rp.ErrorCode = e.code
			rp.ErrorMessage = e.msgPtr()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
