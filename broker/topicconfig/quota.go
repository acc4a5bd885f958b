package topicconfig

import (
	"fmt"

	"weir/broker/quota"
)

// Client quota and connection limit settings (issue 16; broker/quota).
const (
	BrokerQuotaWindowNum         = "quota.window.num"
	BrokerQuotaWindowSizeSeconds = "quota.window.size.seconds"
	BrokerMaxConnectionsPerIP    = "max.connections.per.ip"
	BrokerMaxConnectionsOverride = "max.connections.per.ip.overrides"
	BrokerMaxConnections         = "max.connections"
)

var quotaDefs = []Def{
	{Name: BrokerQuotaWindowNum, Type: TypeInt, Default: "11", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Number of samples client quota rates are measured over."},
	{Name: BrokerQuotaWindowSizeSeconds, Type: TypeInt, Default: "1", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Time span of each sample of a client quota rate."},
	{Name: BrokerMaxConnectionsPerIP, Type: TypeInt, Default: "2147483647", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "Most connections one IP address may have open; more are closed at once."},
	{Name: BrokerMaxConnectionsOverride, Type: TypeString, Default: "", HasDefault: true, Honoured: true, check: connOverrides,
		Doc: "Per-IP or per-host limits overriding max.connections.per.ip: host:count,ip:count."},
	{Name: BrokerMaxConnections, Type: TypeInt, Default: "2147483647", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "Most connections the broker has open; new ones wait for one to close (the inter-broker listener excepted)."},
}

func connOverrides(v string) error {
	_, err := quota.ParseOverrides(v)
	return err
}

// QuotaWindow is quota.window.num × quota.window.size.seconds.
func (b *Broker) QuotaWindow() quota.Window {
	return quota.Window{Samples: int(b.int64Value(BrokerQuotaWindowNum)), SizeMs: b.int64Value(BrokerQuotaWindowSizeSeconds) * 1000}
}

// ConnLimits returns the connection limits, with the hosts of
// max.connections.per.ip.overrides resolved to addresses. Kafka allows
// max.connections.per.ip=0 only with overrides.
func (b *Broker) ConnLimits() (quota.ConnConfig, error) {
	cfg := quota.ConnConfig{MaxPerIP: int(b.int64Value(BrokerMaxConnectionsPerIP)), Max: int(b.int64Value(BrokerMaxConnections))}
	v, _, _ := b.Value(BrokerMaxConnectionsOverride)
	hosts, err := quota.ParseOverrides(v)
	if err != nil {
		return cfg, err
	}
	if cfg.MaxPerIP == 0 && len(hosts) == 0 {
		return cfg, fmt.Errorf("%w: %s can be set to zero only if %s is set", ErrInvalidValue, BrokerMaxConnectionsPerIP, BrokerMaxConnectionsOverride)
	}
	if cfg.Max == 0 {
		return cfg, fmt.Errorf("%w: %s=0 would refuse every connection", ErrInvalidValue, BrokerMaxConnections)
	}
	if cfg.Overrides, err = quota.ResolveOverrides(hosts, nil); err != nil {
		return cfg, err
	}
	return cfg, nil
}
