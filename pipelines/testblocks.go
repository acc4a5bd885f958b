package pipelines

import (
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/zclconf/go-cty/cty"

	"weir/connectors"
	"weir/pipelines/expr"
)

// Test is a test block: input records for a source, stream or transform
// block and what must come out of its transform steps (weir test,
// testrun.go). weir run ignores test blocks.
type Test struct {
	Name string
	// Target is what the test runs: "source.<name>", "stream.<name>" or
	// "transform.<name>".
	Target      string
	Range       hcl.Range // the block header
	TargetRange hcl.Range
	Inputs      []*TestInput
	Outputs     []*TestOutput
	// NoOutput is no_output = true: every input must be dropped.
	NoOutput      bool
	NoOutputRange hcl.Range

	source    *Source
	stream    *Stream
	transform *Chain
}

// TestInput is one input block: a record as the target reads it.
type TestInput struct {
	// Value is a string (the record value's bytes as written) or an
	// *expr.Object (encoded as the target's input topic stores values:
	// Avro with its schema, else JSON); nil: a tombstone.
	Value      any
	ValueRange hcl.Range
	Key        []byte
	Headers    []kgo.RecordHeader
	Timestamp  time.Time
	// Topic is the topic the record is read from (a stream's from topic;
	// "": its first).
	Topic string
	Range hcl.Range
}

// TestOutput is one output block: the expectations on one record that
// comes out, in order.
type TestOutput struct {
	Range hcl.Range
	// Value (exact) and Fields (a subset) of the record's value, with
	// the ranges of their fields by dotted path ("" the attribute).
	Value        *expr.Object
	ValueRanges  map[string]hcl.Range
	Fields       *expr.Object
	FieldsRanges map[string]hcl.Range
	// Key is the expected key when KeySet (nil: no key).
	Key      []byte
	KeySet   bool
	KeyRange hcl.Range
	Topic    string
	TopicRng hcl.Range
	// Timestamp is the expected record time (zero: not checked).
	Timestamp time.Time
	TimeRange hcl.Range
	Headers   map[string]string
	HdrRange  hcl.Range
	// Conditions are expressions over record that must be true.
	Conditions []TestCondition
	// DeadLetter: the record must go to the dead-letter topic; Error is
	// a substring of its error ("": any).
	DeadLetter bool
	DLRange    hcl.Range
	Error      string
	ErrRange   hcl.Range
}

// TestCondition is one condition of an output block.
type TestCondition struct {
	Fn    expr.Fn
	Range hcl.Range
	Text  string
}

const testBlock = "test"

// TestBlockDoc documents the test block (weir kinds test); the body
// schemas of the block and of its input and output blocks are built
// from the same fields.
const TestBlockDoc = "A unit test of the transform steps of a source, a stream (aggregations included) or a transform block, run by weir test without a broker. weir run ignores test blocks. Its input records go through the code weir run uses (value decoding, the steps, select_key, the destination topic's Avro or JSON encoding, dead letters) and the records that come out are matched, in order, with its output blocks; no_output = true expects none."

// TestBlockFields are the test block's own settings.
var TestBlockFields = []connectors.Field{
	{Name: "target", Type: connectors.Expression, Required: true, Doc: "what the test runs: source.<name>, stream.<name> (an aggregating one runs on the streams test driver: one partition, a commit after each input, results then dead letters), transform.<name>, or a list of transforms run in order as a component's transforms = [...] runs them"},
	{Name: "no_output", Type: connectors.Bool, Default: false, Doc: "every input must be dropped (by a filter): no record comes out; excludes output blocks"},
}

