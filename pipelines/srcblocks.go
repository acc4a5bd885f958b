package pipelines

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"weir/connectors"
)

// Nested blocks of connector settings (connectors.Block), such as the
// table blocks of a mysql source, and references to the topics a source
// writes for them:
//
//	source "mysql" "shop" {
//	  ...
//	  table "customers" {
//	    name            = "inventory.customers"   # default: the label
//	    exclude_columns = ["notes"]
//	    topic { partitions = 3 }     # optional: declares the table's topic
//	  }
//	}
//	sink "elasticsearch" "search" {
//	  from = [source.shop.table["customers"].topic]   # or source.shop.topics
//	}
//
// source.<name> is an object: topic (the source block's topic), topics
// (the topics of its nested blocks, in order) and, per block type whose
// blocks name topics, a map from label to {topic}. A reference to a label
// the source has no block for is an error at the reference.

// BlockTopic is a topic a source writes for one of its nested blocks.
type BlockTopic struct {
	Block string    // block type ("table")
	Label string    // its label ("inventory.customers")
	Topic string    // topic name
	Range hcl.Range // the block's label
}

// nestedBlock is a nested block of a source being decoded.
type nestedBlock struct {
	spec  connectors.Block
	block *hcl.Block
	raw   map[string]any // its settings and label
	topic *hcl.Block     // its nested topic block (nil: none)
}

// blockSchema is the body schema of a nested block: its fields, and a
// topic block when its blocks name topics.
func blockSchema(b connectors.Block) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, f := range b.Fields {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: f.Name, Required: f.Required})
	}
	if b.Topic != nil {
		s.Blocks = append(s.Blocks, hcl.BlockHeaderSchema{Type: "topic"})
	}
	return s
}

var nestedTopicSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "partitions"}, {Name: "replication_factor"}, {Name: "config"},
}}

// decodeNested evaluates the nested blocks of a connector block into
// raw settings (type → list of {label, fields}).
func (l *loader) decodeNested(b *hcl.Block, k *connectors.Kind, blocks hcl.Blocks) (map[string]any, []nestedBlock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	raw := map[string]any{}
	var out []nestedBlock
	for _, nb := range blocks {
		sb, ok := k.Spec.Block(nb.Type)
		if !ok {
			continue
		}
		c, d := nb.Body.Content(blockSchema(sb))
		diags = append(diags, d...)
		m := map[string]any{sb.Label: nb.Labels[0]}
		what := fmt.Sprintf("%s %q, %s %q", b.Labels[0], b.Labels[1], nb.Type, nb.Labels[0])
		for _, a := range sortedAttrs(c.Attributes) {
			f, _ := sb.Field(a.Name)
			gv, d := l.fieldValue(what, f, a)
			diags = append(diags, d...)
			if !d.HasErrors() {
				m[f.Name] = gv
			}
		}
		n := nestedBlock{spec: sb, block: nb, raw: m}
		for i, tb := range c.Blocks {
			if i > 0 {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate topic block",
					Detail:  fmt.Sprintf("A %s block declares its topic once; the first topic block is at %s.", nb.Type, pos(c.Blocks[0].DefRange)),
					Subject: tb.DefRange.Ptr()})
				continue
			}
			n.topic = tb
		}
		raw[nb.Type] = append(anyList(raw[nb.Type]), m)
		out = append(out, n)
	}
	return raw, out, diags
}

func anyList(v any) []any { l, _ := v.([]any); return l }

// nestedBlockTypes are the block header schemas of a kind's nested blocks.
func nestedBlockTypes(k *connectors.Kind) []hcl.BlockHeaderSchema {
	var out []hcl.BlockHeaderSchema
	for _, b := range k.Spec.Blocks {
		out = append(out, hcl.BlockHeaderSchema{Type: b.Type, LabelNames: []string{b.Label}})
	}
	return out
}

// splitNested separates a source body's nested connector blocks from its
// transform step blocks.
func splitNested(k *connectors.Kind, c *hcl.BodyContent) (nested hcl.Blocks, steps *hcl.BodyContent) {
	steps = &hcl.BodyContent{Attributes: c.Attributes, MissingItemRange: c.MissingItemRange}
	for _, b := range c.Blocks {
		if _, ok := k.Spec.Block(b.Type); ok {
			nested = append(nested, b)
		} else {
			steps.Blocks = append(steps.Blocks, b)
		}
	}
	return nested, steps
}

