package pipelines

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"weir/connectors"
	"weir/pipelines/expr"
)

// StepKind is one transform step block type ("parse_json", "filter",
// ...): its declared attributes and its constructor, as connectors.Kind
// is for sources and sinks. Each kind is one file, step_<name>.go, that
// registers itself from init; its documentation is its spec (weir kinds).
type StepKind struct {
	Name string
	Doc  string
	// Spec declares the step's attributes, in the order of the block's
	// schema: types String, Bool, StringList and Expression (compiled per
	// record). Required attributes are checked by the schema; Default is
	// what StepArgs returns for an absent one. Blocks and Validate are
	// not used. A kind that declares on_error (OnError) gets it decoded
	// after New: what a failure of the step does to the record.
	Spec connectors.Spec
	// Free, if set, makes every attribute of the block one entry named
	// by the user (set: field = expression); Spec.Fields must be empty
	// and New reads them with StepArgs.Attrs.
	Free *connectors.Field
	// New builds the step from its block. Problems go to StepArgs.Error
	// (or come from its readers); a step with errors is dropped.
	New func(a *StepArgs) Step
}

// OnError is the on_error attribute a step kind may declare, last.
var OnError = connectors.Field{Name: "on_error", Type: connectors.String, Default: "keep",
	Enum: []string{"keep", "drop", "dead_letter"},
	Doc:  `what a failure of the step does to the record: "keep" it and go on with the next step (the error is counted), "drop" it, or send it to the "dead_letter" topic weir-dlq-<component>`}

var stepKinds = struct {
	sync.RWMutex
	m map[string]*StepKind
}{m: map[string]*StepKind{}}

// RegisterStep adds a step kind. It panics on a duplicate or malformed
// kind: kinds register from init functions, so that is a programming
// error.
func RegisterStep(k *StepKind) {
	if err := k.check(); err != nil {
		panic(fmt.Sprintf("pipelines: step kind %q: %v", k.Name, err))
	}
	stepKinds.Lock()
	defer stepKinds.Unlock()
	if _, dup := stepKinds.m[k.Name]; dup {
		panic(fmt.Sprintf("pipelines: step kind %q registered twice", k.Name))
	}
	stepKinds.m[k.Name] = k
}

func (k *StepKind) check() error {
	if k.Name == "" || k.New == nil {
		return fmt.Errorf("a step kind needs a name and New")
	}
	if k.Free != nil && len(k.Spec.Fields) > 0 {
		return fmt.Errorf("free attributes and declared ones")
	}
	seen := map[string]bool{}
	for _, f := range k.Spec.Fields {
		if seen[f.Name] || f.Name == "" {
			return fmt.Errorf("attribute %q: empty or declared twice", f.Name)
		}
		seen[f.Name] = true
		ok := true
		switch f.Type {
		case connectors.String:
			_, ok = f.Default.(string)
		case connectors.Bool:
			_, ok = f.Default.(bool)
		case connectors.StringList, connectors.Expression:
		default:
			return fmt.Errorf("attribute %q: type %s is not one of string, bool, list(string), expression", f.Name, f.Type)
		}
		if f.Default != nil && !ok {
			return fmt.Errorf("attribute %q: default %v is not a %s", f.Name, f.Default, f.Type)
		}
	}
	return nil
}

// StepKinds returns every registered step kind, sorted by name.
func StepKinds() []*StepKind {
	stepKinds.RLock()
	defer stepKinds.RUnlock()
	out := make([]*StepKind, 0, len(stepKinds.m))
	for _, k := range stepKinds.m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func lookupStep(name string) *StepKind {
	stepKinds.RLock()
	defer stepKinds.RUnlock()
	return stepKinds.m[name]
}

// suggestOrder is the order in which HCL tries the step block types for
// "Did you mean" suggestions (the first one close enough wins): the
// order they had before the registry, so diagnostics stay the same.
// Kinds not listed follow, by name.
var suggestOrder = []string{"parse_json", "parse_regex", "parse_timestamp", "set", "rename", "remove", "filter", "route"}

// stepBlocks are the block header schemas of the step kinds.
var stepBlocks = sync.OnceValue(func() []hcl.BlockHeaderSchema {
	var out []hcl.BlockHeaderSchema
	for _, n := range suggestOrder {
		if lookupStep(n) != nil {
			out = append(out, hcl.BlockHeaderSchema{Type: n})
		}
	}
	for _, k := range StepKinds() {
		if !slices.Contains(suggestOrder, k.Name) {
			out = append(out, hcl.BlockHeaderSchema{Type: k.Name})
		}
	}
	return slices.Clip(out)
})

func (k *StepKind) schema() *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, f := range k.Spec.Fields {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: f.Name, Required: f.Required})
	}
	return s
}

// StepArgs is a step block being decoded: New reads its attributes
// through it, in the order it wants their diagnostics.
type StepArgs struct {
	Block *hcl.Block
	kind  *StepKind
	attrs hcl.Attributes
	l     *loader
	comp  *expr.Compiler
	route func(topic string, rng hcl.Range)
	diags hcl.Diagnostics
}

