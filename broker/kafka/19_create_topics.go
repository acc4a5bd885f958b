package kafka

// CreateTopics (key 19), versions 0-7.
//
// Each topic is checked and created on its own (one failing topic does not
// fail the others):
//
//   - a name given twice in one request: INVALID_REQUEST for each;
//   - an illegal name (or one colliding with an existing name up to '.'/'_'):
//     INVALID_TOPIC_EXCEPTION; an existing one: TOPIC_ALREADY_EXISTS;
//   - num_partitions -1 and replication_factor -1 take num.partitions and
//     default.replication.factor (v4+); 0 or below -1: INVALID_PARTITIONS /
//     INVALID_REPLICATION_FACTOR; a factor above the number of brokers:
//     INVALID_REPLICATION_FACTOR;
//   - an explicit replica assignment excludes num_partitions and
//     replication_factor (INVALID_REQUEST otherwise); partitions numbered
//     0..n-1, each with the same number of distinct registered brokers and
//     at least one live one, else INVALID_REPLICA_ASSIGNMENT. The first
//     replica is the preferred leader; the partition starts led by its
//     first live replica. Without one, replicas go round robin over the
//     live brokers, the first replica leading;
//   - configs are Kafka topic configs checked by broker/topicconfig
//     (unknown names, bad values, null values: INVALID_CONFIG naming the key);
//   - validate_only (v1+) runs every check and creates nothing.
//
// Creation is synchronous: when the response is sent the topic's partition
// logs are open. The timeout is not needed and ignored. v5+ responses carry
// the partition count, replication factor and the topic's configs (as
// DescribeConfigs would list them, without synonyms); v7 the topic id.

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
	"weir/broker/topicconfig"
)

func init() { register(kmsg.CreateTopics.Int16(), 0, 7, handleCreateTopics) }

