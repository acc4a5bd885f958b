package topicconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Dynamic broker configs (Kafka's KIP-226). A Broker made by NewBroker is
// live: besides its static configuration it holds the dynamic overrides
// of the cluster default (resource "", DYNAMIC_DEFAULT_BROKER_CONFIG) and
// of this broker (resource = its node id, DYNAMIC_BROKER_CONFIG), which
// the metadata layer replaces with SetDynamic whenever they change. Every
// reader (Value, Get, the typed getters, Resolve of a topic's overrides)
// sees the effective value, in Kafka's precedence:
//
//	dynamic per-broker > dynamic cluster default > static > default
//
// OnChange registers the code that applies a change without a restart.

// More config sources, Kafka's wire numbers.
const (
	SourceDynamicBroker        Source = 2
	SourceDynamicDefaultBroker Source = 3
)

// layers are the dynamic overrides in effect (never modified once
// published).
type layers struct {
	broker, cluster map[string]string
}

var noLayers = &layers{}

// live is the mutable part shared by a live Broker.
type live struct {
	cur      atomic.Pointer[layers]
	mu       sync.Mutex // serializes SetDynamic and the watcher list
	next     int
	watchers map[int]func(names []string)
}

// dyn returns the dynamic layers b reads.
func (b *Broker) dyn() *layers {
	if b.frozen != nil {
		return b.frozen
	}
	if b.live != nil {
		if l := b.live.cur.Load(); l != nil {
			return l
		}
	}
	return noLayers
}

// snapshot returns a Broker that keeps the dynamic values in effect now
// (a Resolved keeps one, so its fields and Value agree).
func (b *Broker) snapshot() *Broker {
	if b.live == nil {
		return b
	}
	return &Broker{static: b.static, frozen: b.dyn()}
}

// lookup returns name's value from the highest layer that sets it,
// defaults excluded.
func (b *Broker) lookup(name string) (string, Source, bool) {
	l := b.dyn()
	if v, ok := l.broker[name]; ok {
		return v, SourceDynamicBroker, true
	}
	if v, ok := l.cluster[name]; ok {
		return v, SourceDynamicDefaultBroker, true
	}
	if v, ok := b.static[name]; ok {
		return v, SourceStaticBroker, true
	}
	return "", SourceUnknown, false
}

// Get returns broker config name's effective value (dynamic per-broker >
// dynamic cluster default > static > default); ok is false when it has
// none.
func (b *Broker) Get(name string) (string, bool) {
	v, _, ok := b.Value(name)
	return v, ok
}

// Dynamic returns copies of the dynamic overrides in effect: this
// broker's and the cluster default's.
func (b *Broker) Dynamic() (perBroker, clusterDefault map[string]string) {
	l := b.dyn()
	return maps.Clone(l.broker), maps.Clone(l.cluster)
}

// SetDynamic replaces the dynamic overrides (the metadata's current sets
// for this node and for the cluster default; nil = none) and runs the
// OnChange functions with the broker config names whose effective value
// changed. It is a no-op on Defaults() and returns the changed names.
func (b *Broker) SetDynamic(perBroker, clusterDefault map[string]string) []string {
	if b.live == nil {
		return nil
	}
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	before := b.snapshot()
	b.live.cur.Store(&layers{broker: maps.Clone(perBroker), cluster: maps.Clone(clusterDefault)})
	names := map[string]bool{}
	for _, l := range []*layers{before.frozen, b.dyn()} {
		for n := range l.broker {
			names[n] = true
		}
		for n := range l.cluster {
			names[n] = true
		}
	}
	var changed []string
	for n := range names {
		v0, s0, ok0 := before.Value(n)
		v1, s1, ok1 := b.Value(n)
		if v0 != v1 || s0 != s1 || ok0 != ok1 {
			changed = append(changed, n)
		}
	}
	slices.Sort(changed)
	if len(changed) > 0 {
		for _, k := range slices.Sorted(maps.Keys(b.live.watchers)) {
			b.live.watchers[k](changed)
		}
	}
	return changed
}

// OnChange registers fn to run after every dynamic change with the broker
// config names whose effective value changed (sorted). fn runs on the
// goroutine that applies metadata: it must be quick and must not block
// (start a goroutine for slow work). cancel unregisters it.
func (b *Broker) OnChange(fn func(names []string)) (cancel func()) {
	if b.live == nil {
		return func() {}
	}
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	if b.live.watchers == nil {
		b.live.watchers = map[int]func([]string){}
	}
	id := b.live.next
	b.live.next++
	b.live.watchers[id] = fn
	return func() {
		b.live.mu.Lock()
		delete(b.live.watchers, id)
		b.live.mu.Unlock()
	}
}

// Kafka's dynamically updatable broker configs (DynamicBrokerConfig
// .AllDynamicConfigs) that weir knows and applies: the broker defaults of
// topic configs (DynamicLogConfig: the first broker synonym of each topic
// config, except log.message.format.version), the log cleaner's, the
// producer-state ones, the connection limits, and the replication
// throttles (QuotaConfig.brokerQuotaConfigs). All may be set for the
// cluster default or one broker. Kafka's per-broker-only configs
// (listeners, SSL key stores, ...) are reconfigured there by rebuilding
// the listener; weir cannot do that live, so it refuses them as it refuses
// every other static config.
var dynamicNames = func() map[string]bool {
	m := map[string]bool{
		"log.cleaner.threads":                       true,
		"log.cleaner.dedupe.buffer.size":            true,
		"log.cleaner.io.buffer.load.factor":         true,
		"log.cleaner.io.buffer.size":                true,
		"log.cleaner.io.max.bytes.per.second":       true,
		"log.cleaner.backoff.ms":                    true,
		BrokerMessageMaxBytes:                       true,
		BrokerProducerIDExpirationMs:                true,
		"transaction.partition.verification.enable": true,
		BrokerMaxConnectionsPerIP:                   true,
		BrokerMaxConnectionsOverride:                true,
		BrokerMaxConnections:                        true,
		BrokerLeaderReplicationThrottledRate:        true,
		BrokerFollowerReplicationThrottledRate:      true,
		BrokerReplicaAlterLogDirsIOMaxBytes:         true,
	}
	for i := range topicDefs {
		d := &topicDefs[i]
		if len(d.Synonyms) > 0 && d.Name != "message.format.version" {
			m[d.Synonyms[0].Name] = true
		}
	}
	return m
}()

// IsDynamic reports whether broker config name can be changed at runtime
// (AlterConfigs / IncrementalAlterConfigs on a BROKER resource).
func IsDynamic(name string) bool { return dynamicNames[name] }

// DynamicNames returns the dynamically updatable broker configs, sorted.
func DynamicNames() []string { return slices.Sorted(maps.Keys(dynamicNames)) }

// ValidateDynamic checks a BROKER resource's whole new set of dynamic
// overrides as Kafka's DynamicBrokerConfig.validateConfigs does: no
// static-only config ("Cannot update these configs dynamically: [...]"),
// every value of its type and range. perBroker is false for the cluster
// default. Names Kafka does not know are accepted and stored, as Kafka
// accepts custom broker configs. Errors wrap ErrInvalidRequest: Kafka
// answers all of these with INVALID_REQUEST.
func ValidateDynamic(configs map[string]string, perBroker bool) error {
	names := slices.Sorted(maps.Keys(configs))
	var static []string
	for _, n := range names {
		if _, known := brokerByName[n]; known && !dynamicNames[n] {
			static = append(static, n)
		} else if _, ok := listenerOverride(n); ok {
			static = append(static, n)
		}
	}
	if len(static) > 0 {
		return fmt.Errorf("%w: Cannot update these configs dynamically: [%s]", ErrInvalidRequest, strings.Join(static, ", "))
	}
	for _, n := range names {
		d, known := brokerByName[n]
		if !known {
			continue
		}
		if msg := kafkaValueError(d, configs[n]); msg != "" {
			return fmt.Errorf("%w: Invalid value %s for configuration %s: %s", ErrInvalidRequest, configs[n], n, msg)
		}
	}
	return nil
}

// throttleDefs are the replication throttles (Kafka's
// QuotaConfig.brokerQuotaConfigs): dynamic-only broker configs, in bytes
// per second for the whole broker; Long.MAX_VALUE means none. broker/replica
// applies them to the replicas the topics' *.replication.throttled.replicas
// name.
var throttleDefs = []Def{
	{Name: BrokerLeaderReplicationThrottledRate, Type: TypeLong, Default: maxLongString, HasDefault: true, dynamicOnly: true, check: atLeast(0),
		Doc: "Bytes per second the leaders of throttled replicas send to followers, for the whole broker."},
	{Name: BrokerFollowerReplicationThrottledRate, Type: TypeLong, Default: maxLongString, HasDefault: true, dynamicOnly: true, check: atLeast(0),
		Doc: "Bytes per second throttled follower replicas fetch, for the whole broker."},
	{Name: BrokerReplicaAlterLogDirsIOMaxBytes, Type: TypeLong, Default: maxLongString, HasDefault: true, dynamicOnly: true, check: atLeast(0),
		Doc: "Bytes per second moving replicas between log directories may use."},
}

// kafkaValueError checks v as d's value and words a failure as Kafka's
// ConfigDef does ("" when v is valid).
func kafkaValueError(d *Def, v string) string {
	err := d.checkValue(v)
	if err == nil {
		return ""
	}
	v = strings.TrimSpace(v)
	typeErr := false
	switch d.Type {
	case TypeBoolean:
		if _, e := parseBool(v); e != nil {
			return "Expected value to be either true or false"
		}
	case TypeInt:
		_, e := parseInt(v, 32)
		typeErr = e != nil
	case TypeShort:
		_, e := parseInt(v, 16)
		typeErr = e != nil
	case TypeLong:
		_, e := parseInt(v, 64)
		typeErr = e != nil
	case TypeDouble:
		_, e := parseDouble(v)
		typeErr = e != nil
	}
	if typeErr {
		return "Not a number of type " + d.Type.String()
	}
	msg := err.Error()
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// ValidateChange is ValidateDynamic for a change of this broker's own
// overrides (perBroker) or of the cluster default, checked also against
// the other layer in effect: the configuration that would result must
// still resolve for a topic without overrides (cross-config rules such as
// min.compaction.lag.ms <= max.compaction.lag.ms).
func (b *Broker) ValidateChange(configs map[string]string, perBroker bool) error {
	if err := ValidateDynamic(configs, perBroker); err != nil {
		return err
	}
	cur := b.dyn()
	next := &layers{broker: cur.broker, cluster: configs}
	if perBroker {
		next = &layers{broker: configs, cluster: cur.cluster}
	}
	if _, err := (&Broker{static: b.static, frozen: next}).Resolve(nil); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.TrimPrefix(err.Error(), ErrInvalidValue.Error()+": "))
	}
	return nil
}
