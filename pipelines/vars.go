package pipelines

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"weir/pipelines/expr"
)

// EnvVarPrefix prefixes environment variables that set input variables:
// WEIR_VAR_name.
const EnvVarPrefix = "WEIR_VAR_"

var variableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "type"}, {Name: "default"}, {Name: "description"},
}}

type varDecl struct {
	block *hcl.Block
	typ   cty.Type
	def   cty.Value
	set   bool
	// badDefault: the default did not decode (already reported).
	badDefault bool
}

// decodeVariables reads variable blocks and resolves each variable's
// value: default < WEIR_VAR_x < -var-file (in order) < -var (in order).
func (l *loader) decodeVariables(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	l.vars = map[string]cty.Value{}
	l.varTypes = map[string]cty.Type{}
	decls := map[string]*varDecl{}
	var order []string
	for _, b := range blocks {
		name := b.Labels[0]
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable name",
				Detail: fmt.Sprintf("%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", name), Subject: b.LabelRanges[0].Ptr()})
			continue
		}
		if d := l.dup("variable", name, b); d != nil {
			diags = append(diags, d)
			continue
		}
		c, d := b.Body.Content(variableSchema)
		diags = append(diags, d...)
		v := &varDecl{block: b, typ: cty.DynamicPseudoType}
		if a, ok := c.Attributes["type"]; ok {
			t, d := typeexpr.TypeConstraint(a.Expr)
			diags = append(diags, d...)
			if !d.HasErrors() {
				v.typ = t
			}
		}
		if a, ok := c.Attributes["description"]; ok {
			if _, d := a.Expr.Value(nil); d.HasErrors() {
				diags = append(diags, d...)
			}
		}
		if a, ok := c.Attributes["default"]; ok {
			v.badDefault = true
			dv, d := a.Expr.Value(nil)
			if d.HasErrors() {
				diags = append(diags, d...)
			} else if cv, err := convert.Convert(dv, v.typ); err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid default value for variable",
					Detail: fmt.Sprintf("The default of variable %q does not match its type %s: %v.", name, typeexpr.TypeString(v.typ), err), Subject: a.Expr.Range().Ptr()})
			} else {
				v.def, v.set, v.badDefault = cv, true, false
			}
		}
		decls[name] = v
		order = append(order, name)
		l.varTypes[name] = v.typ
	}
	values := map[string]cty.Value{}
	for name, v := range decls {
		if v.set {
			values[name] = v.def
		}
		if s, ok := l.opts.LookupEnv(EnvVarPrefix + name); ok {
			cv, err := parseVarString(s, v.typ)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
					Detail: fmt.Sprintf("Environment variable %s%s: %v.", EnvVarPrefix, name, err), Subject: v.block.DefRange.Ptr()})
			} else {
				values[name] = cv
			}
		}
	}
	for _, vf := range l.opts.VarFiles {
		src, err := os.ReadFile(vf)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read variables file", Detail: err.Error()})
			continue
		}
		f, d := l.parser.ParseHCL(src, vf)
		diags = append(diags, d...)
		if f == nil {
			continue
		}
		l.cfg.Files[vf] = f
		attrs, d := f.Body.JustAttributes()
		diags = append(diags, d...)
		for _, a := range sortedAttrs(attrs) {
			decl, ok := decls[a.Name]
			if !ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
					Detail: fmt.Sprintf("No variable named %q is declared.%s", a.Name, suggest(a.Name, order)), Subject: a.NameRange.Ptr()})
				continue
			}
			av, d := a.Expr.Value(nil)
			if d.HasErrors() {
				diags = append(diags, d...)
				continue
			}
			cv, err := convert.Convert(av, decl.typ)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
					Detail: fmt.Sprintf("Variable %q wants %s: %v.", a.Name, typeexpr.TypeString(decl.typ), err), Subject: a.Expr.Range().Ptr()})
				continue
			}
			values[a.Name] = cv
		}
	}
	for _, kv := range l.opts.Vars {
		name, s, ok := strings.Cut(kv, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("-var %q: want NAME=VALUE.", kv)})
			continue
		}
		decl, ok := decls[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
				Detail: fmt.Sprintf("-var %s: no variable named %q is declared.%s", kv, name, suggest(name, order))})
			continue
		}
		cv, err := parseVarString(s, decl.typ)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail: fmt.Sprintf("-var %s: %v.", name, err)})
			continue
		}
		values[name] = cv
	}
	sort.Strings(order)
	for _, name := range order {
		v, ok := values[name]
		if !ok {
			d := decls[name]
			l.poisoned["var."+name] = true
			if d.badDefault {
				l.vars[name] = cty.NullVal(d.typ)
				continue
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No value for required variable",
				Detail:  fmt.Sprintf("Variable %q has no default: set it with -var %s=..., a -var-file, or the environment variable %s%s.", name, name, EnvVarPrefix, name),
				Subject: d.block.DefRange.Ptr()})
			// Keep a null of the right type so later references still
			// type-check without cascading errors.
			v = cty.NullVal(decls[name].typ)
		}
		l.vars[name] = v
	}
	l.cfg.Vars = l.vars
	return diags
}

