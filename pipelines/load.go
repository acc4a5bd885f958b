package pipelines

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"weir/connectors"
	"weir/pipelines/expr"
)

// Options tune Load.
type Options struct {
	// Vars are -var NAME=VALUE settings, later ones winning.
	Vars []string
	// VarFiles are -var-file paths (HCL files of NAME = value), later
	// ones winning over earlier ones; -var wins over all.
	VarFiles []string
	// LookupEnv reads WEIR_VAR_<name> variables (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Registry holds the connector kinds (nil: connectors.Default).
	Registry *connectors.Registry
	// SchemaRegistryURL is given to connector kinds that declare a
	// "schema_registry" setting the block leaves unset ("": a placeholder
	// URL, enough to validate).
	SchemaRegistryURL string
	// Brokers are given to kinds that declare a "brokers" setting the
	// block leaves unset (empty: a placeholder address).
	Brokers []string
	// Tests decodes and checks test blocks into Config.Tests (weir test,
	// weir validate); unset, they are skipped (weir run).
	Tests bool
}

// PlaceholderRegistryURL stands in for the schema registry URL while
// validating without a running registry.
const PlaceholderRegistryURL = "http://127.0.0.1:8081"

// Load reads pipeline files (a folder means all its *.hcl files, in name
// order) and returns the validated configuration, or every diagnostic
// found. Files are parsed and checked as one set: blocks of one file may
// refer to blocks of another.
func Load(paths []string, opts Options) (*Config, hcl.Diagnostics) {
	files, dir, err := ExpandPaths(paths)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read pipeline files", Detail: err.Error()}}
	}
	srcs := make([]SourceFile, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read pipeline file", Detail: err.Error()}}
		}
		srcs = append(srcs, SourceFile{Name: f, Src: b})
	}
	return LoadSources(srcs, dir, opts)
}

// SourceFile is one pipeline file's name and content.
type SourceFile struct {
	Name string
	Src  []byte
}

// ExpandPaths lists the pipeline files named by paths (folders expand to
// their *.hcl files) and returns path.root: the folder of the first path.
func ExpandPaths(paths []string) (files []string, dir string, err error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, "", err
		}
		d := filepath.Dir(p)
		if st.IsDir() {
			d = p
			m, err := filepath.Glob(filepath.Join(p, "*.hcl"))
			if err != nil {
				return nil, "", err
			}
			if len(m) == 0 {
				return nil, "", fmt.Errorf("no *.hcl files in %s", p)
			}
			sort.Strings(m)
			files = append(files, m...)
		} else {
			files = append(files, p)
		}
		if i == 0 {
			dir = d
		}
	}
	return files, dir, nil
}

// LoadSources is Load over in-memory files; dir is path.root.
func LoadSources(srcs []SourceFile, dir string, opts Options) (*Config, hcl.Diagnostics) {
	if opts.Registry == nil {
		opts.Registry = connectors.Default
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.SchemaRegistryURL == "" {
		opts.SchemaRegistryURL = PlaceholderRegistryURL
	}
	if len(opts.Brokers) == 0 {
		opts.Brokers = []string{DefaultKafkaAddr}
	}
	l := &loader{opts: opts, dir: dir, parser: hclparse.NewParser(),
		cfg:        &Config{Dir: dir, Files: map[string]*hcl.File{}},
		topicNames: map[string]string{}, transforms: map[string]*hcl.Block{},
		declared: map[string]hcl.Range{}, poisoned: map[string]bool{}}
	var diags hcl.Diagnostics
	var contents []*hcl.BodyContent
	for _, s := range srcs {
		f, d := l.parser.ParseHCL(s.Src, s.Name)
		diags = append(diags, d...)
		if f == nil {
			continue
		}
		l.cfg.Files[s.Name] = f
		c, d := f.Body.Content(topSchema)
		diags = append(diags, d...)
		if c != nil {
			contents = append(contents, c)
		}
	}
	diags = append(diags, l.load(contents)...)
	nameCallAttributes(l.cfg.Files, diags)
	return l.cfg, dedupe(diags)
}

var topSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "broker"},
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "locals"},
	{Type: "topic", LabelNames: []string{"name"}},
	{Type: "transform", LabelNames: []string{"name"}},
	{Type: "source", LabelNames: []string{"kind", "name"}},
	{Type: "stream", LabelNames: []string{"name"}},
	{Type: "sink", LabelNames: []string{"kind", "name"}},
	{Type: testBlock, LabelNames: []string{"name"}},
}}

