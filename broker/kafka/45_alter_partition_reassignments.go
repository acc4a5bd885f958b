package kafka

// AlterPartitionReassignments (key 45), version 0, and
// ListPartitionReassignments (key 46), version 0.
//
// Reassignments are decided and written by the controller in one change
// (metadata.BuildReassignments through metadata.Reassigner; the
// single-node store answers too), as Kafka's
// ReplicationControlManager.alterPartitionReassignments: per partition
// NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty
// target, a broker twice, an unregistered broker, a cancel needing an
// unclean election the topic does not allow) or
// NO_REASSIGNMENT_IN_PROGRESS (cancel, null replicas, with none); the
// refused partitions change nothing and the others still apply. CLUSTER
// ALTER is required (CLUSTER DESCRIBE to list); without it the top-level
// and every partition's error is CLUSTER_AUTHORIZATION_FAILED. The
// response comes once the change is applied on this broker. Listing
// answers from this broker's image: every partition being reassigned, or
// those of the listed topics and partitions (unknown ones left out).

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() {
	registerAsync(kmsg.AlterPartitionAssignments.Int16(), 0, 0, handleAlterPartitionReassignments)
	register(kmsg.ListPartitionReassignments.Int16(), 0, 0, handleListPartitionReassignments)
}

var reassignCodes = map[metadata.ReassignOutcome]*kerr.Error{
	metadata.ReassignUnknownTopicOrPartition: kerr.UnknownTopicOrPartition,
	metadata.ReassignInvalidAssignment:       kerr.InvalidReplicaAssignment,
	metadata.ReassignNoneInProgress:          kerr.NoReassignmentInProgress,
}

func handleAlterPartitionReassignments(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.AlterPartitionAssignmentsRequest)
	if !s.authorizeCluster(r, acl.OpAlter) {
		return alterReassignmentsError(req, kafkaErr(kerr.ClusterAuthorizationFailed, "Request AlterPartitionReassignments is not authorized.")), nil
	}
	ra, ok := s.meta.(metadata.Reassigner)
	if !ok {
		return alterReassignmentsError(req, kafkaErr(kerr.UnsupportedVersion, "this broker's metadata store cannot reassign partitions")), nil
	}
	var reqs []metadata.Reassignment
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			// The request aliases the read buffer.
			rq := metadata.Reassignment{TopicPartition: metadata.TopicPartition{Topic: strings.Clone(t.Topic), Partition: p.Partition}}
			if p.Replicas == nil {
				rq.Cancel = true
			} else {
				rq.Replicas = append([]int32{}, p.Replicas...)
			}
			reqs = append(reqs, rq)
		}
	}
	ctx, cancel := controllerCtx(r, req.TimeoutMillis)
	defer cancel()
	results, err := ra.AlterPartitionReassignments(ctx, reqs)
	if err != nil {
		return alterReassignmentsError(req, controllerErr("reassigning partitions", err)), nil
	}
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	changed := partitionResultsByTopic(results, reassignCodes, nil,
		func(topic string) {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = topic
			resp.Topics = append(resp.Topics, rt)
		},
		func(ti int, res metadata.ReassignResult, code int16, msg *string) {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = res.Partition, code, msg
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
		})
	if len(changed) > 0 {
		s.logAdminChange("partition reassignments altered", r, zap.Strings("partitions", changed))
	}
	return resp, nil
}

// alterReassignmentsError answers every listed partition with e, and e as
// the top-level error (Kafka's AlterPartitionReassignmentsRequest
// getErrorResponse).
func alterReassignmentsError(req *kmsg.AlterPartitionAssignmentsRequest, e *kafkaError) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.ErrorCode = e.code
	resp.ErrorMessage = e.msgPtr()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = e.code
			rp.ErrorMessage = e.msgPtr()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func handleListPartitionReassignments(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.authorizeCluster(r, acl.OpDescribe) {
		e := kafkaErr(kerr.ClusterAuthorizationFailed, "Request ListPartitionReassignments is not authorized.")
		resp.ErrorCode, resp.ErrorMessage = e.code, e.msgPtr()
		return resp, nil
	}
	im := s.meta.Image()
	add := func(t *metadata.Topic, parts []int32) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = t.Name
		for _, i := range parts {
			if i < 0 || int(i) >= len(t.Partitions) || !t.Partitions[i].Reassigning() {
				continue
			}
			p := t.Partitions[i]
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = i
			rp.Replicas = append([]int32{}, p.Replicas...)
			rp.AddingReplicas = append([]int32{}, p.AddingReplicas...)
			rp.RemovingReplicas = append([]int32{}, p.RemovingReplicas...)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if req.Topics == nil {
		for _, t := range im.Topics() {
			all := make([]int32, len(t.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			add(t, all)
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		if t, ok := im.Topic(rt.Topic); ok {
			add(t, rt.Partitions)
		}
	}
	return resp, nil
}