// parseVarString converts a -var or WEIR_VAR_ string: taken as is for
// string (and untyped) variables, parsed as an HCL expression otherwise.
func parseVarString(s string, t cty.Type) (cty.Value, error) {
	if t == cty.String || t == cty.DynamicPseudoType {
		return cty.StringVal(s), nil
	}
	x, diags := hclsyntax.ParseExpression([]byte(s), "<value>", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("%q is not a valid %s", s, typeexpr.TypeString(t))
	}
	v, diags := x.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("%q: %s", s, expr.DiagSummary(diags))
	}
	cv, err := convert.Convert(v, t)
	if err != nil {
		return cty.NilVal, fmt.Errorf("%q is not a valid %s: %v", s, typeexpr.TypeString(t), err)
	}
	return cv, nil
}

// evalLocals evaluates locals blocks in dependency order; cycles are
// errors.
func (l *loader) evalLocals(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	l.locals = map[string]cty.Value{}
	attrs := map[string]*hcl.Attribute{}
	var order []string
	for _, b := range blocks {
		as, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for _, a := range sortedAttrs(as) {
			if prev, ok := attrs[a.Name]; ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate local value",
					Detail: fmt.Sprintf("Local %q is already defined at %s.", a.Name, pos(prev.NameRange)), Subject: a.NameRange.Ptr()})
				continue
			}
			attrs[a.Name] = a
			order = append(order, a.Name)
		}
	}
	// Placeholders so references between locals resolve while checking.
	for _, n := range order {
		l.locals[n] = cty.DynamicVal
	}
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	failed := map[string]bool{}
	var visit func(name string, path []string) bool
	visit = func(name string, path []string) bool {
		a := attrs[name]
		switch state[name] {
		case 1:
			cyc := append(path, name)
			i := 0
			for cyc[i] != name {
				i++
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cycle in local values",
				Detail:  fmt.Sprintf("Local values refer to each other in a loop: local.%s.", strings.Join(cyc[i:], " → local.")),
				Subject: a.Expr.Range().Ptr()})
			return false
		case 2:
			return !failed[name]
		}
		state[name] = 1
		ok := true
		for _, tr := range a.Expr.Variables() {
			if tr.RootName() != "local" || len(tr) < 2 {
				continue
			}
			if ta, isAttr := tr[1].(hcl.TraverseAttr); isAttr {
				if _, declared := attrs[ta.Name]; declared && !visit(ta.Name, append(path, name)) {
					ok = false
				}
			}
		}
		state[name] = 2
		if ok {
			l.buildContext(nil)
			v, d := l.value(a.Expr)
			diags = append(diags, d...)
			if d.HasErrors() {
				ok = false
			} else {
				l.locals[name] = v
			}
		}
		if !ok {
			failed[name] = true
			l.poisoned["local."+name] = true
			l.locals[name] = cty.DynamicVal
		}
		return ok
	}
	for _, n := range order {
		visit(n, nil)
	}
	l.varsJSON = valuesJSON(l.vars) + valuesJSON(l.locals)
	return diags
}

func valuesJSON(m map[string]cty.Value) string {
	var sb strings.Builder
	for _, k := range keys(m) {
		v := m[k]
		if !v.IsWhollyKnown() {
			continue
		}
		b, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			continue
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.Write(b)
		sb.WriteByte(';')
	}
	return sb.String()
}

// checkFuncs reports calls to unknown functions.
func (l *loader) checkFuncs(expr hcl.Expression) hcl.Diagnostics {
	se, ok := expr.(hclsyntax.Expression)
	if !ok {
		return nil
	}
	var diags hcl.Diagnostics
	_ = hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		c, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok {
			return nil
		}
		if _, ok := l.ctx.Functions[c.Name]; !ok {
			names := make([]string, 0, len(l.ctx.Functions))
			for n := range l.ctx.Functions {
				names = append(names, n)
			}
			sort.Strings(names)
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Call to unknown function",
				Detail:  fmt.Sprintf("There is no function named %q.%s", c.Name, suggest(c.Name, names)),
				Subject: c.NameRange.Ptr()})
		}
		return nil
	})
	return diags
}

// ctyToGo converts a config value for connector specs: strings, int64
// or float64 numbers, bools, []any, map[string]any.
func ctyToGo(v cty.Value) any {
	n := expr.FromCty(v)
	return expr.Plain(n)
}

func rawJSON(raw map[string]any) string {
	b, err := json.Marshal(raw)
	if err != nil {
		return fmt.Sprint(raw)
	}
	return string(b)
}
