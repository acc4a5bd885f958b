package kafka

// IncrementalAlterConfigs (key 44), versions 0-1.
//
// Changes a TOPIC resource's overrides by operations: SET (a value),
// DELETE (back to the default), APPEND and SUBTRACT (LIST configs only,
// e.g. cleanup.policy; starting from the effective value, appending only
// items not present). The result is checked as a whole by
// broker/topicconfig (unknown names, bad values, conflicts: INVALID_CONFIG
// naming the key; APPEND/SUBTRACT on a non-list, a key twice, a null value
// for SET: INVALID_REQUEST) and, unless validate_only, stored in the
// metadata and applied to every partition log of the topic before the
// response is sent. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION. A resource
// named twice in one request: INVALID_REQUEST for each.
//
// BROKER resources (this node's id, or "" for the cluster default): the
// operations apply to the resource's dynamic broker configs, the result is
// checked as a whole and stored in the metadata (dynamic_config.go).
// Other resource types: INVALID_REQUEST.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/topicconfig"
)

func init() {
	register(kmsg.IncrementalAlterConfigs.Int16(), 0, 1, handleIncrementalAlterConfigs)
}

func handleIncrementalAlterConfigs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	ids := make([]configResource, len(req.Resources))
	for i, rr := range req.Resources {
		ids[i] = configResource{rr.ResourceType, rr.ResourceName}
	}
	dup := duplicateResources(ids)
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var e *kafkaError
		denied := s.configDenied(r, acl.OpAlterConfigs, rr.ResourceType, rr.ResourceName)
		switch {
		case dup[ids[i]]:
			e = kafkaErr(kerr.InvalidRequest, "resource %q (type %d) appears more than once in the request", rr.ResourceName, rr.ResourceType)
		case denied != nil:
			e = denied
		case rr.ResourceType == resourceTopic:
			ops := make([]topicconfig.Op, len(rr.Configs))
			for j, c := range rr.Configs {
				// Clone: the request aliases the connection's read buffer.
				ops[j] = topicconfig.Op{Type: topicconfig.OpType(c.Op), Name: strings.Clone(c.Name)}
				if c.Value != nil {
					v := strings.Clone(*c.Value)
					ops[j].Value = &v
				}
			}
			e = s.alterTopicConfigs(r, rr.ResourceName, req.ValidateOnly, func(cur map[string]string) (map[string]string, *kafkaError) {
				next, err := s.cfg.BrokerConfig.ApplyOps(cur, ops)
				return next, configError(err)
			})
		case rr.ResourceType == resourceBroker:
			e = s.alterBrokerConfigs(r, rr.ResourceName, req.ValidateOnly, func(cur map[string]string) (map[string]string, *kafkaError) {
				return incrementalBrokerConfigs(cur, rr.Configs)
			})
		default:
			e = kafkaErr(kerr.InvalidRequest, "unsupported config resource type %d", rr.ResourceType)
		}
		sr.ErrorCode, sr.ErrorMessage = e.codeOrZero(), e.msgPtr()
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
