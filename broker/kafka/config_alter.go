package kafka

// One path for AlterConfigs (33) and IncrementalAlterConfigs (44).
//
// Both request shapes are mapped onto configAlter: operations on one
// resource's configs. IncrementalAlterConfigs' are its SET, DELETE,
// APPEND and SUBTRACT; AlterConfigs' are a SET per config with replace,
// the resource's other dynamic configs deleted (as Kafka's
// ConfigurationControlManager.legacyAlterConfigs turns the new set into
// explicit and implicit config records). Then, for both, as Kafka's
// ConfigAdminManager.preprocess and the controller: a resource named
// twice is INVALID_REQUEST for each; a config named twice or a null
// value (but for DELETE) is INVALID_REQUEST with Kafka's message; the
// ACL check (ALTER_CONFIGS); then the resource's whole new set is
// computed and validated (TOPIC: alterTopicConfigs with
// topicconfig.ApplyOps; BROKER: alterBrokerConfigs with applyBrokerOps,
// dynamic_config.go) and, unless validate_only, stored in the metadata.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/topicconfig"
)

// configResource identifies one resource of an alter request.
type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

// configAlter is one resource of an alter request: ops on its configs;
// with replace (AlterConfigs) the configs ops do not name are deleted.
// Names and values are cloned from the request (which aliases the
// connection's read buffer).
type configAlter struct {
	res     configResource
	ops     []topicconfig.Op
	replace bool
}

// newConfigOp is one operation, cloned from the request.
func newConfigOp(typ topicconfig.OpType, name string, value *string) topicconfig.Op {
	op := topicconfig.Op{Type: typ, Name: strings.Clone(name)}
	if value != nil {
		v := strings.Clone(*value)
		op.Value = &v
	}
	return op
}

// alterConfigs runs the alters of one request and returns each one's
// error (nil: done).
func (s *Server) alterConfigs(r *Request, alters []configAlter, validateOnly bool) []*kafkaError {
	seen := make(map[configResource]int, len(alters))
	for _, a := range alters {
		seen[a.res]++
	}
	out := make([]*kafkaError, len(alters))
	for i, a := range alters {
		if seen[a.res] > 1 {
			out[i] = kafkaErr(kerr.InvalidRequest, "resource %q (type %d) appears more than once in the request", a.res.name, a.res.typ)
			continue
		}
		out[i] = s.alterConfig(r, a, validateOnly)
	}
	return out
}

// alterConfig runs one resource's alter.
func (s *Server) alterConfig(r *Request, a configAlter, validateOnly bool) *kafkaError {
	if e := s.configDenied(r, acl.OpAlterConfigs, a.res.typ, a.res.name); e != nil {
		return e
	}
	if e := checkConfigOps(a.ops); e != nil {
		return e
	}
	base := func(cur map[string]string) map[string]string {
		if a.replace {
			return nil
		}
		return cur
	}
	switch a.res.typ {
	case resourceTopic:
		return s.alterTopicConfigs(r, a.res.name, validateOnly, func(cur map[string]string) (map[string]string, *kafkaError) {
			next, err := s.cfg.BrokerConfig.ApplyOps(base(cur), a.ops)
			return next, configError(err)
		})
	case resourceBroker:
		return s.alterBrokerConfigs(r, a.res.name, validateOnly, func(cur map[string]string) (map[string]string, *kafkaError) {
			return applyBrokerOps(base(cur), a.ops)
		})
	}
	return kafkaErr(kerr.InvalidRequest, "unsupported config resource type %d", a.res.typ)
}

// checkConfigOps is Kafka's check of one resource's operations before
// anything else (ConfigAdminManager.preprocess): no config twice, a
// value for every operation but DELETE.
func checkConfigOps(ops []topicconfig.Op) *kafkaError {
	seen := make(map[string]bool, len(ops))
	var nulls []string
	for _, op := range ops {
		if seen[op.Name] {
			return kafkaErr(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[op.Name] = true
		if op.Type != topicconfig.OpDelete && op.Value == nil {
			nulls = append(nulls, op.Name)
		}
	}
	if len(nulls) > 0 {
		return kafkaErr(kerr.InvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	return nil
}