type loader struct {
	opts   Options
	dir    string
	parser *hclparse.Parser
	cfg    *Config

	varTypes   map[string]cty.Type
	vars       map[string]cty.Value
	locals     map[string]cty.Value
	topicNames map[string]string // label → topic name
	transforms map[string]*hcl.Block
	declared   map[string]hcl.Range // "source.x" etc. → first declaration
	ctx        *hcl.EvalContext
	varsJSON   string
	poisoned   map[string]bool // "var.x", "local.y" that failed
	edges      []Edge
	sources    map[string]*sourceRef // what source.<name> refers to (srcblocks.go); nil until sources are decoded
	sourceVals map[string]cty.Value
}

func (l *loader) load(contents []*hcl.BodyContent) hcl.Diagnostics {
	var diags hcl.Diagnostics
	byType := map[string][]*hcl.Block{}
	for _, c := range contents {
		for _, b := range c.Blocks {
			byType[b.Type] = append(byType[b.Type], b)
		}
	}
	// Declarations first, so references resolve in any order.
	diags = append(diags, l.decodeVariables(byType["variable"])...)
	diags = append(diags, l.evalLocals(byType["locals"])...)
	l.buildContext(nil)
	for _, b := range byType["topic"] {
		if d := l.dup("topic", b.Labels[0], b); d != nil {
			diags = append(diags, d)
			continue
		}
		l.topicNames[b.Labels[0]] = b.Labels[0]
	}
	for _, b := range byType["transform"] {
		if d := l.dup("transform", b.Labels[0], b); d != nil {
			diags = append(diags, d)
			continue
		}
		l.transforms[b.Labels[0]] = b
	}
	for _, typ := range []string{"source", "stream", "sink"} {
		for _, b := range byType[typ] {
			name := b.Labels[len(b.Labels)-1]
			if d := l.dup("component", name, b); d != nil {
				diags = append(diags, d)
			}
		}
	}
	if len(byType["broker"]) > 1 {
		b := byType["broker"][1]
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate broker block",
			Detail:  fmt.Sprintf("Only one broker block is allowed; the first is at %s.", pos(byType["broker"][0].DefRange)),
			Subject: b.DefRange.Ptr()})
	}
	var bb *hcl.Block
	if len(byType["broker"]) > 0 {
		bb = byType["broker"][0]
	}
	diags = append(diags, l.decodeBroker(bb)...)
	var topics []*hcl.Block
	for _, b := range byType["topic"] {
		if l.declared["topic."+b.Labels[0]] == b.DefRange {
			topics = append(topics, b)
		}
	}
	diags = append(diags, l.decodeTopicNames(topics)...)
	l.buildContext(l.topicNames)
	for _, b := range topics {
		t, d := l.decodeTopic(b)
		diags = append(diags, d...)
		if t != nil {
			l.cfg.Topics = append(l.cfg.Topics, t)
		}
	}
	for _, b := range byType["transform"] {
		_, d := l.decodeSteps(b.Body, "transform", nil)
		diags = append(diags, d...)
	}
	for _, b := range byType["source"] {
		s, d := l.decodeSource(b)
		diags = append(diags, d...)
		if s != nil {
			l.cfg.Sources = append(l.cfg.Sources, s)
		}
	}
	l.setSources()
	for _, b := range byType["stream"] {
		s, d := l.decodeStream(b)
		diags = append(diags, d...)
		if s != nil {
			l.cfg.Streams = append(l.cfg.Streams, s)
		}
	}
	for _, b := range byType["sink"] {
		s, d := l.decodeSink(b)
		diags = append(diags, d...)
		if s != nil {
			l.cfg.Sinks = append(l.cfg.Sinks, s)
		}
	}
	if l.opts.Tests {
		diags = append(diags, l.decodeTests(byType[testBlock])...)
	}
	g, d := buildGraph(l.cfg, l.edges)
	diags = append(diags, d...)
	l.cfg.Graph = g
	return diags
}

