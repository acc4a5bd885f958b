package pipelines

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"weir/pipelines/expr"
)

// The declarative operators of a stream block, decoded here and run on
// the streams package by streamapp.go:
//
//	stream "errors_per_service" {
//	  from = [topic.app_logs]
//	  to   = topic.error_counts
//	  filter { condition = record.level == "error" }  # steps run first
//	  group_by = record.service     # omit to group by the record key
//	  window "tumbling" {           # or "hopping" (advance), "session" (gap)
//	    size  = "1m"
//	    grace = "10s"
//	    emit  = "final"             # or "updates" (the default)
//	  }
//	  count {}                      # or aggregate { initial add [merge] }
//	}
//
// select_key = <expr> re-keys records without aggregating (a stateless
// stream, run like the others).

// Attribute and block names of the declarative operators.
const (
	opGroupBy   = "group_by"
	opSelectKey = "select_key"
	opWindow    = "window"
	opCount     = "count"
	opAggregate = "aggregate"
)

// Per-record variables of aggregate expressions.
const (
	aggVar   = "agg"   // the aggregate so far (add, merge)
	otherVar = "other" // the other session's aggregate (merge)
	keyVar   = "key"   // the group key (add, merge)
)

// aggSpec is a stream's aggregation: group, optional window, then count
// or aggregate.
type aggSpec struct {
	groupBy  expr.Fn // nil: group by the record key
	keyField string  // output field holding the group key
	window   *windowSpec

	count bool
	// field is the output field of the count, or of a scalar aggregate.
	field          string
	initial        any
	add, mergeFn   expr.Fn
	addAt, mergeAt hcl.Range
}

// windowSpec is a window block.
type windowSpec struct {
	kind                      string // tumbling, hopping, session
	size, advance, gap, grace time.Duration
	emitFinal                 bool
	rangeOf                   hcl.Range
}

var windowKinds = []string{"tumbling", "hopping", "session"}

var (
	countSchema     = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "field"}}}
	aggregateSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "initial", Required: true},
		{Name: "add", Required: true}, {Name: "merge"}, {Name: "field"}}}
	windowSchemas = map[string]*hcl.BodySchema{
		"tumbling": {Attributes: []hcl.AttributeSchema{{Name: "size", Required: true}, {Name: "grace"}, {Name: "emit"}}},
		"hopping": {Attributes: []hcl.AttributeSchema{{Name: "size", Required: true}, {Name: "advance", Required: true},
			{Name: "grace"}, {Name: "emit"}}},
		"session": {Attributes: []hcl.AttributeSchema{{Name: "gap", Required: true}, {Name: "grace"}, {Name: "emit"}}},
	}
)

// isOpBlock reports whether a stream body block is a declarative
// operator (not a transform step).
func isOpBlock(t string) bool { return t == opWindow || t == opCount || t == opAggregate }

