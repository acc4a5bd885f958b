package pipelines

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"weir/connectors"
	"weir/internal/kafkaclient/balancer"
	"weir/pipelines/expr"
)

// Meta-arguments: settings of source, stream and sink blocks that belong
// to the pipeline, not to the connector (a connector whose spec declares
// "topic" also receives the source's topic).
const (
	metaTopic      = "topic"
	metaFrom       = "from"
	metaTo         = "to"
	metaTransforms = "transforms"
	metaGroup      = "group"
	metaBalancer   = "balancer"
	metaInstanceID = "instance_id"
	// metaExactlyOnce makes a source write its records and positions in
	// one Kafka transaction per commit (Kafka Connect's
	// exactly.once.support, KIP-618).
	metaExactlyOnce = "exactly_once"
	// registrySetting is filled with the run's schema registry URL when a
	// kind declares it and the block leaves it unset.
	registrySetting = "schema_registry"
	brokersSetting  = "brokers"
)

// MetaSettings are the settings a source or sink block (typ "source" or
// "sink") takes besides its kind's spec, documented as spec fields are.
// A source block also takes the transform step blocks (StepKinds).
func MetaSettings(typ string) []connectors.Field {
	if typ == "source" {
		return []connectors.Field{
			{Name: metaTopic, Type: connectors.String, Required: true, Doc: "the topic the source writes its records to: topic.<name> or a topic name"},
			{Name: metaTransforms, Type: connectors.StringList, Doc: "names of transform blocks whose steps run over each record, before the step blocks written inside the source"},
			{Name: metaExactlyOnce, Type: connectors.Bool, Default: false, Doc: "write each commit interval's records and the source positions they reach in one Kafka transaction (Kafka Connect's exactly.once.support): after a crash the source resumes from the last committed positions and consumers reading with isolation.level=read_committed see each record once; the http source answers a request only once its records are committed"},
		}
	}
	return []connectors.Field{
		{Name: metaFrom, Type: connectors.StringList, Required: true, Doc: "the topics the sink reads: topic.<name>, source.<name>.topic or topic names"},
		{Name: metaGroup, Type: connectors.String, Doc: "the sink's consumer group; unset, weir-sink-<name>"},
		{Name: metaBalancer, Type: connectors.String, Enum: balancer.Names, Default: balancer.Default, Doc: "the consumer group's partition-assignment strategy (Kafka's partition.assignment.strategy)"},
		{Name: metaInstanceID, Type: connectors.String, Doc: "makes the sink a static member of its group (Kafka's group.instance.id): a restart within the session timeout keeps its partitions without a rebalance"},
	}
}

func (l *loader) lookupKind(b *hcl.Block, wantSource bool) (*connectors.Kind, hcl.Diagnostics) {
	typ := "sink"
	if wantSource {
		typ = "source"
	}
	var names []string
	for _, k := range l.opts.Registry.Kinds() {
		if k.IsSource() == wantSource {
			names = append(names, strings.TrimSuffix(k.Name, "-"+typ))
		}
	}
	k, err := lookupKind(l.opts.Registry, b.Labels[0], wantSource)
	if err == nil && k.IsSource() != wantSource {
		other := "sink"
		if k.IsSource() {
			other = "source"
		}
		err = fmt.Errorf("%q is a %s kind", b.Labels[0], other)
	}
	if err != nil {
		detail := fmt.Sprintf("There is no %s kind %q.%s Known %s kinds: %s.", typ, b.Labels[0], suggest(b.Labels[0], names), typ, joinNames(names))
		if !errors.Is(err, connectors.ErrUnknownKind) {
			detail = fmt.Sprintf("%v, not a %s kind. Known %s kinds: %s.", err, typ, typ, joinNames(names))
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: fmt.Sprintf("Unknown %s kind", typ),
			Detail: detail, Subject: b.LabelRanges[0].Ptr()}}
	}
	return k, nil
}

