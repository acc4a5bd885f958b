package kafka

// AlterConfigs (key 33), versions 0-2.
//
// The legacy, non-incremental alter: a TOPIC resource's overrides are
// replaced by exactly the configs in the request (configs not listed return
// to their defaults). The request is mapped onto the path
// IncrementalAlterConfigs takes (config_alter.go): a SET per config, the
// others deleted. The new set is checked as a whole by
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
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/topicconfig"
)

func init() { register(kmsg.AlterConfigs.Int16(), 0, 2, handleAlterConfigs) }

func handleAlterConfigs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	alters := make([]configAlter, len(req.Resources))
	for i, rr := range req.Resources {
		a := configAlter{res: configResource{rr.ResourceType, rr.ResourceName}, replace: true}
		for _, c := range rr.Configs {
			a.ops = append(a.ops, newConfigOp(topicconfig.OpSet, c.Name, c.Value))
		}
		alters[i] = a
	}
	for i, e := range s.alterConfigs(r, alters, req.ValidateOnly) {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = req.Resources[i].ResourceType, req.Resources[i].ResourceName
		sr.ErrorCode, sr.ErrorMessage = e.codeOrZero(), e.msgPtr()
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
