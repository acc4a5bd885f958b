package pipelines

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"weir/broker/httpsec"
	"weir/broker/topicconfig"
	"weir/internal/kafkaclient"
	"weir/schemas"
)

// Embedded broker defaults (architecture.md's ports).
const (
	DefaultDataDir      = ".weir/data"
	DefaultKafkaAddr    = "127.0.0.1:9092"
	DefaultRegistryAddr = "127.0.0.1:8081"
)

var brokerSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "brokers"}, {Name: "schema_registry"}, {Name: "client_config"},
	{Name: "data_dir"}, {Name: "kafka_addr"}, {Name: "registry_addr"}, {Name: "admin_addr"}, {Name: "config"},
	{Name: "registry_config"}, {Name: "worker_group"},
}}

func (l *loader) decodeBroker(b *hcl.Block) hcl.Diagnostics {
	br := &Broker{DataDir: DefaultDataDir, KafkaAddr: DefaultKafkaAddr, RegistryAddr: DefaultRegistryAddr, AdminAddr: "off"}
	l.cfg.Broker = br
	if b == nil {
		return nil
	}
	br.Range = b.DefRange
	c, diags := b.Body.Content(brokerSchema)
	str := func(name string, dst *string) {
		a, ok := c.Attributes[name]
		if !ok {
			return
		}
		s, d := l.stringAttr(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			*dst = s
		}
	}
	str("data_dir", &br.DataDir)
	str("kafka_addr", &br.KafkaAddr)
	str("registry_addr", &br.RegistryAddr)
	str("admin_addr", &br.AdminAddr)
	str("schema_registry", &br.SchemaRegistry)
	str("worker_group", &br.WorkerGroup)
	if a, ok := c.Attributes["worker_group"]; ok && br.WorkerGroup == "" {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty worker group",
			Detail: "worker_group names the group of weir run workers that share these pipelines (a Kafka group id); remove it to run alone.", Subject: a.Expr.Range().Ptr()})
	}
	if a, ok := c.Attributes["brokers"]; ok {
		l2, d := l.stringListAttr(a)
		diags = append(diags, d...)
		br.External = l2
		if !d.HasErrors() && len(l2) == 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty broker list",
				Detail: "brokers names the bootstrap brokers of an external cluster; remove it to run the embedded broker.", Subject: a.Expr.Range().Ptr()})
		}
		l.decodeClientConfig(c, br, &diags)
		for _, emb := range []string{"data_dir", "kafka_addr", "registry_addr", "admin_addr", "config", "registry_config"} {
			if e, ok := c.Attributes[emb]; ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting broker settings",
					Detail:  fmt.Sprintf("%q configures the embedded broker, but brokers names an external cluster: remove one of them.", emb),
					Subject: e.NameRange.Ptr()})
			}
		}
	} else {
		if a, ok := c.Attributes["schema_registry"]; ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting broker settings",
				Detail:  "schema_registry names an external registry, used with external brokers; the embedded broker serves its own on registry_addr.",
				Subject: a.NameRange.Ptr()})
		}
		if a, ok := c.Attributes["worker_group"]; ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting broker settings",
				Detail:  "worker_group makes weir run workers share these pipelines through a cluster they all reach: it needs brokers naming that cluster, not the embedded broker each process runs.",
				Subject: a.NameRange.Ptr()})
		}
		if a, ok := c.Attributes["client_config"]; ok {
			// The embedded registry may ask for TLS and basic auth
			// (registry_config): client_config then says how weir's own
			// clients reach it, with the registry properties only.
			l.decodeClientConfig(c, br, &diags)
			var kafkaProps []string
			for k := range br.ClientConfig {
				if !kafkaclient.IsRegistryProperty(k) {
					kafkaProps = append(kafkaProps, k)
				}
			}
			if len(kafkaProps) > 0 {
				sort.Strings(kafkaProps)
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting broker settings",
					Detail:  fmt.Sprintf("client_config sets %s: with the embedded broker it holds only the settings of its registry (basic.auth.user.info, schema.registry.ssl.*); weir run reaches its embedded broker on its own PLAINTEXT listener.", strings.Join(kafkaProps, ", ")),
					Subject: a.NameRange.Ptr()})
			}
		}
		l.decodeRegistryConfig(c, br, &diags)
	}
	if a, ok := c.Attributes["config"]; ok {
		m, d := l.stringMapAttr(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if _, err := topicconfig.NewBroker(m); err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid broker config",
					Detail: err.Error() + ".", Subject: a.Expr.Range().Ptr()})
			}
			br.Configs = m
		}
	}
	return diags
}