// blockTopics resolves the topics of s's nested blocks once its config is
// decoded: graph edges source → topic, and the topics that nested topic
// blocks declare.
func (l *loader) blockTopics(s *Source, nested []nestedBlock) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, n := range nested {
		if n.spec.Topic == nil {
			if n.topic != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unexpected topic block",
					Detail: fmt.Sprintf("A %s block of a %s source writes no topic of its own.", n.block.Type, s.Kind), Subject: n.topic.DefRange.Ptr()})
			}
			continue
		}
		label := n.block.Labels[0]
		var bc connectors.Config
		for _, c := range s.Config.Blocks(n.spec.Type) {
			if c.String(n.spec.Label) == label {
				bc = c
			}
		}
		name := n.spec.Topic(s.Config, bc)
		lr := n.block.LabelRanges[0]
		if err := validTopicName(name); err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid topic name",
				Detail: fmt.Sprintf("The topic of %s %q: %v.", n.block.Type, label, err), Subject: lr.Ptr()})
			continue
		}
		s.BlockTopics = append(s.BlockTopics, BlockTopic{Block: n.spec.Type, Label: label, Topic: name, Range: lr})
		l.edge(s.ID(), "topic."+name, lr)
		if n.topic == nil {
			continue
		}
		c, d := n.topic.Body.Content(nestedTopicSchema)
		diags = append(diags, d...)
		if prev := l.cfg.Topic(name); prev != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate topic name",
				Detail:  fmt.Sprintf("Topic %q is also declared at %s; declare it once.", name, pos(prev.Range)),
				Subject: n.topic.DefRange.Ptr()})
			continue
		}
		t := &Topic{Label: fmt.Sprintf("%s.%s[%q]", s.ID(), n.spec.Type, label), Name: name, Partitions: 1, ReplicationFactor: 1, Range: n.topic.DefRange}
		diags = append(diags, l.topicSettings(t, c)...)
		t.setHash()
		l.cfg.Topics = append(l.cfg.Topics, t)
	}
	return diags
}

// sourceRef is what references to source.<name> can see.
type sourceRef struct {
	src    *Source
	blocks map[string]map[string]string // block type → label → topic
	types  []string                     // block types that name topics
}

// setSources makes source.<name> referable (after every source block is
// decoded: sinks and streams may refer to them).
func (l *loader) setSources() {
	l.sources = map[string]*sourceRef{}
	vals := map[string]cty.Value{}
	for _, s := range l.cfg.Sources {
		r := &sourceRef{src: s, blocks: map[string]map[string]string{}}
		if s.Connector != nil {
			for _, b := range s.Connector.Spec.Blocks {
				if b.Topic != nil {
					r.types = append(r.types, b.Type)
					r.blocks[b.Type] = map[string]string{}
				}
			}
		}
		attrs := map[string]cty.Value{"topic": cty.StringVal(s.Topic)}
		var all []cty.Value
		for _, bt := range s.BlockTopics {
			r.blocks[bt.Block][bt.Label] = bt.Topic
			all = append(all, cty.StringVal(bt.Topic))
		}
		attrs["topics"] = cty.ListValEmpty(cty.String)
		if len(all) > 0 {
			attrs["topics"] = cty.ListVal(all)
		}
		entry := cty.Object(map[string]cty.Type{"topic": cty.String})
		for _, typ := range r.types {
			m := map[string]cty.Value{}
			for label, topic := range r.blocks[typ] {
				m[label] = cty.ObjectVal(map[string]cty.Value{"topic": cty.StringVal(topic)})
			}
			attrs[typ] = cty.MapValEmpty(entry)
			if len(m) > 0 {
				attrs[typ] = cty.MapVal(m)
			}
		}
		l.sources[s.Name] = r
		vals[s.Name] = cty.ObjectVal(attrs)
	}
	l.sourceVals = vals
	l.buildContext(l.topicNames)
}

// checkSourceRef checks a reference source.<name>...: the source exists,
// the attribute is one it has, and a label is one of its blocks.
func (l *loader) checkSourceRef(tr hcl.Traversal) hcl.Diagnostics {
	rng := tr.SourceRange()
	if l.sources == nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid reference",
			Detail:  "The topics of a source can be referenced from sinks and streams, not here (topics, transforms and sources are evaluated before them).",
			Subject: rng.Ptr()}}
	}
	name, ok := traverseName(tr, 1)
	if !ok {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid reference",
			Detail: "\"source\" must be followed by a source name, as in source.shop.topics.", Subject: rng.Ptr()}}
	}
	r, ok := l.sources[name]
	if !ok {
		if l.poisoned["source."+name] {
			return hcl.Diagnostics{suppressed}
		}
		known := keysOf(l.sources)
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reference to undeclared source",
			Detail: fmt.Sprintf("No source named %q is declared.%s", name, suggest(name, known)), Subject: rng.Ptr()}}
	}
	if len(tr) < 3 {
		return nil
	}
	attr, ok := traverseName(tr, 2)
	attrs := append([]string{"topic", "topics"}, r.types...)
	if !ok || !slices.Contains(attrs, attr) {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unsupported attribute",
			Detail: fmt.Sprintf("Source %q (%s) has no attribute %q; it has %s.%s", name, r.src.Kind, attr, quoteList(attrs), suggest(attr, attrs)), Subject: rng.Ptr()}}
	}
	if len(tr) < 4 || !slices.Contains(r.types, attr) {
		return nil
	}
	var label string
	switch s := tr[3].(type) {
	case hcl.TraverseIndex:
		if s.Key.Type() != cty.String {
			return nil // HCL's own type error
		}
		label = s.Key.AsString()
	case hcl.TraverseAttr:
		label = s.Name
	default:
		return nil
	}
	return l.checkLabel(r, attr, label, rng)
}