// TestBlockBlocks are the input and output blocks of a test block (any
// number, in order; no label).
var TestBlockBlocks = []connectors.Block{
	{Type: "input", Doc: "One input record, in order; at least one.", Fields: []connectors.Field{
		{Name: "value", Type: connectors.Expression, Required: true, Doc: "the record value: a string or an object. For a source or a transform block a string is a line as the file source hands it to its steps (the field message) and an object the event's fields (for a mysql source the change event: op, before, after, source); for a stream a string is the value's bytes and an object is encoded as its from topic stores values (Avro with the topic's schema, else JSON); null: a tombstone"},
		{Name: "key", Type: connectors.String, Doc: "the record key (null or unset: none)"},
		{Name: "headers", Type: connectors.StringMap, Doc: "the record headers"},
		{Name: "timestamp", Type: connectors.String, Doc: "the record time: an RFC 3339 time or milliseconds since the epoch"},
		{Name: "topic", Type: connectors.String, Doc: "for a stream: the from topic the record is read from (default: its first)"},
	}},
	{Type: "output", Doc: "The expectations on one record that comes out, in order: as many output blocks as records come out (dead letters included).", Fields: []connectors.Field{
		{Name: "value", Type: connectors.Expression, Doc: "an object: the record's value, decoded as the next reader decodes it, must have exactly these fields (in any order)"},
		{Name: "fields", Type: connectors.Expression, Doc: "an object: the value must have these fields with these values (nested objects too); others may exist"},
		{Name: "key", Type: connectors.String, Doc: "the record key; null: no key"},
		{Name: "topic", Type: connectors.String, Doc: "the topic the record is written to (a route's, the dead-letter topic weir-dlq-<name>)"},
		{Name: "timestamp", Type: connectors.String, Doc: "the record time: an RFC 3339 time or milliseconds since the epoch"},
		{Name: "headers", Type: connectors.StringMap, Doc: "headers the record must carry with these values; others may exist (those the connectors runtime adds when it produces, such as weir.src, are not part of a test's records)"},
		{Name: "condition", Type: connectors.Expression, Doc: "an expression over record that must be true, or a list of them, each checked and reported on its own"},
		{Name: "dead_letter", Type: connectors.Bool, Default: false, Doc: "the record must go to the dead-letter topic"},
		{Name: "error", Type: connectors.String, Doc: "with dead_letter: a substring of the dead letter's error"},
	}},
}

func attrSchema(fs []connectors.Field) []hcl.AttributeSchema {
	out := make([]hcl.AttributeSchema, len(fs))
	for i, f := range fs {
		out[i] = hcl.AttributeSchema{Name: f.Name, Required: f.Required && f.Name != "value"}
	}
	return out
}

var (
	testSchema = &hcl.BodySchema{
		Attributes: attrSchema(TestBlockFields),
		Blocks:     []hcl.BlockHeaderSchema{{Type: TestBlockBlocks[0].Type}, {Type: TestBlockBlocks[1].Type}},
	}
	testInputSchema  = &hcl.BodySchema{Attributes: attrSchema(TestBlockBlocks[0].Fields)}
	testOutputSchema = &hcl.BodySchema{Attributes: attrSchema(TestBlockBlocks[1].Fields)}
)

// decodeTests reads the test blocks (after sources, streams and
// transforms are decoded).
func (l *loader) decodeTests(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		if d := l.dup(testBlock, b.Labels[0], b); d != nil {
			diags = append(diags, d)
			continue
		}
		t, d := l.decodeTest(b)
		diags = append(diags, d...)
		if t != nil {
			l.cfg.Tests = append(l.cfg.Tests, t)
		}
	}
	return diags
}

func (l *loader) decodeTest(b *hcl.Block) (*Test, hcl.Diagnostics) {
	c, diags := b.Body.Content(testSchema)
	t := &Test{Name: b.Labels[0], Range: b.DefRange}
	ok := !diags.HasErrors()
	if a, has := c.Attributes["target"]; has {
		ok = l.testTarget(t, a, &diags) && ok
	}
	if a, has := c.Attributes["no_output"]; has {
		no, d := l.boolAttr(a)
		diags = append(diags, d...)
		t.NoOutput, t.NoOutputRange = no, a.Expr.Range()
	}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "input":
			in, d := l.decodeTestInput(t, blk)
			diags = append(diags, d...)
			t.Inputs = append(t.Inputs, in)
		case "output":
			out, d := l.decodeTestOutput(blk)
			diags = append(diags, d...)
			t.Outputs = append(t.Outputs, out)
		}
	}
	if len(t.Inputs) == 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Test without input",
			Detail: fmt.Sprintf("test %q has no input block: give at least one input record.", t.Name), Subject: b.DefRange.Ptr()})
	}
	if t.NoOutput && len(t.Outputs) > 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting test expectations",
			Detail: "no_output = true expects every input to be dropped; remove it or the output blocks.", Subject: t.NoOutputRange.Ptr()})
	}
	if !t.NoOutput && len(t.Outputs) == 0 && len(t.Inputs) > 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Test without expectation",
			Detail: fmt.Sprintf("test %q has no output block: say what comes out (output { ... }), or no_output = true when its inputs are dropped.", t.Name), Subject: b.DefRange.Ptr()})
	}
	if !ok || diags.HasErrors() {
		return nil, diags
	}
	return t, diags
}