// lookupKind finds the kind of a source or sink block labelled label.
// The registry has one namespace for sources and sinks, so a sink kind
// whose name a source already takes ("file") registers as "file-sink"
// (and a source as "<name>-source"); the HCL label stays "file".
func lookupKind(r *connectors.Registry, label string, source bool) (*connectors.Kind, error) {
	k, err := r.Lookup(label)
	if err == nil && k.IsSource() == source {
		return k, nil
	}
	suffix := "-sink"
	if source {
		suffix = "-source"
	}
	if k2, err2 := r.Lookup(label + suffix); err2 == nil && k2.IsSource() == source {
		return k2, nil
	}
	return k, err
}

// connectorSchema is the body schema of a connector block: the kind's
// spec fields plus the pipeline's meta-arguments (and step blocks for
// sources).
func connectorSchema(k *connectors.Kind, source bool) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	if source {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: metaTopic, Required: true},
			hcl.AttributeSchema{Name: metaTransforms}, hcl.AttributeSchema{Name: metaExactlyOnce})
		s.Blocks = stepBlocks()
	} else {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: metaFrom, Required: true},
			hcl.AttributeSchema{Name: metaGroup}, hcl.AttributeSchema{Name: metaBalancer},
			hcl.AttributeSchema{Name: metaInstanceID})
	}
	s.Blocks = append(slices.Clip(s.Blocks), nestedBlockTypes(k)...)
	for _, f := range k.Spec.Fields {
		if source && (f.Name == metaTopic || f.Name == metaExactlyOnce) {
			continue
		}
		if !source && (f.Name == metaFrom || f.Name == metaGroup || f.Name == metaBalancer || f.Name == metaInstanceID) {
			continue
		}
		req := f.Required && !runSetting(f.Name)
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: f.Name, Required: req})
	}
	return s
}

// decodeSettings evaluates a connector block's spec settings, checking
// each against its field, then the whole config against the spec.
func (l *loader) decodeSettings(b *hcl.Block, k *connectors.Kind, c *hcl.BodyContent, extra map[string]any, meta ...string) (map[string]any, connectors.Config, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	raw := map[string]any{}
	for n, v := range extra {
		raw[n] = v
	}
	ok := true
	for _, a := range sortedAttrs(c.Attributes) {
		f, isField := k.Spec.Field(a.Name)
		if !isField || slices.Contains(meta, a.Name) {
			continue // a meta-argument
		}
		gv, d := l.fieldValue(fmt.Sprintf("%s %q", b.Labels[0], b.Labels[1]), f, a)
		diags = append(diags, d...)
		if d.HasErrors() {
			ok = false
			continue
		}
		raw[f.Name] = gv
	}
	if !ok || c == nil {
		return raw, nil, diags
	}
	for _, f := range k.Spec.Fields {
		if _, set := raw[f.Name]; f.Required && !set && !runSetting(f.Name) {
			// Reported by the body schema (or by the meta-argument that
			// failed): checking the whole spec would only repeat it.
			return raw, nil, diags
		}
	}
	cfg, err := DecodeConnector(k, raw, RunSettings{SchemaRegistry: l.opts.SchemaRegistryURL, Brokers: l.opts.Brokers})
	if err != nil {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid connector settings",
			Detail:  fmt.Sprintf("%s %s %q: %s.", b.Type, b.Labels[0], b.Labels[1], strings.TrimPrefix(err.Error(), connectors.ErrConfig.Error()+": ")),
			Subject: b.DefRange.Ptr()})
		return raw, nil, diags
	}
	return raw, cfg, diags
}

// fieldValue evaluates one connector setting and checks it against its
// field; what names the block in messages.
func (l *loader) fieldValue(what string, f connectors.Field, a *hcl.Attribute) (any, hcl.Diagnostics) {
	v, diags := l.value(a.Expr)
	if diags.HasErrors() {
		return nil, diags
	}
	gv := ctyToGo(v)
	one := f
	one.Required = false
	if _, err := (connectors.Spec{Fields: []connectors.Field{one}}).Decode(map[string]any{f.Name: gv}); err != nil {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid connector setting",
			Detail:  fmt.Sprintf("%s: %s.", what, strings.TrimPrefix(err.Error(), connectors.ErrConfig.Error()+": ")),
			Subject: a.Expr.Range().Ptr()})
	}
	return gv, diags
}