func handleCreateTopics(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	// CREATE on the cluster covers every topic; otherwise CREATE on each.
	clusterCreate := s.allowed(r, acl.OpCreate, acl.ResourceCluster, acl.ClusterName)
	count := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		var kerrv *kafkaError
		if count[rt.Topic] > 1 {
			kerrv = kafkaErr(kerr.InvalidRequest, "create topics request contains multiple entries for topic %q", rt.Topic)
		} else if !clusterCreate && !s.authorize(r, acl.OpCreate, acl.ResourceTopic, rt.Topic) {
			kerrv = kafkaErr(kerr.TopicAuthorizationFailed, "Authorization failed.")
		} else {
			var t *metadata.Topic
			var res topicconfig.Resolved
			t, res, kerrv = s.createTopic(r, rt, req.ValidateOnly)
			if kerrv == nil {
				st.TopicID = t.ID
				st.NumPartitions = int32(len(t.Partitions))
				st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
				if !s.allowed(r, acl.OpDescribeConfigs, acl.ResourceTopic, rt.Topic) {
					// Created; its configs are not shown (Kafka's
					// topic_config_error_code).
					st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				for _, e := range res.Describe(nil, false, false) {
					if st.ConfigErrorCode != 0 {
						break
					}
					c := kmsg.NewCreateTopicsResponseTopicConfig()
					c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, e.Value, e.ReadOnly, int8(e.Source), e.Sensitive
					st.Configs = append(st.Configs, c)
				}
			}
		}
		st.ErrorCode = kerrv.codeOrZero()
		st.ErrorMessage = kerrv.msgPtr()
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// createTopic checks one topic of a CreateTopics request and creates it
// (or only checks it when validateOnly).
func (s *Server) createTopic(r *Request, rt *kmsg.CreateTopicsRequestTopic, validateOnly bool) (*metadata.Topic, topicconfig.Resolved, *kafkaError) {
	bc := s.cfg.BrokerConfig
	fail := func(e *kafkaError) (*metadata.Topic, topicconfig.Resolved, *kafkaError) {
		return nil, topicconfig.Resolved{}, e
	}
	if err := metadata.ValidateTopicName(rt.Topic); err != nil {
		return fail(kafkaErr(kerr.InvalidTopicException, "%v", err))
	}
	configs := make(map[string]string, len(rt.Configs))
	for _, c := range rt.Configs {
		if c.Value == nil {
			return fail(kafkaErr(kerr.InvalidConfig, "null value not supported for topic config %s", c.Name))
		}
		configs[strings.Clone(c.Name)] = strings.Clone(*c.Value) // the request aliases the read buffer
	}
	res, err := bc.Resolve(configs)
	if err != nil {
		return fail(configError(err))
	}

	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	var assignment [][]int32
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 || rf != -1 {
			return fail(kafkaErr(kerr.InvalidRequest, "both num_partitions or replication_factor and replica_assignment were set for topic %q; both cannot be used at the same time", rt.Topic))
		}
		var kerrv *kafkaError
		partitions, rf, assignment, kerrv = checkAssignment(rt)
		if kerrv != nil {
			return fail(kerrv)
		}
	}
	switch {
	case partitions == -1:
		partitions = bc.NumPartitions()
	case partitions <= 0:
		return fail(kafkaErr(kerr.InvalidPartitions, "number of partitions must be larger than 0 (topic %q asked for %d)", rt.Topic, partitions))
	}
	switch {
	case rf == -1:
		rf = bc.DefaultReplicationFactor()
	case rf <= 0:
		return fail(kafkaErr(kerr.InvalidReplicationFactor, "replication factor must be larger than 0 (topic %q asked for %d)", rt.Topic, rf))
	}
	if n := len(s.meta.Image().Brokers()); int(rf) > n && assignment == nil {
		return fail(kafkaErr(kerr.InvalidReplicationFactor, "unable to replicate topic %q %d time(s): only %d broker(s) are registered", rt.Topic, rf, n))
	}

	t, err := s.meta.CreateTopic(r.Ctx, metadata.TopicSpec{
		Name:              strings.Clone(rt.Topic),
		Partitions:        partitions,
		ReplicationFactor: rf,
		Configs:           res.Overrides(),
		Assignment:        assignment,
		ValidateOnly:      validateOnly,
	})
	if err != nil {
		return fail(metadataError(err))
	}
	if !validateOnly {
		// At debug: clients (weir run's dead-letter, changelog and
		// repartition topics among them) create topics by the dozen; the
		// pipelines runner logs the topics a user declared at info.
		s.log.Debug("topic created", zap.String("topic", t.Name), zap.Int32("partitions", partitions),
			zap.Int16("replication_factor", rf), zap.Any("configs", res.Overrides()),
			zap.String("client_id", r.ClientID), zap.String("remote", r.Remote))
	}
	return t, res, nil
}

// checkAssignment reads an explicit replica assignment into replicas per
// partition and returns the partition count and replication factor it
// implies. The brokers it names are checked by the metadata layer.
func checkAssignment(rt *kmsg.CreateTopicsRequestTopic) (int32, int16, [][]int32, *kafkaError) {
	byPartition := make(map[int32][]int32, len(rt.ReplicaAssignment))
	rf := len(rt.ReplicaAssignment[0].Replicas)
	for _, a := range rt.ReplicaAssignment {
		if _, dup := byPartition[a.Partition]; dup {
			return 0, 0, nil, kafkaErr(kerr.InvalidReplicaAssignment, "partition %d of topic %q is assigned twice", a.Partition, rt.Topic)
		}
		if len(a.Replicas) == 0 || len(a.Replicas) != rf {
			return 0, 0, nil, kafkaErr(kerr.InvalidReplicaAssignment, "all partitions of topic %q must have the same, non-zero number of replicas", rt.Topic)
		}
		byPartition[a.Partition] = slices.Clone(a.Replicas) // the request aliases the read buffer
	}
	n := int32(len(byPartition))
	out := make([][]int32, n)
	for p := int32(0); p < n; p++ {
		got, ok := byPartition[p]
		if !ok {
			return 0, 0, nil, kafkaErr(kerr.InvalidReplicaAssignment, "partitions of topic %q must be numbered 0 to %d; %d is missing", rt.Topic, n-1, p)
		}
		out[p] = got
	}
	return n, int16(rf), out, nil
}