// testTarget resolves target = source.<name> | stream.<name> |
// transform.<name>.
func (l *loader) testTarget(t *Test, a *hcl.Attribute, diags *hcl.Diagnostics) bool {
	t.TargetRange = a.Expr.Range()
	bad := func(detail string) bool {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid test target",
			Detail: detail, Subject: a.Expr.Range().Ptr()})
		return false
	}
	if tc, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok {
		return l.testTransforms(t, tc, diags)
	}
	tr, d := hcl.AbsTraversalForExpr(a.Expr)
	if d.HasErrors() || len(tr) != 2 {
		return bad("target names what the test runs: source.<name>, stream.<name> or transform.<name> (or a list of transforms, run in order).")
	}
	attr, isAttr := tr[1].(hcl.TraverseAttr)
	if !isAttr {
		return bad("target names what the test runs: source.<name>, stream.<name> or transform.<name>.")
	}
	root, name := tr.RootName(), attr.Name
	t.Target = root + "." + name
	var names []string
	switch root {
	case "source":
		for _, s := range l.cfg.Sources {
			if s.Name == name {
				t.source = s
			}
			names = append(names, s.Name)
		}
	case "stream":
		for _, s := range l.cfg.Streams {
			if s.Name == name {
				t.stream = s
			}
			names = append(names, s.Name)
		}
	case "transform":
		if tb, has := l.transforms[name]; has {
			steps, d := l.decodeSteps(tb.Body, "transform", func(string, hcl.Range) {})
			if d.HasErrors() {
				return false // reported where the transform is declared
			}
			t.transform = &Chain{steps: steps}
		}
		names = keysBlocks(l.transforms)
	default:
		return bad(fmt.Sprintf("%q cannot be tested: target names source.<name>, stream.<name> or transform.<name>.", root))
	}
	if t.source != nil || t.stream != nil || t.transform != nil {
		return true
	}
	if root != "transform" {
		for _, c := range l.cfg.Components() {
			if c.Name == name {
				return bad(fmt.Sprintf("%q is a %s: a test runs the transform steps of a source, a stream or a transform block.", name, c.Type))
			}
		}
		if _, declared := l.declared["component."+name]; declared {
			return false // declared but failed: its own errors are reported
		}
	}
	*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared " + root,
		Detail: fmt.Sprintf("No %s named %q is declared.%s", root, name, suggest(name, names)), Subject: a.Expr.Range().Ptr()})
	return false
}

// testTransforms resolves target = [transform.a, transform.b, ...]: the
// transform blocks' steps chained in order, as a component's
// transforms = [...] runs them.
func (l *loader) testTransforms(t *Test, tc *hclsyntax.TupleConsExpr, diags *hcl.Diagnostics) bool {
	chain := &Chain{}
	var names []string
	ok := len(tc.Exprs) > 0
	if !ok {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid test target",
			Detail: "An empty list: name the transforms to run, as in [transform.parse, transform.enrich].", Subject: tc.Range().Ptr()})
	}
	for _, e := range tc.Exprs {
		one := &Test{Name: t.Name}
		if !l.testTarget(one, &hcl.Attribute{Name: "target", Expr: e, Range: e.Range(), NameRange: e.Range()}, diags) {
			ok = false
			continue
		}
		if one.transform == nil {
			*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid test target",
				Detail: fmt.Sprintf("A list of targets chains transform blocks; %s is not one: test it on its own.", one.Target), Subject: e.Range().Ptr()})
			ok = false
			continue
		}
		chain.steps = append(chain.steps, one.transform.steps...)
		names = append(names, one.Target)
	}
	t.Target, t.TargetRange, t.transform = "["+strings.Join(names, ", ")+"]", tc.Range(), chain
	return ok
}