// decodeOps decodes a stream's group_by, select_key, window, count and
// aggregate. steps are the stream's transform step blocks (checked for
// what cannot precede an aggregation).
func (l *loader) decodeOps(c *hcl.BodyContent, s *Stream, steps hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var windows, counts, aggs hcl.Blocks
	for _, b := range c.Blocks {
		switch b.Type {
		case opWindow:
			windows = append(windows, b)
		case opCount:
			counts = append(counts, b)
		case opAggregate:
			aggs = append(aggs, b)
		}
	}
	groupA, hasGroup := c.Attributes[opGroupBy]
	if a, ok := c.Attributes[opSelectKey]; ok {
		comp := &expr.Compiler{Ctx: l.ctx}
		s.keyFn = l.compileAttr(comp, a, &diags)
		if hasGroup {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting stream settings",
				Detail:  "select_key re-keys records without aggregating; group_by groups them for count or aggregate (re-keying them as it does). Use one of them.",
				Subject: a.NameRange.Ptr()})
		}
		for _, b := range append(append(windows, counts...), aggs...) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting stream settings",
				Detail:  fmt.Sprintf("A %s block aggregates, but select_key re-keys without aggregating: to aggregate by an expression, write group_by = <expression> instead of select_key.", b.Type),
				Subject: b.DefRange.Ptr()})
		}
	}
	for i, b := range counts {
		if i > 0 {
			diags = append(diags, dupBlock(b, counts[0]))
		}
	}
	for i, b := range aggs {
		if i > 0 {
			diags = append(diags, dupBlock(b, aggs[0]))
		}
	}
	for i, b := range windows {
		if i > 0 {
			diags = append(diags, dupBlock(b, windows[0]))
		}
	}
	if len(counts) > 0 && len(aggs) > 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Conflicting stream settings",
			Detail:  fmt.Sprintf("A stream has one aggregation: count (at %s) or aggregate, not both. To count inside an aggregate, add a field such as n = agg.n + 1.", pos(counts[0].DefRange)),
			Subject: aggs[0].DefRange.Ptr()})
	}
	if len(counts) == 0 && len(aggs) == 0 {
		if hasGroup {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "group_by without an aggregation",
				Detail:  "group_by groups records for a count {} or aggregate {} block, and this stream has neither. To re-key records without aggregating, write select_key = <expression>.",
				Subject: groupA.NameRange.Ptr()})
		}
		for _, b := range windows {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Window without an aggregation",
				Detail: "A window cuts an aggregation into time windows: add count {} or aggregate { ... } to the stream.", Subject: b.DefRange.Ptr()})
		}
		return diags
	}
	ag := &aggSpec{keyField: "key"}
	s.agg = ag
	if hasGroup {
		scope := []string{expr.RecordVar}
		ag.groupBy = l.compileScoped(&expr.Compiler{Ctx: l.ctx}, groupA.Expr, scope, &diags)
		ag.keyField = keyFieldOf(groupA.Expr)
	}
	if len(windows) > 0 {
		w, d := l.decodeWindow(windows[0])
		diags = append(diags, d...)
		ag.window = w
	}
	if len(counts) > 0 {
		ag.count, ag.field = true, "count"
		cc, d := counts[0].Body.Content(countSchema)
		diags = append(diags, d...)
		if a, ok := cc.Attributes["field"]; ok {
			f, d := l.fieldNameAttr(a)
			diags = append(diags, d...)
			ag.field = f
		}
	} else {
		diags = append(diags, l.decodeAggregate(aggs[0], ag)...)
	}
	// Steps run before the aggregation: a step written after it would
	// look like it filtered the results.
	first := c.Blocks[0].DefRange
	for _, b := range c.Blocks {
		if isOpBlock(b.Type) {
			first = b.DefRange
			break
		}
	}
	for _, b := range steps {
		if b.DefRange.Start.Byte > first.Start.Byte {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Transform step after the aggregation",
				Detail:  fmt.Sprintf("Transform steps run on input records, before the aggregation (at %s); move this %s block above it. To transform the results, add a stream that reads this stream's output topic.", pos(first), b.Type),
				Subject: b.DefRange.Ptr()})
		}
		switch b.Type {
		case "route":
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Route in an aggregating stream",
				Detail:  "An aggregating stream writes its results to its to topic; route steps send records elsewhere. Route in a stream of its own, before this one.",
				Subject: b.DefRange.Ptr()})
		}
	}
	return diags
}

func dupBlock(b, first *hcl.Block) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate %s block", b.Type),
		Detail: fmt.Sprintf("A stream has at most one %s block; the first is at %s.", b.Type, pos(first.DefRange)), Subject: b.DefRange.Ptr()}
}

// keyFieldOf names the output field of the group key after group_by's
// last attribute when it is a plain reference (record.service →
// "service"), "key" otherwise.
func keyFieldOf(e hcl.Expression) string {
	if st, ok := e.(*hclsyntax.ScopeTraversalExpr); ok && len(st.Traversal) > 1 {
		if a, ok := st.Traversal[len(st.Traversal)-1].(hcl.TraverseAttr); ok {
			return a.Name
		}
	}
	return "key"
}

func (l *loader) fieldNameAttr(a *hcl.Attribute) (string, hcl.Diagnostics) {
	f, d := l.stringAttr(a)
	if !d.HasErrors() && f == "" {
		d = append(d, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty field name",
			Detail: "field names the output field of the result; it cannot be empty.", Subject: a.Expr.Range().Ptr()})
	}
	return f, d
}

func (l *loader) decodeWindow(b *hcl.Block) (*windowSpec, hcl.Diagnostics) {
	kind := b.Labels[0]
	sch, ok := windowSchemas[kind]
	if !ok {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown window kind",
			Detail:  fmt.Sprintf("There is no window kind %q.%s Window kinds: %s.", kind, suggest(kind, windowKinds), joinNames(windowKinds)),
			Subject: b.LabelRanges[0].Ptr()}}
	}
	c, diags := b.Body.Content(sch)
	w := &windowSpec{kind: kind, rangeOf: b.DefRange}
	dur := func(name string, dst *time.Duration, positive bool) {
		a, ok := c.Attributes[name]
		if !ok {
			return
		}
		d, dd := l.durationAttr(a, positive)
		diags = append(diags, dd...)
		*dst = d
	}
	dur("size", &w.size, true)
	dur("advance", &w.advance, true)
	dur("gap", &w.gap, true)
	dur("grace", &w.grace, false)
	if a, ok := c.Attributes["advance"]; ok && w.advance > w.size && w.size > 0 {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid window",
			Detail:  fmt.Sprintf("A hopping window advances by at most its size: advance %s is larger than size %s (records would fall between windows).", w.advance, w.size),
			Subject: a.Expr.Range().Ptr()})
	}
	if a, ok := c.Attributes["emit"]; ok {
		e, d := l.stringAttr(a)
		diags = append(diags, d...)
		switch e {
		case "final":
			w.emitFinal = true
		case "updates", "changes":
		default:
			if !d.HasErrors() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid emit",
					Detail:  fmt.Sprintf("emit must be \"final\" (one result per window, when it closes) or \"updates\" (every change, the default), not %q.", e),
					Subject: a.Expr.Range().Ptr()})
			}
		}
	}
	return w, diags
}

