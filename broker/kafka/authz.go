package kafka

// Authorization hooks (issue 16 item 3): the handlers ask the questions
// Kafka's KafkaApis asks, with its operations and resources, through
// these helpers; broker/acl answers them. Without an authorizer every
// question is answered yes.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/metadata"
)

// followACLs keeps the authorizer's ACL set in step with the metadata.
func (s *Server) followACLs() {
	a := s.cfg.Authorizer
	if a == nil {
		return
	}
	s.meta.Watch(func(c metadata.Change) {
		// A change without a record is a whole new image (a controller
		// snapshot restored): its ACLs may differ in any way.
		if t := c.Record.Type; t == metadata.TypeCreateACLs || t == metadata.TypeDeleteACLs || t == "" {
			a.Update(acl.NewSet(c.After.ACLBindings()))
		}
	})
	a.Update(acl.NewSet(s.meta.Image().ACLBindings()))
}

func (r *Request) aclRequest() acl.Request {
	return acl.Request{Principal: r.Principal, Remote: r.Remote, API: kmsg.NameForKey(r.Key)}
}

// authorize answers whether r may do op on (t, name), logging a denial
// (Kafka's authorize with logIfDenied).
func (s *Server) authorize(r *Request, op acl.Operation, t acl.ResourceType, name string) bool {
	a := s.cfg.Authorizer
	return a == nil || a.Authorize(r.aclRequest(), op, t, name)
}

// allowed is authorize without the denial log (logIfDenied=false).
func (s *Server) allowed(r *Request, op acl.Operation, t acl.ResourceType, name string) bool {
	a := s.cfg.Authorizer
	return a == nil || a.Allowed(r.aclRequest(), op, t, name)
}

// authorizeCluster asks op on the cluster resource.
func (s *Server) authorizeCluster(r *Request, op acl.Operation) bool {
	return s.authorize(r, op, acl.ResourceCluster, acl.ClusterName)
}

// authorizedOperations is the authorized-operations field of (t, name).
func (s *Server) authorizedOperations(r *Request, t acl.ResourceType, name string) int32 {
	a := s.cfg.Authorizer
	if a == nil {
		return acl.AllOperations(t)
	}
	return a.AuthorizedOperations(r.aclRequest(), t, name)
}

// topicAuthz caches the decisions of one request by topic name (a
// request names a topic once per partition list, but helpers may ask
// again).
type topicAuthz struct {
	s  *Server
	r  *Request
	op acl.Operation
	m  map[string]bool
}

func (s *Server) topicAuthz(r *Request, op acl.Operation) *topicAuthz {
	return &topicAuthz{s: s, r: r, op: op}
}

// ok reports whether the topic is authorized for the operation.
func (z *topicAuthz) ok(topic string) bool {
	if z.s.cfg.Authorizer == nil {
		return true
	}
	if v, seen := z.m[topic]; seen {
		return v
	}
	v := z.s.authorize(z.r, z.op, acl.ResourceTopic, topic)
	if z.m == nil {
		z.m = map[string]bool{}
	}
	z.m[topic] = v
	return v
}

// configDenied asks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config
// resource as Kafka does: a topic's own ACLs (TOPIC_AUTHORIZATION_FAILED),
// the cluster for brokers and broker loggers (CLUSTER_AUTHORIZATION_FAILED);
// nil when allowed or for other resource types (refused elsewhere).
func (s *Server) configDenied(r *Request, op acl.Operation, resourceType kmsg.ConfigResourceType, name string) *kafkaError {
	switch resourceType {
	case resourceTopic:
		if !s.authorize(r, op, acl.ResourceTopic, name) {
			return kafkaErr(kerr.TopicAuthorizationFailed, "%s", kerr.TopicAuthorizationFailed.Description)
		}
	case resourceBroker, resourceBrokerLogger:
		if !s.authorizeCluster(r, op) {
			return kafkaErr(kerr.ClusterAuthorizationFailed, "%s", kerr.ClusterAuthorizationFailed.Description)
		}
	}
	return nil
}

// idempotentWriteAllowed is InitProducerId's question without a
// transactional id: IDEMPOTENT_WRITE on the cluster, or (Kafka 3+,
// KIP-679) WRITE on at least one topic.
func (s *Server) idempotentWriteAllowed(r *Request) bool {
	a := s.cfg.Authorizer
	if a == nil {
		return true
	}
	ar := r.aclRequest()
	if a.Allowed(ar, acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName) ||
		a.AuthorizeByResourceType(ar, acl.OpWrite, acl.ResourceTopic) {
		return true
	}
	return a.Authorize(ar, acl.OpIdempotentWrite, acl.ResourceCluster, acl.ClusterName) // logs the denial
}