// dup registers a declaration and returns a diagnostic if the name was
// declared before.
func (l *loader) dup(what, name string, b *hcl.Block) *hcl.Diagnostic {
	key := what + "." + name
	if prev, ok := l.declared[key]; ok {
		label := b.Type
		if what == "component" {
			label = "source, stream or sink"
		}
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate %s %q", label, name),
			Detail:  fmt.Sprintf("A %s named %q is already declared at %s; names must be unique.", label, name, pos(prev)),
			Subject: b.LabelRanges[len(b.LabelRanges)-1].Ptr()}
	}
	l.declared[key] = b.DefRange
	return nil
}

func (l *loader) buildContext(topics map[string]string) {
	obj := func(m map[string]cty.Value) cty.Value {
		if len(m) == 0 {
			return cty.EmptyObjectVal
		}
		return cty.ObjectVal(m)
	}
	vars := map[string]cty.Value{
		"var":   obj(l.vars),
		"local": obj(l.locals),
		"path": cty.ObjectVal(map[string]cty.Value{
			"root": cty.StringVal(l.dir),
			"cwd":  cty.StringVal(cwd()),
		}),
	}
	if topics != nil {
		tm := map[string]cty.Value{}
		for label, name := range topics {
			tm[label] = cty.StringVal(name)
		}
		vars["topic"] = obj(tm)
		trs := map[string]cty.Value{}
		for name := range l.transforms {
			trs[name] = cty.StringVal(name)
		}
		vars["transform"] = obj(trs)
	}
	if l.sourceVals != nil {
		vars["source"] = obj(l.sourceVals)
	}
	l.ctx = &hcl.EvalContext{Variables: vars, Functions: expr.Functions(l.dir)}
}

func cwd() string {
	d, err := os.Getwd()
	if err != nil {
		return "."
	}
	return d
}

// roots are the names an expression may start with, by where it is.
var configRoots = []string{"var", "local", "path", "topic", "transform", "source"}

// checkRefs reports references to undeclared things in expr; record is
// allowed in transform steps only. It returns no diagnostics when every
// reference resolves.
func (l *loader) checkRefs(ex hcl.Expression, allowRecord bool) hcl.Diagnostics {
	if allowRecord {
		return l.checkRefsIn(ex, []string{expr.RecordVar})
	}
	return l.checkRefsIn(ex, nil)
}

// checkRefsIn is checkRefs where the per-record variables scope (record,
// and agg, other, key in aggregate expressions) may be used.
func (l *loader) checkRefsIn(ex hcl.Expression, scope []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	allowRecord := slices.Contains(scope, expr.RecordVar)
	for _, tr := range ex.Variables() {
		root := tr.RootName()
		if root != expr.RecordVar && slices.Contains(scope, root) {
			continue
		}
		rng := tr.SourceRange()
		attrName := func() (string, bool) {
			if len(tr) < 2 {
				return "", false
			}
			a, ok := tr[1].(hcl.TraverseAttr)
			return a.Name, ok
		}
		check := func(what string, known []string) {
			name, ok := attrName()
			if !ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference",
					Detail: fmt.Sprintf("%q must be followed by a name, as in %s.example.", root, root), Subject: rng.Ptr()})
				return
			}
			for _, k := range known {
				if k == name {
					return
				}
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError,
				Summary: fmt.Sprintf("Reference to undeclared %s", what),
				Detail:  fmt.Sprintf("No %s named %q is declared.%s", what, name, suggest(name, known)),
				Subject: rng.Ptr()})
		}
		switch root {
		case "var":
			check("input variable", keys(l.vars))
		case "local":
			check("local value", keys(l.locals))
		case "topic":
			if !l.ctxHasTopics() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference",
					Detail: "Topics cannot be referenced here (locals, variables and topic names are evaluated before topics).", Subject: rng.Ptr()})
				continue
			}
			check("topic", keysS(l.topicNames))
		case "transform":
			if !l.ctxHasTopics() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference",
					Detail: "Transforms cannot be referenced here.", Subject: rng.Ptr()})
				continue
			}
			names := make([]string, 0, len(l.transforms))
			for n := range l.transforms {
				names = append(names, n)
			}
			check("transform", names)
		case "path":
			check("path value", []string{"root", "cwd"})
		case "source":
			diags = append(diags, l.checkSourceRef(tr)...)
		case expr.RecordVar:
			if !allowRecord {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference to record",
					Detail:  "record (the event being transformed) exists only inside transform steps (set, filter, route).",
					Subject: rng.Ptr()})
			}
		default:
			cands := append(slices.Clip(scope), configRoots...)
			detail := fmt.Sprintf("There is no variable named %q.%s", root, suggest(root, cands))
			if root == aggVar || root == otherVar || root == keyVar {
				detail += fmt.Sprintf(" %s exists only in the add and merge expressions of an aggregate block.", root)
			}
			if allowRecord && root == "value" {
				detail += " The record's value is read as record, as in record.service."
			}
			if len(scope) > 1 {
				detail += fmt.Sprintf(" Here the record variables are %s.", quoteList(scope))
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown variable",
				Detail: detail, Subject: rng.Ptr()})
		}
	}
	diags = append(diags, l.checkSourceIndexes(ex)...)
	diags = append(diags, l.checkFuncs(ex)...)
	return diags
}

