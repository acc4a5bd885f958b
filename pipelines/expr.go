package pipelines

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Transform expressions are compiled once into Go closures over the
// native value domain (value.go): a record field access is a linear
// lookup, an operator a type switch, a function one call. Sub-expressions
// that do not read the record (var.x, local.y, env("X"), "literal") are
// folded into constants at compile time. Expression kinds without a
// native form (for expressions, splats) fall back to HCL's own evaluator
// over a cty copy of the record: correct, slower.

// evalFn evaluates a compiled expression against one record.
type evalFn func(rec *Object) (any, error)

var errNull = errors.New("value is null")

// recordVar is the name under which transform expressions see the record.
const recordVar = "record"

type compiler struct {
	ctx *hcl.EvalContext // constants and functions
	// scope, when set, lists the per-record variables an expression may
	// read (aggregate expressions: record, agg, key): the evaluated
	// object then holds one field per name. Unset, the evaluated object
	// is the record itself, read as record.
	scope []string
}

// dynamic reports whether e reads per-record data (so it cannot be
// folded into a constant).
func (c *compiler) dynamic(e hclsyntax.Expression) bool {
	if len(c.scope) == 0 {
		return usesName(e, recordVar)
	}
	for _, n := range c.scope {
		if usesName(e, n) {
			return true
		}
	}
	return false
}

func usesName(e hclsyntax.Expression, name string) bool {
	for _, t := range e.Variables() {
		if t.RootName() == name {
			return true
		}
	}
	return false
}

func callsVolatile(e hclsyntax.Expression) bool {
	found := false
	_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && c.Name == "now" {
			found = true
		}
		return nil
	})
	return found
}

func constFn(v any) evalFn { return func(*Object) (any, error) { return v, nil } }

