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
// response is sent (config_alter.go: the path AlterConfigs takes too).
// Unknown topic: UNKNOWN_TOPIC_OR_PARTITION. A resource named twice in one
// request: INVALID_REQUEST for each.
//
// BROKER resources (this node's id, or "" for the cluster default): the
// operations apply to the resource's dynamic broker configs, the result is
// checked as a whole and stored in the metadata (dynamic_config.go).
// Other resource types: INVALID_REQUEST.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/topicconfig"
)

func init() {
	register(kmsg.IncrementalAlterConfigs.Int16(), 0, 1, handleIncrementalAlterConfigs)
}

func handleIncrementalAlterConfigs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	alters := make([]configAlter, len(req.Resources))
	for i, rr := range req.Resources {
		a := configAlter{res: configResource{rr.ResourceType, rr.ResourceName}}
		for _, c := range rr.Configs {
			a.ops = append(a.ops, newConfigOp(topicconfig.OpType(c.Op), c.Name, c.Value))
		}
		alters[i] = a
	}
	for i, e := range s.alterConfigs(r, alters, req.ValidateOnly) {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
		sr.ErrorCode, sr.ErrorMessage = e.codeOrZero(), e.msgPtr()
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