func (l *loader) ctxHasTopics() bool {
	_, ok := l.ctx.Variables["topic"]
	return ok
}

// pos renders a range's start as file:line:col.
func pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// suppressed is returned for expressions that use a variable or local
// that already failed: it stops their evaluation without repeating the
// error (LoadSources drops it).
var suppressed = &hcl.Diagnostic{Severity: hcl.DiagError}

func (l *loader) poisonedRef(ex hcl.Expression) bool {
	for _, tr := range ex.Variables() {
		if len(tr) < 2 {
			continue
		}
		if a, ok := tr[1].(hcl.TraverseAttr); ok && l.poisoned[tr.RootName()+"."+a.Name] {
			return true
		}
	}
	return false
}

// value checks references and evaluates a config-time expression.
func (l *loader) value(ex hcl.Expression) (cty.Value, hcl.Diagnostics) {
	if d := l.checkRefs(ex, false); d.HasErrors() {
		return cty.NilVal, d
	}
	if l.poisonedRef(ex) {
		return cty.NilVal, hcl.Diagnostics{suppressed}
	}
	v, diags := ex.Value(l.ctx)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if !v.IsWhollyKnown() {
		return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown value",
			Detail: "This value cannot be determined when the pipeline is loaded.", Subject: ex.Range().Ptr()}}
	}
	return v, diags
}

func suggest(given string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := levenshtein.Distance(given, k, nil); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

func keys(m map[string]cty.Value) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keysS(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// srcBytes returns the source text of rng (for hashing declarations).
func (l *loader) srcBytes(rng hcl.Range) []byte {
	f := l.cfg.Files[rng.Filename]
	if f == nil || rng.End.Byte > len(f.Bytes) || rng.Start.Byte > rng.End.Byte {
		return nil
	}
	return f.Bytes[rng.Start.Byte:rng.End.Byte]
}

func joinNames(l []string) string { return strings.Join(l, ", ") }

// dedupe drops repeated diagnostics (same place, same message).
func dedupe(diags hcl.Diagnostics) hcl.Diagnostics {
	seen := map[string]bool{}
	out := diags[:0]
	for _, d := range diags {
		if d == suppressed {
			continue
		}
		k := DiagLine(d)
		if d.Subject != nil {
			k += fmt.Sprintf("@%d-%d", d.Subject.Start.Byte, d.Subject.End.Byte)
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}

// nameCallAttributes adds the attribute (and its block) to the detail of
// a failed function call, such as env("X") of an unset variable or
// file("x") of a file that cannot be read: "In broker.client_config: ...".
func nameCallAttributes(files map[string]*hcl.File, diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Summary != "Error in function call" || d.Subject == nil {
			continue
		}
		f, ok := files[d.Subject.Filename]
		if !ok {
			continue
		}
		body, ok := f.Body.(*hclsyntax.Body)
		if !ok {
			continue
		}
		if name := attributeAt(body, *d.Subject, ""); name != "" {
			d.Detail = fmt.Sprintf("In %s: %s", name, d.Detail)
		}
	}
}

// attributeAt names the attribute of body whose expression holds rng.
func attributeAt(body *hclsyntax.Body, rng hcl.Range, prefix string) string {
	for name, a := range body.Attributes {
		if r := a.Expr.Range(); r.ContainsOffset(rng.Start.Byte) {
			return prefix + name
		}
	}
	for _, b := range body.Blocks {
		if !b.Body.SrcRange.ContainsOffset(rng.Start.Byte) {
			continue
		}
		p := prefix + b.Type
		for _, l := range b.Labels {
			p += "." + l
		}
		return attributeAt(b.Body, rng, p+".")
	}
	return ""
}