// decodeRegistryConfig reads registry_config: the embedded schema
// registry's settings with the names of `weir broker --registry-config`
// (Confluent Schema Registry's: listeners=https://..., ssl.*,
// authentication.*). listeners replaces registry_addr.
func (l *loader) decodeRegistryConfig(c *hcl.BodyContent, br *Broker, diags *hcl.Diagnostics) {
	a, ok := c.Attributes["registry_config"]
	if !ok {
		return
	}
	m, d := l.stringMapAttr(a)
	*diags = append(*diags, d...)
	if d.HasErrors() {
		return
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(httpsec.RegistryNames(), k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown registry_config setting",
			Detail:  fmt.Sprintf("weir does not read %s (registry_config takes %s).", strings.Join(unknown, ", "), strings.Join(httpsec.RegistryNames(), ", ")),
			Subject: a.Expr.Range().Ptr()})
		return
	}
	if _, ok := m[httpsec.RegistryListeners]; ok {
		if ra, ok := c.Attributes["registry_addr"]; ok {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting broker settings",
				Detail: "registry_config's listeners replaces registry_addr: set one of them.", Subject: ra.NameRange.Ptr()})
			return
		}
		br.RegistryAddr = ""
	}
	br.regConfigs = &m
	br.RegistryConfig = kafkaclient.Redact(m)
}

// decodeClientConfig reads client_config: Kafka client properties (as a
// --command-config file holds them) for the connections to an external
// cluster and its registry. Errors name the property, never a value.
func (l *loader) decodeClientConfig(c *hcl.BodyContent, br *Broker, diags *hcl.Diagnostics) {
	a, ok := c.Attributes["client_config"]
	if !ok {
		return
	}
	m, d := l.stringMapAttr(a)
	*diags = append(*diags, d...)
	if d.HasErrors() {
		return
	}
	set, ignored, err := kafkaclient.ParseProperties(m)
	if err != nil {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid client_config",
			Detail: err.Error() + ".", Subject: a.Expr.Range().Ptr()})
		return
	}
	if len(ignored) > 0 {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown client_config property",
			Detail:  fmt.Sprintf("weir does not read %s (client_config holds security.protocol, sasl.*, ssl.*, client.id and the schema.registry.* / basic.auth.* settings of the registry).", strings.Join(ignored, ", ")),
			Subject: a.Expr.Range().Ptr()})
		return
	}
	if len(set.Brokers) > 0 {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting broker settings",
			Detail: "bootstrap.servers in client_config: name the brokers with brokers = [...].", Subject: a.Expr.Range().Ptr()})
		return
	}
	if len(set.Registry.URLs) > 0 {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting broker settings",
			Detail: "schema.registry.url in client_config: name the registry with schema_registry = \"...\".", Subject: a.Expr.Range().Ptr()})
		return
	}
	br.Client, br.props = set, &m
	br.ClientConfig = kafkaclient.Redact(m)
}

var topicSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "name"}, {Name: "partitions"}, {Name: "replication_factor"}, {Name: "config"}, {Name: "schema"},
}}

