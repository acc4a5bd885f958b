package controller

import (
	"context"
	"fmt"

	"weir/broker/metadata"
)

// KindAlterBrokerConfig replaces a BROKER resource's dynamic config
// overrides (AlterConfigs / IncrementalAlterConfigs on a broker or the
// cluster default). The broker that took the request validated the set.
const KindAlterBrokerConfig = "alter_broker_config"

// planBrokerConfig turns an alter_broker_config command into its record.
func planBrokerConfig(im *metadata.Image, c Command) ([]metadata.Record, error) {
	if !metadata.ValidBrokerResource(c.Name) {
		return nil, fmt.Errorf("controller: %s: broker config resource %q is neither \"\" nor a node id", KindAlterBrokerConfig, c.Name)
	}
	cfg := c.Configs
	if cfg == nil {
		cfg = map[string]string{}
	}
	r := metadata.Record{Type: metadata.TypeAlterBrokerConfig, AlterBrokerConfig: &metadata.AlterBrokerConfig{Broker: c.Name, Configs: cfg}}
	if _, err := im.Apply(r); err != nil {
		return nil, err
	}
	return []metadata.Record{r}, nil
}

// AlterBrokerConfig replaces a BROKER resource's dynamic overrides through
// the leader; see metadata.BrokerConfigAlterer.
func (n *Node) AlterBrokerConfig(ctx context.Context, resource string, configs map[string]string) error {
	_, err := n.command(ctx, Command{Kind: KindAlterBrokerConfig, Name: resource, Configs: configs})
	return err
}
