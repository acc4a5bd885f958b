package kafka

// Metadata (key 3), versions 0-13.
//
// Answered from this broker's current view of the metadata (every broker
// follows the replicated metadata log, so any broker answers): the live
// (unfenced) brokers with their advertised addresses, the cluster id
// (v2+), the controller (the Raft leader; this node when single-node),
// and the requested topics with each partition's leader, leader epoch
// (v7+), replicas, ISR and offline replicas (v5+: replicas on fenced or
// unknown brokers). A partition without a live leader gets
// LEADER_NOT_AVAILABLE and leader -1. A null topic list (v1+) or an empty
// one (v0) means all topics; an empty list at v1+ means none.
//
// Unknown topics are created when auto.create.topics.enable is on and the
// request allows it (always below v4, AllowAutoTopicCreation from v4),
// with num.partitions partitions and default.replication.factor replicas;
// the creation is synchronous, so the new topic is returned at once with
// no error. Otherwise an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION, and
// an illegal name INVALID_TOPIC_EXCEPTION.
//
// With an authorizer (Kafka's handleTopicMetadataRequest): an all-topics
// request lists only the topics the client may DESCRIBE; a named topic it
// may not describe gets TOPIC_AUTHORIZATION_FAILED (whether it exists or
// not); auto-creation needs CREATE on the cluster or on the topic (else
// TOPIC_AUTHORIZATION_FAILED). The authorized-operations fields (v8+)
// are filled when asked for.
//
// v10 adds topic ids to the answer (KIP-516; consumer-protocol clients,
// KIP-848, map their assignments by id), v12 lets a request name a topic
// by id only (UNKNOWN_TOPIC_ID when no topic has it), v13 a top-level
// error code (KIP-1102; always none here).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { register(kmsg.Metadata.Int16(), 0, 13, handleMetadata) }

func handleMetadata(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	img := s.meta.Image()

	autoCreate := s.cfg.BrokerConfig.AutoCreateTopics() && (req.Version < 4 || req.AllowAutoTopicCreation)
	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, t := range img.Topics() {
			// Topics the client may not describe are left out.
			if s.allowed(r, acl.OpDescribe, acl.ResourceTopic, t.Name) {
				resp.Topics = append(resp.Topics, metadataTopic(s, img, t))
			}
		}
	} else {
		for _, rt := range req.Topics {
			if rt.Topic == nil {
				// By topic id (v10+).
				t, ok := img.TopicByID(metadata.UUID(rt.TopicID))
				if !ok || !s.authorize(r, acl.OpDescribe, acl.ResourceTopic, t.Name) {
					mt := kmsg.NewMetadataResponseTopic()
					mt.TopicID = rt.TopicID
					mt.ErrorCode = kerr.UnknownTopicID.Code
					resp.Topics = append(resp.Topics, mt)
					continue
				}
				resp.Topics = append(resp.Topics, metadataTopic(s, img, t))
				continue
			}
			name := *rt.Topic
			if !s.authorize(r, acl.OpDescribe, acl.ResourceTopic, name) {
				resp.Topics = append(resp.Topics, deniedMetadataTopic(name))
				continue
			}
			t, ok := img.Topic(name)
			if !ok && autoCreate && !s.allowed(r, acl.OpCreate, acl.ResourceCluster, acl.ClusterName) &&
				!s.authorize(r, acl.OpCreate, acl.ResourceTopic, name) {
				resp.Topics = append(resp.Topics, deniedMetadataTopic(name))
				continue
			}
			if !ok && autoCreate {
				t, img = s.autoCreateTopic(r, name)
				ok = t != nil
			}
			if !ok {
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic = kmsg.StringPtr(name)
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if metadata.ValidateTopicName(name) != nil {
					mt.ErrorCode = kerr.InvalidTopicException.Code
				}
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			resp.Topics = append(resp.Topics, metadataTopic(s, img, t))
		}
	}

	// Each broker's endpoint on the listener the client connected on; a
	// broker without that listener is left out, as Kafka does.
	for _, b := range img.LiveBrokers() {
		host, port, ok := b.Endpoint(r.Listener)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = b.NodeID, host, port, b.Rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	if id := img.ClusterID(); id != "" {
		resp.ClusterID = kmsg.StringPtr(id)
	}
	resp.ControllerID = s.controllerID()
	if req.Version >= 8 {
		if req.IncludeClusterAuthorizedOperations {
			resp.AuthorizedOperations = 0
			if s.authorizeCluster(r, acl.OpDescribe) {
				resp.AuthorizedOperations = s.authorizedOperations(r, acl.ResourceCluster, acl.ClusterName)
			}
		}
		if req.IncludeTopicAuthorizedOperations {
			for i := range resp.Topics {
				if mt := &resp.Topics[i]; mt.ErrorCode != kerr.TopicAuthorizationFailed.Code && mt.Topic != nil {
					mt.AuthorizedOperations = s.authorizedOperations(r, acl.ResourceTopic, *mt.Topic)
				}
			}
		}
	}
	return resp, nil
}

// deniedMetadataTopic is Kafka's answer for a topic the client may not
// describe (or auto-create): TOPIC_AUTHORIZATION_FAILED, no id, nothing
// said of whether it exists.
func deniedMetadataTopic(name string) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(name)
	mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
	mt.IsInternal = isInternalTopic(name)
	return mt
}

// controllerID is the node id of the controller: the Raft leader when the
// metadata store knows one, this broker when single-node.
func (s *Server) controllerID() int32 {
	if c, ok := s.meta.(interface{ ControllerID() int32 }); ok {
		return c.ControllerID()
	}
	return s.cfg.NodeID
}

// autoCreateTopic creates name with the broker defaults and returns it with
// the image that holds it; nil when the name is illegal or creation failed.
func (s *Server) autoCreateTopic(r *Request, name string) (*metadata.Topic, *metadata.Image) {
	t, err := s.meta.CreateTopic(r.Ctx, metadata.TopicSpec{
		Name:              name,
		Partitions:        s.cfg.BrokerConfig.NumPartitions(),
		ReplicationFactor: s.cfg.BrokerConfig.DefaultReplicationFactor(),
	})
	img := s.meta.Image()
	switch {
	case err == nil:
		s.log.Info("topic auto-created", zap.String("topic", name), zap.Int32("partitions", s.cfg.BrokerConfig.NumPartitions()), zap.String("client_id", r.ClientID))
		return t, img
	case errors.Is(err, metadata.ErrTopicExists):
		t, _ = img.Topic(name) // created concurrently
		return t, img
	case errors.Is(err, metadata.ErrInvalidTopic):
		return nil, img
	default:
		s.log.Warn("topic auto-creation failed", zap.String("topic", name), zap.Error(err))
		return nil, img
	}
}

func metadataTopic(s *Server, img *metadata.Image, t *metadata.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(t.Partitions))
	for i, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(i)
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = p.Replicas
		mp.ISR = p.ISR
		mp.OfflineReplicas = []int32{}
		for _, r := range p.Replicas {
			// Fenced, or its log directory failed (Kafka: a replica on an
			// offline log dir). A full disk still serves reads: online.
			if !img.Live(r) || img.ReplicaFailed(r, t.Name, int32(i)) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if !img.Live(p.Leader) {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
		}
		mt.Partitions[i] = mp
	}
	return mt
}

// isInternalTopic reports Kafka's internal topics.
func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}