// decodeTopicNames resolves each topic's name (its label unless a name
// attribute says otherwise) before anything refers to topics.
func (l *loader) decodeTopicNames(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	byName := map[string]*hcl.Block{}
	for _, b := range blocks {
		label := b.Labels[0]
		name := label
		c, _, _ := b.Body.PartialContent(topicSchema)
		if a, ok := c.Attributes["name"]; ok {
			s, d := l.stringAttr(a)
			diags = append(diags, d...)
			if !d.HasErrors() {
				name = s
			}
		}
		if err := validTopicName(name); err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid topic name",
				Detail: err.Error(), Subject: b.LabelRanges[0].Ptr()})
		}
		if prev, ok := byName[name]; ok && prev != b {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate topic name",
				Detail: fmt.Sprintf("Topic %q is also declared at %s.", name, pos(prev.DefRange)), Subject: b.DefRange.Ptr()})
		}
		byName[name] = b
		if _, ok := l.topicNames[label]; ok {
			l.topicNames[label] = name
		}
	}
	return diags
}

// validTopicName applies Kafka's topic name rules.
func validTopicName(n string) error {
	if n == "" || n == "." || n == ".." {
		return fmt.Errorf("topic name %q is not allowed", n)
	}
	if len(n) > 249 {
		return fmt.Errorf("topic name %q is longer than 249 characters", n)
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q has %q: Kafka topic names use only letters, digits, '.', '_' and '-'", n, r)
		}
	}
	return nil
}

func (l *loader) decodeTopic(b *hcl.Block) (*Topic, hcl.Diagnostics) {
	c, diags := b.Body.Content(topicSchema)
	t := &Topic{Label: b.Labels[0], Name: l.topicNames[b.Labels[0]], Partitions: 1, ReplicationFactor: 1, Range: b.DefRange}
	diags = append(diags, l.topicSettings(t, c)...)
	if a, ok := c.Attributes["schema"]; ok {
		s, d := l.stringAttr(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			sc, err := schemas.Parse(s)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid Avro schema",
					Detail: fmt.Sprintf("Topic %q: %v.", t.Name, err), Subject: a.Expr.Range().Ptr()})
			} else if sc.Root.Kind != schemas.Record {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid Avro schema",
					Detail: fmt.Sprintf("Topic %q: the value schema must be a record, not %s.", t.Name, sc.Root.Kind), Subject: a.Expr.Range().Ptr()})
			} else {
				t.SchemaText, t.Schema = s, sc
			}
			if !l.cfg.Broker.Embedded() && l.cfg.Broker.SchemaRegistry == "" {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No schema registry",
					Detail:  fmt.Sprintf("Topic %q declares an Avro schema, but the broker block names external brokers without schema_registry.", t.Name),
					Subject: a.NameRange.Ptr()})
			}
		}
	}
	t.setHash()
	return t, diags
}

// setHash identifies the topic's effective settings.
func (t *Topic) setHash() {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%d|%d|%s|", t.Name, t.Partitions, t.ReplicationFactor, t.SchemaText)
	ks := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		fmt.Fprintf(h, "%s=%s;", k, t.Configs[k])
	}
	t.Hash = hex.EncodeToString(h.Sum(nil))[:16]
}

// topicSettings reads partitions, replication_factor and config (of a
// topic block, or of the topic block nested in a source's table block).
func (l *loader) topicSettings(t *Topic, c *hcl.BodyContent) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if a, ok := c.Attributes["partitions"]; ok {
		n, d := l.intAttr(a, 1, 100000)
		diags = append(diags, d...)
		t.Partitions = int32(n)
	}
	if a, ok := c.Attributes["replication_factor"]; ok {
		n, d := l.intAttr(a, 1, 32767)
		diags = append(diags, d...)
		t.ReplicationFactor = int16(n)
		if !d.HasErrors() && n > 1 && l.cfg.Broker.Embedded() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Replication factor too large",
				Detail:  fmt.Sprintf("The embedded broker is a single node, so topic %q can have only 1 replica, not %d; set brokers = [...] to use a cluster.", t.Name, n),
				Subject: a.Expr.Range().Ptr()})
		}
	}
	if a, ok := c.Attributes["config"]; ok {
		m, d := l.stringMapAttr(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if err := topicconfig.Defaults().Validate(m); err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid topic config",
					Detail: fmt.Sprintf("Topic %q: %v. Topic configs use Kafka's names (retention.ms, cleanup.policy, segment.bytes, ...).", t.Name, err), Subject: a.Expr.Range().Ptr()})
			}
			t.Configs = m
		}
	}
	return diags
}