// clientConfigSetting is the connection settings of a kind that
// connects to a Kafka cluster itself (the kafka sink).
const clientConfigSetting = "client_config"

func runSetting(name string) bool {
	return name == registrySetting || name == registrySetting+"_url" || name == brokersSetting
}

// RunSettings are what weir run knows and connectors may declare: a
// kind whose spec has a "schema_registry" or "schema_registry_url"
// (string) or "brokers" (list)
// setting that the block leaves unset gets the run's values.
type RunSettings struct {
	SchemaRegistry string
	Brokers        []string
	// ClientConfig is the broker block's client_config, given with the
	// brokers to a kind with a "client_config" (map) setting that leaves
	// both unset.
	ClientConfig map[string]string
	// RegistryConfig is the registry client settings of client_config
	// (kafkaclient.RegistryProperties), given with the registry URL to a
	// kind with a schema_registry_config setting that leaves both unset.
	RegistryConfig map[string]string
}

// DecodeConnector decodes raw settings through k's spec with the run's
// settings filled in.
func DecodeConnector(k *connectors.Kind, raw map[string]any, rs RunSettings) (connectors.Config, error) {
	m := make(map[string]any, len(raw)+2)
	for n, v := range raw {
		m[n] = v
	}
	for _, name := range []string{registrySetting, registrySetting + "_url"} {
		if f, ok := k.Spec.Field(name); ok && f.Type == connectors.String && rs.SchemaRegistry != "" {
			if _, set := m[name]; !set {
				m[name] = rs.SchemaRegistry
				_, haveCfg := m[connectors.RegistryConfigSetting]
				if f, ok := k.Spec.Field(connectors.RegistryConfigSetting); ok && f.Type == connectors.StringMap && !haveCfg && len(rs.RegistryConfig) > 0 {
					cc := make(map[string]any, len(rs.RegistryConfig))
					for k, v := range rs.RegistryConfig {
						cc[k] = v
					}
					m[connectors.RegistryConfigSetting] = cc
				}
			}
		}
	}
	if f, ok := k.Spec.Field(brokersSetting); ok && f.Type == connectors.StringList && len(rs.Brokers) > 0 {
		if _, set := m[brokersSetting]; !set {
			bs := make([]any, len(rs.Brokers))
			for i, b := range rs.Brokers {
				bs[i] = b
			}
			m[brokersSetting] = bs
			if f, ok := k.Spec.Field(clientConfigSetting); ok && f.Type == connectors.StringMap && len(rs.ClientConfig) > 0 {
				if _, set := m[clientConfigSetting]; !set {
					cc := make(map[string]any, len(rs.ClientConfig))
					for k, v := range rs.ClientConfig {
						cc[k] = v
					}
					m[clientConfigSetting] = cc
				}
			}
		}
	}
	return k.Spec.Decode(m)
}

func (l *loader) hashOf(parts ...string) string {
	h := sha256.New()
	h.Write([]byte(l.varsJSON))
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (l *loader) topicHash(name string) string {
	if t := l.cfg.Topic(name); t != nil {
		return t.Hash
	}
	return name
}

func bodyRange(b *hcl.Block) hcl.Range {
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		return hcl.RangeBetween(b.DefRange, sb.SrcRange)
	}
	return b.DefRange
}

