package kafka

// DeleteTopics (key 20), versions 0-6.
//
// Topics are named (v0-5 topic_names, v6 topics[].name) or, from v6, given
// by topic id. Per topic:
//
//   - delete.topic.enable=false: TOPIC_DELETION_DISABLED;
//   - a topic named twice in one request, or given by both name and id:
//     INVALID_REQUEST;
//   - unknown name: UNKNOWN_TOPIC_OR_PARTITION; unknown id: UNKNOWN_TOPIC_ID;
//   - weir's internal topics (__consumer_offsets, __transaction_state) are
//     not deleted (INVALID_REQUEST): the coordinators hold them open. Kafka
//     allows it; weir refuses rather than break the group coordinator.
//
// Deletion is synchronous: the metadata record is durable and the
// partition logs (with their producer-state snapshots) are removed from
// disk before the response is sent. The timeout is ignored.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/metadata"
)

func init() { register(kmsg.DeleteTopics.Int16(), 0, 6, handleDeleteTopics) }

func handleDeleteTopics(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)

	type target struct {
		name *string
		id   metadata.UUID
	}
	var targets []target
	if req.Version >= 6 {
		for _, t := range req.Topics {
			targets = append(targets, target{name: t.Topic, id: t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: kmsg.StringPtr(n)})
		}
	}
	img := s.meta.Image()
	// Resolve ids to names first, to find duplicates either way.
	names := make([]string, len(targets))
	errs := make([]*kafkaError, len(targets))
	count := map[string]int{}
	for i, t := range targets {
		switch {
		case t.name != nil && t.id != (metadata.UUID{}):
			errs[i] = kafkaErr(kerr.InvalidRequest, "you may not specify both topic name and topic id")
		case t.name != nil:
			names[i] = *t.name
		default:
			tp, ok := img.TopicByID(t.id)
			if !ok {
				errs[i] = kafkaErr(kerr.UnknownTopicID, "no topic with id %s", t.id)
				continue
			}
			names[i] = tp.Name
		}
		if errs[i] == nil {
			count[names[i]]++
		}
	}
	enabled := s.cfg.BrokerConfig.DeleteTopicEnable()
	for i, t := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = t.name, t.id
		e := errs[i]
		if e == nil {
			name := names[i]
			if st.Topic == nil {
				st.Topic = kmsg.StringPtr(name)
			}
			switch {
			case !enabled:
				e = kafkaErr(kerr.TopicDeletionDisabled, "topic deletion is disabled (delete.topic.enable=false)")
			case t.id != (metadata.UUID{}) && !s.authorize(r, acl.OpDescribe, acl.ResourceTopic, name):
				e = kafkaErr(kerr.TopicAuthorizationFailed, "not authorized to describe the topic with id %s", t.id)
				st.Topic = nil
			case !s.authorize(r, acl.OpDelete, acl.ResourceTopic, name):
				e = kafkaErr(kerr.TopicAuthorizationFailed, "not authorized to delete topic %q", name)
			case count[name] > 1:
				e = kafkaErr(kerr.InvalidRequest, "topic %q appears more than once in the request", name)
			case isInternalTopic(name):
				e = kafkaErr(kerr.InvalidRequest, "weir does not delete the internal topic %q", name)
			default:
				tp, err := s.meta.DeleteTopic(r.Ctx, strings.Clone(name))
				if err != nil {
					e = metadataError(err)
				} else {
					st.TopicID = tp.ID
					s.logAdminChange("topic deleted", r, zap.String("topic", name))
				}
			}
		}
		st.ErrorCode = e.codeOrZero()
		st.ErrorMessage = e.msgPtr()
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