// compile turns e into an evalFn. References and function names must
// have been checked (checkExpr).
func (c *compiler) compile(e hclsyntax.Expression) (evalFn, hcl.Diagnostics) {
	if !c.dynamic(e) && !callsVolatile(e) {
		v, diags := e.Value(c.ctx)
		if diags.HasErrors() {
			return nil, diags
		}
		return constFn(fromCty(v)), nil
	}
	switch x := e.(type) {
	case *hclsyntax.ParenthesesExpr:
		return c.compile(x.Expression)
	case *hclsyntax.TemplateWrapExpr:
		return c.compile(x.Wrapped)
	case *hclsyntax.ScopeTraversalExpr:
		root := x.Traversal.RootName()
		if len(c.scope) > 0 {
			if !slices.Contains(c.scope, root) {
				break
			}
			return traverseFn(func(rec *Object) (any, error) { v, _ := rec.Get(root); return v, nil }, x.Traversal[1:]), nil
		}
		if root != recordVar {
			break
		}
		return traverseFn(func(rec *Object) (any, error) { return rec, nil }, x.Traversal[1:]), nil
	case *hclsyntax.RelativeTraversalExpr:
		src, diags := c.compile(x.Source)
		if diags.HasErrors() {
			return nil, diags
		}
		return traverseFn(src, x.Traversal), nil
	case *hclsyntax.IndexExpr:
		coll, d1 := c.compile(x.Collection)
		key, d2 := c.compile(x.Key)
		if diags := append(d1, d2...); diags.HasErrors() {
			return nil, diags
		}
		return func(rec *Object) (any, error) {
			cv, err := coll(rec)
			if err != nil {
				return nil, err
			}
			kv, err := key(rec)
			if err != nil {
				return nil, err
			}
			return index(cv, kv)
		}, nil
	case *hclsyntax.TemplateExpr:
		return c.template(x)
	case *hclsyntax.BinaryOpExpr:
		return c.binary(x)
	case *hclsyntax.UnaryOpExpr:
		v, diags := c.compile(x.Val)
		if diags.HasErrors() {
			return nil, diags
		}
		if x.Op == hclsyntax.OpLogicalNot {
			return func(rec *Object) (any, error) {
				b, err := v(rec)
				if err != nil {
					return nil, err
				}
				bb, ok := b.(bool)
				if !ok {
					return nil, fmt.Errorf("! wants a bool, got a %s", typeName(b))
				}
				return !bb, nil
			}, nil
		}
		return func(rec *Object) (any, error) {
			n, err := v(rec)
			if err != nil {
				return nil, err
			}
			return arith('-', int64(0), n)
		}, nil
	case *hclsyntax.ConditionalExpr:
		cond, d1 := c.compile(x.Condition)
		t, d2 := c.compile(x.TrueResult)
		f, d3 := c.compile(x.FalseResult)
		if diags := append(append(d1, d2...), d3...); diags.HasErrors() {
			return nil, diags
		}
		return func(rec *Object) (any, error) {
			cv, err := cond(rec)
			if err != nil {
				return nil, err
			}
			b, ok := cv.(bool)
			if !ok {
				return nil, fmt.Errorf("condition must be a bool, got a %s", typeName(cv))
			}
			if b {
				return t(rec)
			}
			return f(rec)
		}, nil
	case *hclsyntax.FunctionCallExpr:
		if !x.ExpandFinal {
			return c.call(x)
		}
	case *hclsyntax.TupleConsExpr:
		fns, diags := c.compileAll(x.Exprs)
		if diags.HasErrors() {
			return nil, diags
		}
		return func(rec *Object) (any, error) {
			out := make([]any, len(fns))
			for i, f := range fns {
				v, err := f(rec)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}, nil
	case *hclsyntax.ObjectConsExpr:
		keys := make([]evalFn, len(x.Items))
		vals := make([]evalFn, len(x.Items))
		var diags hcl.Diagnostics
		for i, it := range x.Items {
			var d hcl.Diagnostics
			if k, ok := it.KeyExpr.(*hclsyntax.ObjectConsKeyExpr); ok && !k.ForceNonLiteral {
				if name := hcl.ExprAsKeyword(k.Wrapped); name != "" {
					keys[i] = constFn(name)
				}
			}
			if keys[i] == nil {
				keys[i], d = c.compile(it.KeyExpr)
				diags = append(diags, d...)
			}
			vals[i], d = c.compile(it.ValueExpr)
			diags = append(diags, d...)
		}
		if diags.HasErrors() {
			return nil, diags
		}
		return func(rec *Object) (any, error) {
			o := &Object{Keys: make([]string, 0, len(keys)), Vals: make([]any, 0, len(keys))}
			for i := range keys {
				kv, err := keys[i](rec)
				if err != nil {
					return nil, err
				}
				ks, err := toString(kv)
				if err != nil {
					return nil, fmt.Errorf("object key: %w", err)
				}
				v, err := vals[i](rec)
				if err != nil {
					return nil, err
				}
				o.Set(ks, v)
			}
			return o, nil
		}, nil
	}
	return c.fallback(e), nil
}

// fallback evaluates e with HCL over a cty copy of the record.
func (c *compiler) fallback(e hclsyntax.Expression) evalFn {
	return func(rec *Object) (any, error) {
		ctx := c.ctx.NewChild()
		if len(c.scope) > 0 {
			ctx.Variables = make(map[string]cty.Value, len(c.scope))
			for _, n := range c.scope {
				v, _ := rec.Get(n)
				ctx.Variables[n] = toCty(v)
			}
		} else {
			ctx.Variables = map[string]cty.Value{recordVar: toCty(rec)}
		}
		v, diags := e.Value(ctx)
		if diags.HasErrors() {
			return nil, errors.New(diagSummary(diags))
		}
		return fromCty(v), nil
	}
}

func diagSummary(diags hcl.Diagnostics) string {
	var parts []string
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			s := d.Summary
			if d.Detail != "" {
				s += ": " + d.Detail
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

func traverseFn(src evalFn, steps hcl.Traversal) evalFn {
	if len(steps) == 0 {
		return src
	}
	// The common case, record.field, without a loop.
	if a, ok := steps[0].(hcl.TraverseAttr); ok && len(steps) == 1 {
		name := a.Name
		return func(rec *Object) (any, error) {
			v, err := src(rec)
			if err != nil {
				return nil, err
			}
			if o, ok := v.(*Object); ok {
				f, _ := o.Get(name)
				return f, nil
			}
			return attr(v, name)
		}
	}
	keys := make([]any, len(steps))
	for i, s := range steps {
		switch t := s.(type) {
		case hcl.TraverseAttr:
			keys[i] = t.Name
		case hcl.TraverseIndex:
			keys[i] = fromCty(t.Key)
		case hcl.TraverseSplat:
			keys[i] = nil
		}
	}
	return func(rec *Object) (any, error) {
		v, err := src(rec)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if v == nil {
				return nil, nil // a missing field reads as null all the way down
			}
			if v, err = index(v, k); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
}

func attr(v any, name string) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case *Object:
		f, _ := x.Get(name)
		return f, nil
	}
	return nil, fmt.Errorf("cannot read attribute %q of a %s", name, typeName(v))
}

func index(coll, key any) (any, error) {
	switch x := coll.(type) {
	case nil:
		return nil, nil
	case *Object:
		k, err := toString(key)
		if err != nil {
			return nil, fmt.Errorf("object key: %w", err)
		}
		f, _ := x.Get(k)
		return f, nil
	case []any:
		n, err := toNumber(key)
		if err != nil {
			return nil, fmt.Errorf("list index: %w", err)
		}
		i, ok := n.(int64)
		if !ok {
			return nil, fmt.Errorf("list index %v is not a whole number", n)
		}
		if i < 0 || i >= int64(len(x)) {
			return nil, nil
		}
		return x[i], nil
	}
	return nil, fmt.Errorf("cannot index a %s", typeName(coll))
}

// compileAll compiles each expression, collecting every diagnostic.
func (c *compiler) compileAll(exprs []hclsyntax.Expression) ([]evalFn, hcl.Diagnostics) {
	fns := make([]evalFn, len(exprs))
	var diags hcl.Diagnostics
	for i, e := range exprs {
		var d hcl.Diagnostics
		fns[i], d = c.compile(e)
		diags = append(diags, d...)
	}
	return fns, diags
}

func (c *compiler) template(x *hclsyntax.TemplateExpr) (evalFn, hcl.Diagnostics) {
	parts, diags := c.compileAll(x.Parts)
	if diags.HasErrors() {
		return nil, diags
	}
	return func(rec *Object) (any, error) {
		var sb strings.Builder
		for _, p := range parts {
			v, err := p(rec)
			if err != nil {
				return nil, err
			}
			if v == nil {
				continue // a missing field renders as ""
			}
			s, err := toString(v)
			if err != nil {
				return nil, err
			}
			sb.WriteString(s)
		}
		return sb.String(), nil
	}, nil
}

func (c *compiler) binary(x *hclsyntax.BinaryOpExpr) (evalFn, hcl.Diagnostics) {
	l, d1 := c.compile(x.LHS)
	r, d2 := c.compile(x.RHS)
	if diags := append(d1, d2...); diags.HasErrors() {
		return nil, diags
	}
	boolOf := func(f evalFn, rec *Object) (bool, error) {
		v, err := f(rec)
		if err != nil {
			return false, err
		}
		b, ok := v.(bool)
		if !ok {
			return false, fmt.Errorf("&& and || want bools, got a %s", typeName(v))
		}
		return b, nil
	}
	switch x.Op {
	case hclsyntax.OpLogicalAnd:
		return func(rec *Object) (any, error) {
			a, err := boolOf(l, rec)
			if err != nil || !a {
				return false, err
			}
			return boolOf(r, rec)
		}, nil
	case hclsyntax.OpLogicalOr:
		return func(rec *Object) (any, error) {
			a, err := boolOf(l, rec)
			if err != nil || a {
				return a, err
			}
			return boolOf(r, rec)
		}, nil
	case hclsyntax.OpEqual, hclsyntax.OpNotEqual:
		want := x.Op == hclsyntax.OpEqual
		return func(rec *Object) (any, error) {
			a, err := l(rec)
			if err != nil {
				return nil, err
			}
			b, err := r(rec)
			if err != nil {
				return nil, err
			}
			return equal(a, b) == want, nil
		}, nil
	case hclsyntax.OpGreaterThan, hclsyntax.OpGreaterThanOrEqual, hclsyntax.OpLessThan, hclsyntax.OpLessThanOrEqual:
		op := x.Op
		return func(rec *Object) (any, error) {
			a, err := l(rec)
			if err != nil {
				return nil, err
			}
			b, err := r(rec)
			if err != nil {
				return nil, err
			}
			if a == nil || b == nil {
				return false, nil // a missing field compares false
			}
			c, err := compare(a, b)
			if err != nil {
				return nil, err
			}
			switch op {
			case hclsyntax.OpGreaterThan:
				return c > 0, nil
			case hclsyntax.OpGreaterThanOrEqual:
				return c >= 0, nil
			case hclsyntax.OpLessThan:
				return c < 0, nil
			}
			return c <= 0, nil
		}, nil
	}
	var op byte
	switch x.Op {
	case hclsyntax.OpAdd:
		op = '+'
	case hclsyntax.OpSubtract:
		op = '-'
	case hclsyntax.OpMultiply:
		op = '*'
	case hclsyntax.OpDivide:
		op = '/'
	case hclsyntax.OpModulo:
		op = '%'
	default:
		return c.fallback(x), nil
	}
	return func(rec *Object) (any, error) {
		a, err := l(rec)
		if err != nil {
			return nil, err
		}
		b, err := r(rec)
		if err != nil {
			return nil, err
		}
		return arith(op, a, b)
	}, nil
}

func (c *compiler) call(x *hclsyntax.FunctionCallExpr) (evalFn, hcl.Diagnostics) {
	args, diags := c.compileAll(x.Args)
	if diags.HasErrors() {
		return nil, diags
	}
	evalArgs := func(rec *Object, buf []any) ([]any, error) {
		for _, a := range args {
			v, err := a(rec)
			if err != nil {
				return nil, err
			}
			buf = append(buf, v)
		}
		return buf, nil
	}
	name := x.Name
	rng := x.NameRange
	if rf, ok := regexFuncs[name]; ok {
		if len(args) != regexArity[name] {
			return nil, hcl.Diagnostics{arityDiag(name, regexArity[name], regexArity[name], len(args), rng)}
		}
		if !c.dynamic(x.Args[1]) {
			pv, d := x.Args[1].Value(c.ctx)
			if d.HasErrors() {
				return nil, d
			}
			ps, err := toString(fromCty(pv))
			if err == nil {
				re, rerr := regexp.Compile(ps)
				if rerr != nil {
					return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid regular expression",
						Detail: fmt.Sprintf("The pattern of %s does not compile: %v.", name, rerr), Subject: x.Args[1].Range().Ptr()}}
				}
				return func(rec *Object) (any, error) {
					var buf [3]any
					a, err := evalArgs(rec, buf[:0])
					if err != nil {
						return nil, err
					}
					return rf(re, a)
				}, nil
			}
		}
	}
	if nf, ok := nativeFuncs[name]; ok {
		if len(args) < nf.min || (nf.max >= 0 && len(args) > nf.max) {
			return nil, hcl.Diagnostics{arityDiag(name, nf.min, nf.max, len(args), rng)}
		}
		fn := nf.fn
		if fn1 := unaryFuncs[name]; fn1 != nil && len(args) == 1 {
			arg := args[0]
			return func(rec *Object) (any, error) {
				a, err := arg(rec)
				if err != nil {
					return nil, err
				}
				v, err := fn1(a)
				if err != nil {
					return nil, fmt.Errorf("%s(): %w", name, err)
				}
				return v, nil
			}, nil
		}
		return func(rec *Object) (any, error) {
			var buf [4]any
			a, err := evalArgs(rec, buf[:0])
			if err != nil {
				return nil, err
			}
			v, err := fn(a)
			if err != nil {
				return nil, fmt.Errorf("%s(): %w", name, err)
			}
			return v, nil
		}, nil
	}
	f, ok := c.ctx.Functions[name]
	if !ok {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Call to unknown function",
			Detail: fmt.Sprintf("There is no function named %q.", name), Subject: rng.Ptr()}}
	}
	return func(rec *Object) (any, error) {
		cargs := make([]cty.Value, len(args))
		for i, a := range args {
			v, err := a(rec)
			if err != nil {
				return nil, err
			}
			cargs[i] = toCty(v)
		}
		v, err := f.Call(cargs)
		if err != nil {
			return nil, fmt.Errorf("%s(): %w", name, err)
		}
		return fromCty(v), nil
	}, nil
}

func arityDiag(name string, min, max, got int, rng hcl.Range) *hcl.Diagnostic {
	want := fmt.Sprintf("%d", min)
	if max < 0 {
		want = fmt.Sprintf("at least %d", min)
	} else if max != min {
		want = fmt.Sprintf("%d to %d", min, max)
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Wrong number of function arguments",
		Detail: fmt.Sprintf("Function %q takes %s arguments, got %d.", name, want, got), Subject: rng.Ptr()}
}