func (l *loader) decodeSource(b *hcl.Block) (*Source, hcl.Diagnostics) {
	k, diags := l.lookupKind(b, true)
	if diags.HasErrors() {
		l.poisoned["source."+b.Labels[1]] = true
		// Still check the steps and references of the body.
		c, _, _ := b.Body.PartialContent(&hcl.BodySchema{Blocks: stepBlocks()})
		if c != nil {
			_, d := l.decodeStepBlocks(c.Blocks, nil)
			diags = append(diags, d...)
		}
		return nil, diags
	}
	c, d := b.Body.Content(connectorSchema(k, true))
	diags = append(diags, d...)
	s := &Source{Component: Component{Type: "source", Kind: b.Labels[0], Name: b.Labels[1], Range: b.DefRange}, Connector: k}
	extra := map[string]any{}
	if a, ok := c.Attributes[metaTopic]; ok {
		t, d := l.stringAttr(a)
		diags = append(diags, d...)
		s.Topic = t
		if !d.HasErrors() {
			l.edge(s.ID(), "topic."+t, a.Expr.Range())
			if _, ok := k.Spec.Field(metaTopic); ok {
				extra[metaTopic] = t
			}
		}
	}
	if a, ok := c.Attributes[metaExactlyOnce]; ok {
		eo, d := l.boolAttr(a)
		diags = append(diags, d...)
		s.ExactlyOnce = eo
	}
	nested, steps := splitNested(k, c)
	nraw, nb, d := l.decodeNested(b, k, nested)
	diags = append(diags, d...)
	for n, v := range nraw {
		extra[n] = v
	}
	raw, cfg, d := l.decodeSettings(b, k, c, extra, metaTopic, metaTransforms, metaExactlyOnce)
	diags = append(diags, l.blockDiags(b, k, raw, d, nb)...)
	s.Raw, s.Config = raw, cfg
	if cfg != nil {
		diags = append(diags, l.blockTopics(s, nb)...)
	} else {
		l.poisoned[s.ID()] = true
	}
	chain, routes, d := l.decodeChain(steps, s.ID())
	diags = append(diags, d...)
	s.Steps = chain
	for _, a := range c.Attributes {
		l.refEdges(s.ID(), a, metaTopic)
	}
	s.Hash = l.hashOf("source", k.Name, rawJSON(raw), s.Topic, l.topicHash(s.Topic), string(l.srcBytes(bodyRange(b))), l.transformsText(c), strings.Join(routes, ","),
		strconv.FormatBool(s.ExactlyOnce))
	return s, diags
}

func (l *loader) decodeSink(b *hcl.Block) (*Sink, hcl.Diagnostics) {
	k, diags := l.lookupKind(b, false)
	if diags.HasErrors() {
		return nil, diags
	}
	c, d := b.Body.Content(connectorSchema(k, false))
	diags = append(diags, d...)
	s := &Sink{Component: Component{Type: "sink", Kind: b.Labels[0], Name: b.Labels[1], Range: b.DefRange}, Connector: k}
	s.Group = "weir-sink-" + s.Name
	diags = append(diags, l.consumerAttrs(c, s.ID(), &s.From, &s.Group, &s.Balancer)...)
	if a, ok := c.Attributes[metaInstanceID]; ok {
		id, d := l.stringAttr(a)
		diags = append(diags, d...)
		if !d.HasErrors() && strings.TrimSpace(id) == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty instance_id",
				Detail:  "instance_id makes the sink a static member of its consumer group (Kafka's group.instance.id); it cannot be empty. Remove it for a dynamic member.",
				Subject: a.Expr.Range().Ptr()})
		}
		s.InstanceID = id
	}
	nested, _ := splitNested(k, c)
	extra, nb, d := l.decodeNested(b, k, nested)
	diags = append(diags, d...)
	raw, cfg, d := l.decodeSettings(b, k, c, extra, metaFrom, metaGroup, metaBalancer, metaInstanceID)
	d = l.blockDiags(b, k, raw, d, nb)
	diags = append(diags, d...)
	s.Raw, s.Config = raw, cfg
	diags = append(diags, l.sinkExactlyOnceDiags(c, cfg)...)
	var th []string
	for _, t := range s.From {
		th = append(th, l.topicHash(t))
	}
	for _, a := range c.Attributes {
		if a.Name != metaFrom {
			l.refEdges(s.ID(), a, "")
		}
	}
	s.Hash = l.hashOf("sink", k.Name, rawJSON(raw), strings.Join(s.From, ","), strings.Join(th, ","), s.Group, s.Balancer, s.InstanceID)
	return s, diags
}

