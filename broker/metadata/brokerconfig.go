package metadata

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// TypeAlterBrokerConfig replaces the dynamic config overrides of one
// broker, or of the cluster default (Kafka's ConfigRecord for BROKER
// resources).
const TypeAlterBrokerConfig RecordType = "alter_broker_config"

// AlterBrokerConfig replaces the whole set of dynamic overrides of one
// BROKER config resource: Broker is "" for the cluster-wide default
// (Kafka's <default>, DYNAMIC_DEFAULT_BROKER_CONFIG) or a node id in
// decimal (DYNAMIC_BROKER_CONFIG). An empty Configs removes every
// override of the resource. Names and values are validated by the broker
// that took the request (broker/topicconfig) before a record is built.
type AlterBrokerConfig struct {
	Broker  string            `json:"broker"`
	Configs map[string]string `json:"configs"`
}

// BrokerConfigAlterer is the optional Store capability of changing dynamic
// broker configs (AlterConfigs / IncrementalAlterConfigs on BROKER
// resources): it replaces resource's whole set of overrides (resource ""
// = cluster default, else a node id in decimal) and returns once the
// change is applied locally.
type BrokerConfigAlterer interface {
	AlterBrokerConfig(ctx context.Context, resource string, configs map[string]string) error
}

// BrokerConfigs returns the dynamic config overrides of a BROKER resource
// ("" = the cluster default, else a node id in decimal); nil if none. The
// map is shared with the image: do not modify it.
func (im *Image) BrokerConfigs(resource string) map[string]string {
	return im.brokerConfigs[resource]
}

// BrokerConfigResources returns the BROKER resources with dynamic
// overrides, sorted ("" first).
func (im *Image) BrokerConfigResources() []string {
	return slices.Sorted(maps.Keys(im.brokerConfigs))
}

// ValidBrokerResource reports whether name is "" or a node id in decimal
// (no sign, no leading zeros), the names a BROKER config resource has.
func ValidBrokerResource(name string) bool {
	if name == "" {
		return true
	}
	n, err := strconv.ParseInt(name, 10, 32)
	return err == nil && n >= 0 && strconv.FormatInt(n, 10) == name
}

// applyBrokerConfig returns the broker config map after r.
func (im *Image) applyBrokerConfig(r *AlterBrokerConfig) (map[string]map[string]string, error) {
	if !ValidBrokerResource(r.Broker) {
		return nil, fmt.Errorf("%w: broker config resource %q is neither \"\" nor a node id", ErrCorruptRecord, r.Broker)
	}
	for k := range r.Configs {
		if k == "" {
			return nil, fmt.Errorf("%w: broker config resource %q: empty config name", ErrCorruptRecord, r.Broker)
		}
	}
	out := maps.Clone(im.brokerConfigs)
	if out == nil {
		out = map[string]map[string]string{}
	}
	if len(r.Configs) == 0 {
		delete(out, r.Broker)
	} else {
		out[strings.Clone(r.Broker)] = cloneConfigs(r.Configs)
	}
	return out, nil
}

// brokerConfigRecords are the records that rebuild the image's dynamic
// broker configs.
func (im *Image) brokerConfigRecords() []Record {
	var out []Record
	for _, res := range im.BrokerConfigResources() {
		out = append(out, Record{Type: TypeAlterBrokerConfig, AlterBrokerConfig: &AlterBrokerConfig{Broker: res, Configs: im.brokerConfigs[res]}})
	}
	return out
}

// AlterBrokerConfig replaces a BROKER resource's dynamic overrides; see
// BrokerConfigAlterer.
func (s *FileStore) AlterBrokerConfig(ctx context.Context, resource string, configs map[string]string) error {
	if configs == nil {
		configs = map[string]string{}
	}
	_, err := s.Propose(ctx, Record{Type: TypeAlterBrokerConfig, AlterBrokerConfig: &AlterBrokerConfig{Broker: resource, Configs: configs}})
	return err
}