// Attr returns the attribute called name, if the block sets it.
func (a *StepArgs) Attr(name string) (*hcl.Attribute, bool) {
	at, ok := a.attrs[name]
	return at, ok
}

// Attrs returns every attribute of the block in source order (kinds
// with Free attributes).
func (a *StepArgs) Attrs() []*hcl.Attribute { return sortedAttrs(a.attrs) }

// HasErrors reports whether decoding the block has failed so far.
func (a *StepArgs) HasErrors() bool { return a.diags.HasErrors() }

// Error reports a problem with the block at subject.
func (a *StepArgs) Error(subject hcl.Range, summary, detail string) {
	a.diags = append(a.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: subject.Ptr()})
}

func (a *StepArgs) field(name string) connectors.Field {
	f, ok := a.kind.Spec.Field(name)
	if !ok {
		panic(fmt.Sprintf("pipelines: step kind %q reads undeclared attribute %q", a.kind.Name, name))
	}
	return f
}

// String evaluates a string attribute; absent, its default.
func (a *StepArgs) String(name string) string {
	f := a.field(name)
	at, ok := a.attrs[name]
	if !ok {
		s, _ := f.Default.(string)
		return s
	}
	s, d := a.l.stringAttr(at)
	a.diags = append(a.diags, d...)
	return s
}

// StringOf evaluates the string attribute at (from Attr or Attrs); ok
// reports that it had no errors.
func (a *StepArgs) StringOf(at *hcl.Attribute) (s string, ok bool) {
	s, d := a.l.stringAttr(at)
	a.diags = append(a.diags, d...)
	return s, !d.HasErrors()
}

// Bool evaluates a bool attribute; absent, its default.
func (a *StepArgs) Bool(name string) bool {
	f := a.field(name)
	def, _ := f.Default.(bool)
	at, ok := a.attrs[name]
	if !ok {
		return def
	}
	v, d := a.l.value(at.Expr)
	a.diags = append(a.diags, d...)
	if d.HasErrors() {
		return def
	}
	if v.IsNull() || v.Type().FriendlyName() != "bool" {
		a.diags = append(a.diags, typeDiag(at, "a bool", v))
		return def
	}
	return v.True()
}

// Strings evaluates a list(string) attribute (nil when absent).
func (a *StepArgs) Strings(name string) []string {
	a.field(name)
	at, ok := a.attrs[name]
	if !ok {
		return nil
	}
	l, d := a.l.stringListAttr(at)
	a.diags = append(a.diags, d...)
	return l
}

// Expr compiles an expression attribute over the record (nil when
// absent).
func (a *StepArgs) Expr(name string) expr.Fn {
	a.field(name)
	at, ok := a.attrs[name]
	if !ok {
		return nil
	}
	return a.ExprOf(at)
}

// ExprOf compiles the expression of at (one of Attrs).
func (a *StepArgs) ExprOf(at *hcl.Attribute) expr.Fn {
	return a.l.compileAttr(a.comp, at, &a.diags)
}

// Route declares that the step sends records to topic (a graph edge
// from the component to the topic, at rng).
func (a *StepArgs) Route(topic string, rng hcl.Range) {
	if a.route != nil {
		a.route(topic, rng)
	}
}

// onError decodes the on_error attribute.
func (a *StepArgs) onError() Outcome {
	at, ok := a.attrs[OnError.Name]
	if !ok {
		return Keep
	}
	s, d := a.l.stringAttr(at)
	a.diags = append(a.diags, d...)
	switch s {
	case "keep":
		return Keep
	case "drop":
		return Drop
	case "dead_letter":
		return DeadLetter
	}
	if !d.HasErrors() {
		a.Error(at.Expr.Range(), "Invalid on_error", fmt.Sprintf("on_error must be \"keep\", \"drop\" or \"dead_letter\", not %q.", s))
	}
	return Keep
}

// decodeStepBlocks builds the steps of blocks, each through its kind.
// route is called for every topic a step sends records to.
func (l *loader) decodeStepBlocks(blocks hcl.Blocks, route func(string, hcl.Range)) ([]chainStep, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var out []chainStep
	comp := &expr.Compiler{Ctx: l.ctx}
	for _, b := range blocks {
		k := lookupStep(b.Type)
		if k == nil {
			continue // not a step block: the body schema reported it
		}
		a := &StepArgs{Block: b, kind: k, l: l, comp: comp, route: route}
		if k.Free != nil {
			a.attrs, a.diags = b.Body.JustAttributes()
		} else {
			var c *hcl.BodyContent
			c, a.diags = b.Body.Content(k.schema())
			a.attrs = c.Attributes
		}
		st := chainStep{kind: b.Type, where: b.DefRange, s: k.New(a)}
		if _, ok := k.Spec.Field(OnError.Name); ok {
			st.onError = a.onError()
		}
		diags = append(diags, a.diags...)
		if !a.diags.HasErrors() {
			out = append(out, st)
		}
	}
	return out, diags
}