// streamSchema is the body schema of a stream block (built once the
// step kinds have registered).
var streamSchema = sync.OnceValue(func() *hcl.BodySchema {
	return &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: metaFrom, Required: true}, {Name: metaTo, Required: true},
			{Name: metaTransforms}, {Name: metaGroup}, {Name: metaBalancer}, {Name: metaExactlyOnce},
			{Name: opGroupBy}, {Name: opSelectKey}},
		Blocks: append(slices.Clip(stepBlocks()),
			hcl.BlockHeaderSchema{Type: opWindow, LabelNames: []string{"kind"}},
			hcl.BlockHeaderSchema{Type: opCount}, hcl.BlockHeaderSchema{Type: opAggregate}),
	}
})

// consumerAttrs reads what sinks and streams share as group consumers:
// from (with its graph edges), group and balancer; absent ones leave the
// defaults in place.
func (l *loader) consumerAttrs(c *hcl.BodyContent, id string, from *[]string, group, bal *string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if a, ok := c.Attributes[metaFrom]; ok {
		f, d := l.topicList(a, id, false)
		diags = append(diags, d...)
		*from = f
	}
	if a, ok := c.Attributes[metaGroup]; ok {
		g, d := l.stringAttr(a)
		diags = append(diags, d...)
		*group = g
	}
	if a, ok := c.Attributes[metaBalancer]; ok {
		b, d := l.balancerAttr(a)
		diags = append(diags, d...)
		*bal = b
	}
	return diags
}

func (l *loader) decodeStream(b *hcl.Block) (*Stream, hcl.Diagnostics) {
	c, diags := b.Body.Content(streamSchema())
	s := &Stream{Component: Component{Type: "stream", Name: b.Labels[0], Range: b.DefRange}}
	s.Group = "weir-stream-" + s.Name
	diags = append(diags, l.consumerAttrs(c, s.ID(), &s.From, &s.Group, &s.Balancer)...)
	if a, ok := c.Attributes[metaTo]; ok {
		t, d := l.stringAttr(a)
		diags = append(diags, d...)
		s.To = t
		if !d.HasErrors() {
			l.edge(s.ID(), "topic."+t, a.Expr.Range())
		}
	}
	if a, ok := c.Attributes[metaExactlyOnce]; ok {
		eo, d := l.boolAttr(a)
		diags = append(diags, d...)
		s.ExactlyOnce = eo
	}
	// Transform steps first, then the declarative operators.
	steps := &hcl.BodyContent{Attributes: c.Attributes}
	for _, blk := range c.Blocks {
		if !isOpBlock(blk.Type) {
			steps.Blocks = append(steps.Blocks, blk)
		}
	}
	chain, routes, d := l.decodeChain(steps, s.ID())
	diags = append(diags, d...)
	s.Steps = chain
	diags = append(diags, l.decodeOps(c, s, steps.Blocks)...)
	if a, ok := c.Attributes[metaTransforms]; ok && s.agg != nil && s.Steps.hasKind("route") {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Route in an aggregating stream",
			Detail:  "A transform this stream uses has route steps, which send records elsewhere; an aggregating stream writes only its results, to its to topic.",
			Subject: a.Expr.Range().Ptr()})
	}
	var th []string
	for _, t := range append(append([]string{s.To}, s.From...), routes...) {
		th = append(th, l.topicHash(t))
	}
	s.Hash = l.hashOf("stream", strings.Join(s.From, ","), s.To, s.Group, s.Balancer, strconv.FormatBool(s.ExactlyOnce), strings.Join(th, ","), string(l.srcBytes(bodyRange(b))), l.transformsText(c))
	return s, diags
}

// topicList reads from = topic.x or [topic.x, "name"] and adds graph
// edges topic → component.
func (l *loader) topicList(a *hcl.Attribute, id string, _ bool) ([]string, hcl.Diagnostics) {
	ts, diags := l.stringListAttr(a)
	if diags.HasErrors() {
		return nil, diags
	}
	if len(ts) == 0 {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No topics",
			Detail: fmt.Sprintf("%q must name at least one topic.", a.Name), Subject: a.Expr.Range().Ptr()})
	}
	for _, t := range ts {
		l.edge("topic."+t, id, a.Expr.Range())
	}
	return ts, diags
}