// checkLabel reports a reference to a label source r has no block for.
func (l *loader) checkLabel(r *sourceRef, typ, label string, rng hcl.Range) hcl.Diagnostics {
	if _, ok := r.blocks[typ][label]; ok || l.poisoned["source."+r.src.Name] {
		return nil
	}
	labels := keysS(r.blocks[typ])
	have := "it has none"
	if len(labels) > 0 {
		have = "it has " + quoteList(labels)
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: fmt.Sprintf("No %s %q in source %q", typ, label, r.src.Name),
		Detail: fmt.Sprintf("Source %s %q (%s) has no %s block %q (%s); a reference names one of the source's %s blocks.%s To capture %q, add %s %q {} to the source.",
			r.src.Kind, r.src.Name, pos(r.src.Range), typ, label, have, typ, suggest(label, labels), label, typ, label),
		Subject: rng.Ptr()}}
}

// checkSourceIndexes checks source.<name>.<type>[<expression>]: a key
// that is not a literal is evaluated here, so an unknown label gets the
// same diagnostic as a literal one.
func (l *loader) checkSourceIndexes(ex hcl.Expression) hcl.Diagnostics {
	se, ok := ex.(hclsyntax.Expression)
	if !ok || l.sources == nil {
		return nil
	}
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		ix, ok := n.(*hclsyntax.IndexExpr)
		if !ok {
			return nil
		}
		st, ok := ix.Collection.(*hclsyntax.ScopeTraversalExpr)
		if !ok || len(st.Traversal) != 3 || st.Traversal.RootName() != "source" {
			return nil
		}
		name, _ := traverseName(st.Traversal, 1)
		typ, _ := traverseName(st.Traversal, 2)
		r := l.sources[name]
		if r == nil || !slices.Contains(r.types, typ) {
			return nil
		}
		k, d := ix.Key.Value(l.ctx)
		if d.HasErrors() || !k.IsWhollyKnown() || k.IsNull() || k.Type() != cty.String {
			return nil // reported where the key is evaluated
		}
		diags = append(diags, l.checkLabel(r, typ, k.AsString(), ix.SrcRange)...)
		return nil
	})
	return diags
}

func traverseName(tr hcl.Traversal, i int) (string, bool) {
	if len(tr) <= i {
		return "", false
	}
	a, ok := tr[i].(hcl.TraverseAttr)
	return a.Name, ok
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// blockDiags points connector config errors about nested blocks ("block
// table \"x\": ...") at the blocks' labels. The kind's spec stops at
// the first error, so when one is about a block, every block is decoded
// alone with the other settings to report each block's mistakes.
func (l *loader) blockDiags(b *hcl.Block, k *connectors.Kind, raw map[string]any, diags hcl.Diagnostics, nested []nestedBlock) hcl.Diagnostics {
	about := func(d *hcl.Diagnostic) *nestedBlock {
		for i, n := range nested {
			if strings.Contains(d.Detail, fmt.Sprintf("block %s %q", n.block.Type, n.block.Labels[0])) {
				return &nested[i]
			}
		}
		return nil
	}
	var out hcl.Diagnostics
	for _, d := range diags {
		n := about(d)
		if n == nil {
			out = append(out, d)
			continue
		}
		d.Subject = n.block.LabelRanges[0].Ptr()
		out = append(out, d)
		for _, o := range nested {
			one := make(map[string]any, len(raw))
			for k, v := range raw {
				one[k] = v
			}
			one[o.block.Type] = []any{o.raw}
			_, err := DecodeConnector(k, one, RunSettings{SchemaRegistry: l.opts.SchemaRegistryURL, Brokers: l.opts.Brokers})
			if err == nil {
				continue
			}
			od := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: d.Summary,
				Detail: fmt.Sprintf("%s %s %q: %s.", b.Type, b.Labels[0], b.Labels[1], strings.TrimPrefix(err.Error(), connectors.ErrConfig.Error()+": "))}
			if strings.Contains(od.Detail, fmt.Sprintf("block %s %q", o.block.Type, o.block.Labels[0])) {
				od.Subject = o.block.LabelRanges[0].Ptr()
				out = append(out, od)
			}
		}
	}
	return out
}