func keysBlocks(m map[string]*hcl.Block) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (l *loader) decodeTestInput(t *Test, b *hcl.Block) (*TestInput, hcl.Diagnostics) {
	c, diags := b.Body.Content(testInputSchema)
	in := &TestInput{Range: b.DefRange}
	if a, ok := c.Attributes["value"]; ok {
		in.ValueRange = a.Expr.Range()
		v, d := l.value(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			switch {
			case v.IsNull():
			case v.Type() == cty.String:
				in.Value = v.AsString()
			case v.Type().IsObjectType() || v.Type().IsMapType():
				in.Value = expr.FromCty(v)
			default:
				diags = append(diags, typeDiag(a, "a string (the value's bytes) or an object (its fields)", v))
			}
		}
	} else {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing input value",
			Detail: "An input block gives the record's value: a string (as the bytes are) or an object (its fields); value = null for a tombstone.", Subject: b.DefRange.Ptr()})
	}
	if a, ok := c.Attributes["key"]; ok {
		k, d := l.optString(a)
		diags = append(diags, d...)
		in.Key = k
	}
	if a, ok := c.Attributes["headers"]; ok {
		m, d := l.stringMapAttr(a)
		diags = append(diags, d...)
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			in.Headers = append(in.Headers, kgo.RecordHeader{Key: k, Value: []byte(m[k])})
		}
	}
	if a, ok := c.Attributes["timestamp"]; ok {
		ts, d := l.timeAttr(a)
		diags = append(diags, d...)
		in.Timestamp = ts
	}
	if a, ok := c.Attributes["topic"]; ok {
		topic, d := l.stringAttr(a)
		diags = append(diags, d...)
		if !d.HasErrors() {
			in.Topic = topic
			if t.source != nil || t.transform != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid input topic",
					Detail: fmt.Sprintf("topic names the from topic a stream reads the record from; %s reads no topic.", t.Target), Subject: a.NameRange.Ptr()})
			} else if t.stream != nil && !slices.Contains(t.stream.From, topic) {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid input topic",
					Detail: fmt.Sprintf("stream %q reads %s, not %q.", t.stream.Name, quoteList(t.stream.From), topic), Subject: a.Expr.Range().Ptr()})
			}
		}
	}
	return in, diags
}

func (l *loader) decodeTestOutput(b *hcl.Block) (*TestOutput, hcl.Diagnostics) {
	c, diags := b.Body.Content(testOutputSchema)
	out := &TestOutput{Range: b.DefRange}
	obj := func(a *hcl.Attribute) (*expr.Object, map[string]hcl.Range) {
		v, d := l.value(a.Expr)
		diags = append(diags, d...)
		if d.HasErrors() {
			return nil, nil
		}
		if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
			diags = append(diags, typeDiag(a, "an object", v))
			return nil, nil
		}
		o, _ := expr.FromCty(v).(*expr.Object)
		if o == nil {
			o = &expr.Object{}
		}
		rs := map[string]hcl.Range{"": a.Expr.Range()}
		l.fieldRanges(a.Expr, "", rs)
		return o, rs
	}
	if a, ok := c.Attributes["value"]; ok {
		out.Value, out.ValueRanges = obj(a)
	}
	if a, ok := c.Attributes["fields"]; ok {
		out.Fields, out.FieldsRanges = obj(a)
	}
	if a, ok := c.Attributes["key"]; ok {
		k, d := l.optString(a)
		diags = append(diags, d...)
		out.Key, out.KeySet, out.KeyRange = k, true, a.Expr.Range()
	}
	if a, ok := c.Attributes["topic"]; ok {
		topic, d := l.stringAttr(a)
		diags = append(diags, d...)
		out.Topic, out.TopicRng = topic, a.Expr.Range()
	}
	if a, ok := c.Attributes["timestamp"]; ok {
		ts, d := l.timeAttr(a)
		diags = append(diags, d...)
		out.Timestamp, out.TimeRange = ts, a.Expr.Range()
	}
	if a, ok := c.Attributes["headers"]; ok {
		m, d := l.stringMapAttr(a)
		diags = append(diags, d...)
		out.Headers, out.HdrRange = m, a.Expr.Range()
	}
	if a, ok := c.Attributes["dead_letter"]; ok {
		dl, d := l.boolAttr(a)
		diags = append(diags, d...)
		out.DeadLetter, out.DLRange = dl, a.Expr.Range()
	}
	if a, ok := c.Attributes["error"]; ok {
		e, d := l.stringAttr(a)
		diags = append(diags, d...)
		out.Error, out.ErrRange = e, a.Expr.Range()
		if !out.DeadLetter && !d.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Error without dead_letter",
				Detail: "error checks the error a dead-lettered record carries: add dead_letter = true.", Subject: a.NameRange.Ptr()})
		}
	}
	if a, ok := c.Attributes["condition"]; ok {
		// condition = <expr> or [<expr>, ...]: each checked and reported
		// on its own.
		exprs := []hclsyntax.Expression{}
		switch x := a.Expr.(type) {
		case *hclsyntax.TupleConsExpr:
			exprs = x.Exprs
		case hclsyntax.Expression:
			exprs = append(exprs, x)
		}
		comp := &expr.Compiler{Ctx: l.ctx}
		for _, e := range exprs {
			fn := l.compileAttr(comp, &hcl.Attribute{Name: a.Name, Expr: e, Range: a.Range, NameRange: a.NameRange}, &diags)
			if fn != nil {
				out.Conditions = append(out.Conditions, TestCondition{Fn: fn, Range: e.Range(), Text: string(l.srcBytes(e.Range()))})
			}
		}
	}
	return out, diags
}