// refEdges adds an edge id → topic for every topic reference in a
// connector setting (a kafka sink's destination, say), except skip.
func (l *loader) refEdges(id string, a *hcl.Attribute, skip string) {
	if a.Name == skip {
		return
	}
	for _, tr := range a.Expr.Variables() {
		if tr.RootName() != "topic" || len(tr) < 2 {
			continue
		}
		if ta, ok := tr[1].(hcl.TraverseAttr); ok {
			if name, ok := l.topicNames[ta.Name]; ok {
				l.edge(id, "topic."+name, tr.SourceRange())
			}
		}
	}
}

// transformsText is the source of the transform blocks a component
// uses, for its hash.
func (l *loader) transformsText(c *hcl.BodyContent) string {
	a, ok := c.Attributes[metaTransforms]
	if !ok {
		return ""
	}
	var sb strings.Builder
	for _, tr := range a.Expr.Variables() {
		if len(tr) >= 2 {
			if ta, ok := tr[1].(hcl.TraverseAttr); ok && tr.RootName() == "transform" {
				if tb := l.transforms[ta.Name]; tb != nil {
					sb.Write(l.srcBytes(bodyRange(tb)))
				}
			}
		}
	}
	return sb.String()
}

// decodeChain compiles a component's transforms = [...] then its inline
// steps; routes lists the topics route steps send to.
func (l *loader) decodeChain(c *hcl.BodyContent, id string) (*Chain, []string, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	chain := &Chain{}
	var routes []string
	if a, ok := c.Attributes[metaTransforms]; ok {
		names, d := l.stringListAttr(a)
		diags = append(diags, d...)
		for _, n := range names {
			tb, ok := l.transforms[n]
			if !ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared transform",
					Detail: fmt.Sprintf("No transform named %q is declared.", n), Subject: a.Expr.Range().Ptr()})
				continue
			}
			tc, _, _ := tb.Body.PartialContent(&hcl.BodySchema{Blocks: stepBlocks()})
			steps, d := l.decodeStepBlocks(tc.Blocks, func(topic string, rng hcl.Range) {
				routes = append(routes, topic)
				l.edge(id, "topic."+topic, rng)
			})
			if !d.HasErrors() {
				chain.steps = append(chain.steps, steps...)
			}
		}
	}
	steps, d := l.decodeStepBlocks(c.Blocks, func(topic string, rng hcl.Range) {
		routes = append(routes, topic)
		l.edge(id, "topic."+topic, rng)
	})
	diags = append(diags, d...)
	chain.steps = append(chain.steps, steps...)
	return chain, routes, diags
}

// decodeSteps checks a transform block: only step blocks.
func (l *loader) decodeSteps(body hcl.Body, _ string, route func(string, hcl.Range)) ([]chainStep, hcl.Diagnostics) {
	c, diags := body.Content(&hcl.BodySchema{Blocks: stepBlocks()})
	if c == nil {
		return nil, diags
	}
	steps, d := l.decodeStepBlocks(c.Blocks, route)
	return steps, append(diags, d...)
}

// compileAttr checks and compiles a per-record expression.
func (l *loader) compileAttr(comp *expr.Compiler, a *hcl.Attribute, diags *hcl.Diagnostics) expr.Fn {
	if d := l.checkRefs(a.Expr, true); d.HasErrors() {
		*diags = append(*diags, d...)
		return nil
	}
	se, ok := a.Expr.(hclsyntax.Expression)
	if !ok {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported expression",
			Detail: "Transform expressions must be written in HCL native syntax.", Subject: a.Expr.Range().Ptr()})
		return nil
	}
	f, d := comp.Compile(se)
	*diags = append(*diags, d...)
	return f
}

// balancerAttr reads a sink's or stream's balancer = "range" |
// "roundrobin" | "cooperative-sticky" (the consumer group's assignment
// strategy).
func (l *loader) balancerAttr(a *hcl.Attribute) (string, hcl.Diagnostics) {
	name, diags := l.stringAttr(a)
	if diags.HasErrors() {
		return "", diags
	}
	if _, err := balancer.For(name); err != nil {
		return "", append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown group balancer",
			Detail:  fmt.Sprintf("balancer %q: want one of %s.", name, strings.Join(balancer.Names, ", ")),
			Subject: a.Expr.Range().Ptr()})
	}
	return name, diags
}
