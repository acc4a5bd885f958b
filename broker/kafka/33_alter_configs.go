package kafka

// AlterConfigs (key 33), versions 0-2.
//
// The legacy, non-incremental alter: a TOPIC resource's overrides are
// replaced by exactly the configs in the request (configs not listed return
// to their defaults). The new set is checked as a whole by
// broker/topicconfig (unknown names, bad values, conflicts:
// INVALID_CONFIG naming the key; a null value or a key given twice:
// INVALID_REQUEST) and, unless validate_only, stored in the metadata and
// applied to every partition log of the topic before the response is sent.
// Unknown topic: UNKNOWN_TOPIC_OR_PARTITION. A resource named twice in one
// request: INVALID_REQUEST for each.
//
// BROKER resources (this node's id, or "" for the cluster default): the
// resource's dynamic broker configs become exactly the request's, checked
// as a whole and stored in the metadata (dynamic_config.go). Other
// resource types: INVALID_REQUEST.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
)

func init() { register(kmsg.AlterConfigs.Int16(), 0, 2, handleAlterConfigs) }

func handleAlterConfigs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	ids := make([]configResource, len(req.Resources))
	for i, rr := range req.Resources {
		ids[i] = configResource{rr.ResourceType, rr.ResourceName}
	}
	dup := duplicateResources(ids)
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var e *kafkaError
		denied := s.configDenied(r, acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		switch {
		case dup[ids[i]]:
			e = kafkaErr(kerr.InvalidRequest, "resource %q (type %d) appears more than once in the request", rr.ResourceName, rr.ResourceType)
		case denied != nil:
			e = denied
		case rr.ResourceType == resourceTopic:
			e = s.alterTopicConfigs(r, rr.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, *kafkaError) {
				next := make(map[string]string, len(rr.Configs))
				for _, c := range rr.Configs {
					if c.Value == nil {
						return nil, kafkaErr(kerr.InvalidRequest, "null value not supported for topic config %s", c.Name)
					}
					if _, twice := next[c.Name]; twice {
						return nil, kafkaErr(kerr.InvalidRequest, "config %s appears more than once for topic %q", c.Name, rr.ResourceName)
					}
					next[strings.Clone(c.Name)] = strings.Clone(*c.Value) // the request aliases the read buffer
				}
				return next, nil
			})
		case rr.ResourceType == resourceBroker:
			e = s.alterBrokerConfigs(r, rr.ResourceName, req.ValidateOnly, func(map[string]string) (map[string]string, *kafkaError) {
				return legacyBrokerConfigs(rr.Configs)
			})
		default:
			e = kafkaErr(kerr.InvalidRequest, "unsupported config resource type %d", rr.ResourceType)
		}
		sr.ErrorCode, sr.ErrorMessage = e.codeOrZero(), e.msgPtr()
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