// fieldRanges records the range of each item of an object constructor
// (nested ones by dotted path), so a difference points at its field.
func (l *loader) fieldRanges(e hcl.Expression, prefix string, rs map[string]hcl.Range) {
	oc, ok := e.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return
	}
	for _, it := range oc.Items {
		kv, d := it.KeyExpr.Value(l.ctx)
		if d.HasErrors() || kv.IsNull() || !kv.IsKnown() {
			continue
		}
		kv, err := convertString(kv)
		if err != nil {
			continue
		}
		path := prefix + kv.AsString()
		rs[path] = hcl.RangeBetween(it.KeyExpr.Range(), it.ValueExpr.Range())
		l.fieldRanges(it.ValueExpr, path+".", rs)
	}
}

func convertString(v cty.Value) (cty.Value, error) {
	if v.Type() == cty.String {
		return v, nil
	}
	if v.Type() == cty.Number {
		return cty.StringVal(v.AsBigFloat().Text('f', -1)), nil
	}
	return cty.NilVal, fmt.Errorf("not a string")
}

// optString reads a string attribute where null means none (a record
// key).
func (l *loader) optString(a *hcl.Attribute) ([]byte, hcl.Diagnostics) {
	v, diags := l.value(a.Expr)
	if diags.HasErrors() || v.IsNull() {
		return nil, diags
	}
	if v.Type() != cty.String {
		return nil, append(diags, typeDiag(a, "a string or null", v))
	}
	return []byte(v.AsString()), diags
}

// timeAttr reads a record timestamp: an RFC 3339 string or a number of
// milliseconds since the epoch (Kafka's record timestamp).
func (l *loader) timeAttr(a *hcl.Attribute) (time.Time, hcl.Diagnostics) {
	v, diags := l.value(a.Expr)
	if diags.HasErrors() {
		return time.Time{}, diags
	}
	if !v.IsNull() && v.Type() == cty.Number {
		ms, acc := v.AsBigFloat().Int64()
		if acc == big.Exact {
			return time.UnixMilli(ms).UTC(), diags
		}
	}
	if !v.IsNull() && v.Type() == cty.String {
		ts, err := time.Parse(time.RFC3339Nano, v.AsString())
		if err == nil {
			return ts, diags
		}
		return time.Time{}, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid timestamp",
			Detail: fmt.Sprintf("%q must be an RFC 3339 time such as 2024-05-01T10:00:00Z, or milliseconds since the epoch: %v.", a.Name, err), Subject: a.Expr.Range().Ptr()})
	}
	return time.Time{}, append(diags, typeDiag(a, "an RFC 3339 time string or milliseconds since the epoch", v))
}
