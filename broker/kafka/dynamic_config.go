package kafka

// Dynamic broker configs (KIP-226) on BROKER resources: AlterConfigs (33)
// and IncrementalAlterConfigs (44) change the overrides of this broker
// (resource name = its node id) or of the cluster default (""), stored in
// the replicated metadata (metadata.AlterBrokerConfig records), so every
// broker applies the default and its own overrides; DescribeConfigs (32)
// reports them with Kafka's sources and synonyms (topicconfig).
//
// As Kafka's ConfigAdminManager: the whole new set of a resource is
// validated before anything is proposed (topicconfig.ValidateDynamic:
// static-only configs, bad values), and every failure is INVALID_REQUEST
// with Kafka's message; custom names Kafka does not know are accepted.
// Applying: the server follows the metadata (followBrokerConfigs), feeds
// the live topicconfig.Broker (SetDynamic) and re-resolves every topic's
// configuration, so a topic without an override of, say, retention.ms
// takes the new log.retention.ms at once.

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"weir/broker/metadata"
	"weir/broker/topicconfig"
)

// followBrokerConfigs feeds the broker configuration the dynamic configs
// of this node and of the cluster default from the metadata, now and on
// every change. It must be registered before the partition table's
// watcher, so the table re-resolves topics against the new values.
func (s *Server) followBrokerConfigs() {
	self := strconv.Itoa(int(s.cfg.NodeID))
	apply := func(img *metadata.Image) {
		changed := s.cfg.BrokerConfig.SetDynamic(img.BrokerConfigs(self), img.BrokerConfigs(""))
		if len(changed) > 0 {
			s.parts.dynGen.Add(1) // the table re-resolves every topic
			s.log.Info("dynamic broker configs applied", zap.Strings("changed", changed))
		}
	}
	s.meta.Watch(func(c metadata.Change) {
		// A snapshot restore is a Change without a record.
		if c.Record.Type == metadata.TypeAlterBrokerConfig || c.Record.Type == "" {
			apply(c.After)
		}
	})
	apply(s.meta.Image())
}

// brokerResourceForAlter checks the name of a BROKER resource to alter, as
// Kafka's ConfigAdminManager: "" (the cluster default) or this node's id.
func (s *Server) brokerResourceForAlter(name string) *kafkaError {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kafkaErr(kerr.InvalidRequest, "Node id must be an integer, but it is: %s", name)
	}
	if int32(id) != s.cfg.NodeID {
		return kafkaErr(kerr.InvalidRequest, "Unexpected broker id, expected %d, but received %s", s.cfg.NodeID, name)
	}
	return nil
}

// alterBrokerConfigs replaces a BROKER resource's dynamic overrides with
// what next computes from the current ones, after validating the whole
// result; with validateOnly it only validates. Serialized with the other
// config alters of this broker.
func (s *Server) alterBrokerConfigs(r *Request, name string, validateOnly bool, next func(cur map[string]string) (map[string]string, *kafkaError)) *kafkaError {
	if e := s.brokerResourceForAlter(name); e != nil {
		return e
	}
	resource := ""
	if name != "" {
		resource = strconv.Itoa(int(s.cfg.NodeID))
	}
	a := s.admin()
	a.alterMu.Lock()
	defer a.alterMu.Unlock()
	want, e := next(maps.Clone(s.meta.Image().BrokerConfigs(resource)))
	if e != nil {
		return e
	}
	if err := s.cfg.BrokerConfig.ValidateChange(want, resource != ""); err != nil {
		return kafkaErr(kerr.InvalidRequest, "%s", strings.TrimPrefix(err.Error(), topicconfig.ErrInvalidRequest.Error()+": "))
	}
	if validateOnly {
		return nil
	}
	alt, ok := s.meta.(metadata.BrokerConfigAlterer)
	if !ok {
		return kafkaErr(kerr.InvalidRequest, "this broker's metadata store cannot hold dynamic broker configs")
	}
	if err := alt.AlterBrokerConfig(r.Ctx, resource, want); err != nil {
		return metadataError(err)
	}
	s.logAdminChange("broker configs altered", r, zap.String("resource", resource), zap.Strings("configs", slices.Sorted(maps.Keys(want))))
	return nil
}

// applyBrokerOps applies operations to a BROKER resource's current
// overrides (nil: none), as Kafka's
// ConfigAdminManager.prepareIncrementalConfigs (APPEND and SUBTRACT start
// from the current override, else the config's default). checkConfigOps
// checked them.
func applyBrokerOps(cur map[string]string, ops []topicconfig.Op) (map[string]string, *kafkaError) {
	if cur == nil {
		cur = map[string]string{}
	}
	for _, op := range ops {
		name := op.Name
		switch op.Type {
		case topicconfig.OpSet:
			cur[name] = *op.Value
		case topicconfig.OpDelete:
			delete(cur, name)
		case topicconfig.OpAppend, topicconfig.OpSubtract:
			d, ok := topicconfig.BrokerDef(name)
			if !ok {
				return nil, kafkaErr(kerr.InvalidConfig, "Unknown config name: %s", name)
			}
			if d.Type != topicconfig.TypeList {
				verb := "append"
				if op.Type == topicconfig.OpSubtract {
					verb = "subtract"
				}
				return nil, kafkaErr(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", verb, name)
			}
			old, set := cur[name]
			if !set && d.HasDefault {
				old = d.Default
			}
			var items []string
			if old != "" {
				items = strings.Split(old, ",")
			}
			change := strings.Split(*op.Value, ",")
			if op.Type == topicconfig.OpAppend {
				for _, v := range change {
					if !slices.Contains(items, v) {
						items = append(items, v)
					}
				}
			} else {
				items = slices.DeleteFunc(items, func(v string) bool { return slices.Contains(change, v) })
			}
			cur[name] = strings.Join(items, ",")
		default:
			return nil, kafkaErr(kerr.InvalidRequest, "Unknown operations type %d", int8(op.Type))
		}
	}
	return cur, nil
}