// durationAttr reads a duration string ("90s", "1m", "1h30m", "2d").
func (l *loader) durationAttr(a *hcl.Attribute, positive bool) (time.Duration, hcl.Diagnostics) {
	s, diags := l.stringAttr(a)
	if diags.HasErrors() {
		return 0, diags
	}
	d, err := parseDuration(s)
	bad := func(detail string) (time.Duration, hcl.Diagnostics) {
		return 0, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid duration",
			Detail: detail, Subject: a.Expr.Range().Ptr()})
	}
	switch {
	case err != nil:
		return bad(fmt.Sprintf("%s = %q is not a duration: write a number and a unit, as in \"10s\", \"1m\", \"1h30m\" or \"1d\" (units ms, s, m, h, d).", a.Name, s))
	case d < 0:
		return bad(fmt.Sprintf("%s = %q is negative; a %s is a length of time, at least 0.", a.Name, s, a.Name))
	case positive && d < time.Millisecond:
		return bad(fmt.Sprintf("%s = %q: a window's %s must be at least 1ms.", a.Name, s, a.Name))
	case d%time.Millisecond != 0:
		return bad(fmt.Sprintf("%s = %q: windows work in whole milliseconds.", a.Name, s))
	}
	return d, diags
}

// parseDuration is time.ParseDuration plus a "d" (24h) unit.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, err
		}
		d := time.Duration(n * float64(24*time.Hour))
		if rest := s[i+1:]; rest != "" {
			r, err := time.ParseDuration(rest)
			if err != nil {
				return 0, err
			}
			if n < 0 {
				r = -r
			}
			d += r
		}
		return d, nil
	}
	return time.ParseDuration(s)
}

func (l *loader) decodeAggregate(b *hcl.Block, ag *aggSpec) hcl.Diagnostics {
	c, diags := b.Body.Content(aggregateSchema)
	ag.field = "value"
	if a, ok := c.Attributes["field"]; ok {
		f, d := l.fieldNameAttr(a)
		diags = append(diags, d...)
		ag.field = f
	}
	if a, ok := c.Attributes["initial"]; ok {
		v, d := l.value(a.Expr)
		if d.HasErrors() {
			for _, dd := range d {
				if dd.Summary == "Unknown variable" || dd.Summary == "Invalid reference to record" {
					dd.Detail += " initial is the aggregate of a new group: a constant, such as { n = 0, bytes = 0 }."
				}
			}
		}
		diags = append(diags, d...)
		if !d.HasErrors() {
			ag.initial = expr.FromCty(v)
		}
	}
	comp := &expr.Compiler{Ctx: l.ctx}
	if a, ok := c.Attributes["add"]; ok {
		ag.add = l.compileScoped(comp, a.Expr, []string{expr.RecordVar, aggVar, keyVar}, &diags)
		ag.addAt = a.Expr.Range()
	}
	session := ag.window != nil && ag.window.kind == "session"
	if a, ok := c.Attributes["merge"]; ok {
		ag.mergeFn = l.compileScoped(comp, a.Expr, []string{aggVar, otherVar, keyVar}, &diags)
		ag.mergeAt = a.Expr.Range()
		if !session {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "merge without session windows",
				Detail:  "merge combines the aggregates of two sessions that a record joins; only a window \"session\" uses it. Remove merge, or window the stream by sessions.",
				Subject: a.NameRange.Ptr()})
		}
	} else if session {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing merge",
			Detail:  "An aggregate over session windows needs merge = <expression of agg and other>: when a record bridges two sessions they become one, and merge combines their aggregates (as in merge = { n = agg.n + other.n }).",
			Subject: b.DefRange.Ptr()})
	}
	return diags
}

// compileScoped checks and compiles a per-record expression that may read
// the variables in scope.
func (l *loader) compileScoped(comp *expr.Compiler, e hcl.Expression, scope []string, diags *hcl.Diagnostics) expr.Fn {
	if d := l.checkRefsIn(e, scope); d.HasErrors() {
		*diags = append(*diags, d...)
		return nil
	}
	se, ok := e.(hclsyntax.Expression)
	if !ok {
		*diags = append(*diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported expression",
			Detail: "Stream expressions must be written in HCL native syntax.", Subject: e.Range().Ptr()})
		return nil
	}
	c := &expr.Compiler{Ctx: comp.Ctx}
	if len(scope) > 1 || (len(scope) == 1 && scope[0] != expr.RecordVar) {
		c.Scope = scope
	}
	f, d := c.Compile(se)
	*diags = append(*diags, d...)
	return f
}
