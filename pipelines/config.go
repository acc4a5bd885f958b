package pipelines

import (
	"weir/internal/kafkaclient"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"weir/connectors"
	"weir/pipelines/expr"
	"weir/schemas"
)

// Config is a loaded, validated set of pipeline files.
type Config struct {
	// Dir is path.root: the directory of the pipeline files.
	Dir string
	// Files are the parsed files by name (for diagnostics).
	Files map[string]*hcl.File
	// Broker is the broker block (defaults when absent).
	Broker *Broker
	// Topics are the declared topics in declaration order.
	Topics []*Topic
	// Sources, Streams and Sinks in declaration order.
	Sources []*Source
	Streams []*Stream
	Sinks   []*Sink
	// Vars are the resolved input variables.
	Vars map[string]cty.Value
	// Graph is the wiring of sources, topics, streams and sinks.
	Graph *Graph
	// Tests are the test blocks (Options.Tests; testblocks.go).
	Tests []*Test
}

// Broker is the broker block: an embedded broker's settings, or the
// addresses of an external cluster.
type Broker struct {
	// External lists bootstrap brokers of an external cluster (empty:
	// embedded broker).
	External []string
	// SchemaRegistry is an external registry URL (external brokers).
	SchemaRegistry string
	// Client is how weir connects to the external cluster and registry
	// (security.protocol, TLS, SASL, registry TLS and basic auth), from
	// the client_config attribute; its secrets print as [redacted].
	Client kafkaclient.Settings
	// ClientConfig is client_config as written, secrets redacted (for
	// printing).
	ClientConfig map[string]string
	// props is client_config with its secrets (ClientProperties),
	// behind a pointer so that printing a Broker shows an address, not
	// the secrets.
	props *map[string]string
	// WorkerGroup is worker_group: the name of the worker group `weir
	// run` joins (pipelines/workgroup; the --group flag wins), "" for a
	// process on its own. Needs external brokers.
	WorkerGroup string
	// Embedded broker settings.
	DataDir      string
	KafkaAddr    string
	RegistryAddr string
	AdminAddr    string
	Configs      map[string]string
	// RegistryConfig is registry_config as written, secrets redacted:
	// the embedded registry's settings (RegistryConfigs).
	RegistryConfig map[string]string
	regConfigs     *map[string]string
	Range          hcl.Range
}

// RegistryConfigs is registry_config with its secrets in clear, for the
// embedded registry (node.Config.RegistryConfigs); never print it.
func (b *Broker) RegistryConfigs() map[string]string {
	if b.regConfigs == nil {
		return nil
	}
	return *b.regConfigs
}

// ClientProperties is client_config with its secrets in clear, for the
// kinds that connect to the cluster themselves (RunOptions); never print
// it.
func (b *Broker) ClientProperties() map[string]string {
	if b.props == nil {
		return nil
	}
	return *b.props
}

// Embedded reports whether weir run starts its own broker.
func (b *Broker) Embedded() bool { return len(b.External) == 0 }

// Topic is a declared topic.
type Topic struct {
	Label             string
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
	// SchemaText is the Avro schema of values ("": JSON values), Schema
	// its parse.
	SchemaText string
	Schema     *schemas.Schema
	Range      hcl.Range
	// Hash identifies the declaration's effective settings.
	Hash string
}

// Component is what sources, streams and sinks share.
type Component struct {
	// Type is "source", "stream" or "sink".
	Type string
	// Kind is the connector kind (sources and sinks).
	Kind string
	Name string
	// Hash identifies the effective settings: a component whose hash is
	// unchanged across a reload keeps running.
	Hash  string
	Range hcl.Range
}

// ID is "type.name".
func (c *Component) ID() string { return c.Type + "." + c.Name }

// Source is a source block: a connector writing to Topic, through Steps.
type Source struct {
	Component
	Connector *connectors.Kind
	// Raw are the connector settings as given (before Spec.Decode), so
	// the runner can decode them again with run-time settings.
	Raw map[string]any
	// Config is the decoded connector config.
	Config connectors.Config
	Topic  string
	Steps  *Chain
	// BlockTopics are the topics the source writes for its nested
	// blocks (a mysql source's tables), in order (srcblocks.go).
	BlockTopics []BlockTopic
	// ExactlyOnce is exactly_once: records and positions are written in
	// one transaction per commit (connectors.SourceOptions.ExactlyOnce).
	ExactlyOnce bool
	// Group-less; positions live in the connector offsets topic.
}

// Stream is a stream block: reads From, applies Steps, writes To (or a
// route's topic).
type Stream struct {
	Component
	From  []string
	To    string
	Steps *Chain
	Group string
	// Balancer is the group's assignment strategy ("" = the default,
	// cooperative-sticky).
	Balancer string
	// ExactlyOnce is exactly_once (eos.go).
	ExactlyOnce bool

	// keyFn is select_key: the new key of each record (nil: unchanged).
	keyFn expr.Fn
	// agg is the stream's aggregation (group_by, window, count or
	// aggregate); nil for a stateless stream.
	agg *aggSpec
}

// Stateful reports whether the stream aggregates (count or aggregate,
// perhaps windowed): it then runs as a streams application with state
// stores, and Group is its application id.
func (s *Stream) Stateful() bool { return s.agg != nil }

// Sink is a sink block: a connector reading From.
type Sink struct {
	Component
	Connector *connectors.Kind
	Raw       map[string]any
	Config    connectors.Config
	From      []string
	Group     string
	// Balancer is the group's assignment strategy ("" = the default,
	// cooperative-sticky).
	Balancer string
	// InstanceID makes the sink a static group member (Kafka's
	// group.instance.id, KIP-345; "" = dynamic): a restart with the same
	// id takes its old place without a rebalance.
	InstanceID string
}

// Topic returns the declared topic called name (nil if undeclared).
func (c *Config) Topic(name string) *Topic {
	for _, t := range c.Topics {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Components returns every source, stream and sink.
func (c *Config) Components() []*Component {
	var out []*Component
	for _, s := range c.Sources {
		out = append(out, &s.Component)
	}
	for _, s := range c.Streams {
		out = append(out, &s.Component)
	}
	for _, s := range c.Sinks {
		out = append(out, &s.Component)
	}
	return out
}