// --- typed attribute helpers

func typeDiag(a *hcl.Attribute, want string, v cty.Value) *hcl.Diagnostic {
	got := "null"
	if !v.IsNull() {
		got = v.Type().FriendlyName()
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Incorrect attribute value type",
		Detail: fmt.Sprintf("%q must be %s, not %s.", a.Name, want, got), Subject: a.Expr.Range().Ptr()}
}

func (l *loader) stringAttr(a *hcl.Attribute) (string, hcl.Diagnostics) {
	v, diags := l.value(a.Expr)
	if diags.HasErrors() {
		return "", diags
	}
	if v.IsNull() || v.Type() != cty.String {
		return "", append(diags, typeDiag(a, "a string", v))
	}
	return v.AsString(), diags
}

func (l *loader) boolAttr(a *hcl.Attribute) (bool, hcl.Diagnostics) {
	v, diags := l.value(a.Expr)
	if diags.HasErrors() {
		return false, diags
	}
	if v.IsNull() || v.Type() != cty.Bool {
		return false, append(diags, typeDiag(a, "true or false", v))
	}
	return v.True(), diags
}

func (l *loader) intAttr(a *hcl.Attribute, min, max int64) (int64, hcl.Diagnostics) {
	v, diags := l.value(a.Expr)
	if diags.HasErrors() {
		return 0, diags
	}
	if v.IsNull() || v.Type() != cty.Number {
		return 0, append(diags, typeDiag(a, "a whole number", v))
	}
	f := v.AsBigFloat()
	n, _ := f.Int64()
	if !f.IsInt() || n < min || n > max {
		fv, _ := f.Float64()
		return 0, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value",
			Detail: fmt.Sprintf("%q must be a whole number from %d to %d, not %s.", a.Name, min, max, strconv.FormatFloat(fv, 'g', -1, 64)), Subject: a.Expr.Range().Ptr()})
	}
	return n, diags
}

func (l *loader) stringListAttr(a *hcl.Attribute) ([]string, hcl.Diagnostics) {
	v, diags := l.value(a.Expr)
	if diags.HasErrors() {
		return nil, diags
	}
	if !v.IsNull() && v.Type() == cty.String {
		return []string{v.AsString()}, diags
	}
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		return nil, append(diags, typeDiag(a, "a list of strings", v))
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return nil, append(diags, typeDiag(a, "a list of strings", v))
		}
		out = append(out, e.AsString())
	}
	return out, diags
}

// stringMapAttr reads an object of scalars as strings (Kafka configs are
// strings; numbers and bools are written naturally).
func (l *loader) stringMapAttr(a *hcl.Attribute) (map[string]string, hcl.Diagnostics) {
	v, diags := l.value(a.Expr)
	if diags.HasErrors() {
		return nil, diags
	}
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return nil, append(diags, typeDiag(a, "an object of strings", v))
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		switch {
		case e.IsNull():
			return nil, append(diags, typeDiag(a, "an object of strings", v))
		case e.Type() == cty.String:
			out[k.AsString()] = e.AsString()
		case e.Type() == cty.Number:
			f := e.AsBigFloat()
			if i, acc := f.Int64(); f.IsInt() && acc == 0 {
				out[k.AsString()] = strconv.FormatInt(i, 10)
			} else {
				fv, _ := f.Float64()
				if math.IsInf(fv, 0) {
					return nil, append(diags, typeDiag(a, "an object of strings", v))
				}
				out[k.AsString()] = strconv.FormatFloat(fv, 'f', -1, 64)
			}
		case e.Type() == cty.Bool:
			out[k.AsString()] = strconv.FormatBool(e.True())
		default:
			return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Incorrect attribute value type",
				Detail: fmt.Sprintf("%q: key %q must be a string, number or bool, not %s.", a.Name, k.AsString(), e.Type().FriendlyName()), Subject: a.Expr.Range().Ptr()})
		}
	}
	return out, diags
}
