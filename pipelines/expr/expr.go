package expr

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

// Fn evaluates a compiled expression against one record.
type Fn func(rec *Object) (any, error)

var errNull = errors.New("value is null")

// RecordVar is the name under which transform expressions see the record.
const RecordVar = "record"

// Compiler compiles HCL native-syntax expressions into Fns.
type Compiler struct {
	Ctx *hcl.EvalContext // constants and functions
	// Scope, when set, lists the per-record variables an expression may
	// read (aggregate expressions: record, agg, key): the evaluated
	// object then holds one field per name. Unset, the evaluated object
	// is the record itself, read as record.
	Scope []string
}

// dynamic reports whether e reads per-record data (so it cannot be
// folded into a constant).
func (c *Compiler) dynamic(e hclsyntax.Expression) bool {
	if len(c.Scope) == 0 {
		return usesName(e, RecordVar)
	}
	for _, n := range c.Scope {
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

func constFn(v any) Fn { return func(*Object) (any, error) { return v, nil } }

// Compile turns e into an evalFn. References and function names must
// have been checked (checkExpr).
func (c *Compiler) Compile(e hclsyntax.Expression) (Fn, hcl.Diagnostics) {
	if !c.dynamic(e) && !callsVolatile(e) {
		v, diags := e.Value(c.Ctx)
		if diags.HasErrors() {
			return nil, diags
		}
		return constFn(FromCty(v)), nil
	}
	switch x := e.(type) {
	case *hclsyntax.ParenthesesExpr:
		return c.Compile(x.Expression)
	case *hclsyntax.TemplateWrapExpr:
		return c.Compile(x.Wrapped)
	case *hclsyntax.ScopeTraversalExpr:
		root := x.Traversal.RootName()
		if len(c.Scope) > 0 {
			if !slices.Contains(c.Scope, root) {
				break
			}
			return traverseFn(func(rec *Object) (any, error) { v, _ := rec.Get(root); return v, nil }, x.Traversal[1:]), nil
		}
		if root != RecordVar {
			break
		}
		return traverseFn(func(rec *Object) (any, error) { return rec, nil }, x.Traversal[1:]), nil
	case *hclsyntax.RelativeTraversalExpr:
		src, diags := c.Compile(x.Source)
		if diags.HasErrors() {
			return nil, diags
		}
		return traverseFn(src, x.Traversal), nil
	case *hclsyntax.IndexExpr:
		coll, d1 := c.Compile(x.Collection)
		key, d2 := c.Compile(x.Key)
		if diags := append(d1, d2...); diags.HasErrors() {
			return nil, diags
		}
		return eval2(coll, key, index), nil
	case *hclsyntax.TemplateExpr:
		return c.template(x)
	case *hclsyntax.BinaryOpExpr:
		return c.binary(x)
	case *hclsyntax.UnaryOpExpr:
		v, diags := c.Compile(x.Val)
		if diags.HasErrors() {
			return nil, diags
		}
		if x.Op == hclsyntax.OpLogicalNot {
			return eval1(v, not), nil
		}
		return eval1(v, negate), nil
	case *hclsyntax.ConditionalExpr:
		cond, d1 := c.Compile(x.Condition)
		t, d2 := c.Compile(x.TrueResult)
		f, d3 := c.Compile(x.FalseResult)
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
				return nil, fmt.Errorf("condition must be a bool, got a %s", TypeName(cv))
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
		keys := make([]Fn, len(x.Items))
		vals := make([]Fn, len(x.Items))
		var diags hcl.Diagnostics
		for i, it := range x.Items {
			var d hcl.Diagnostics
			if k, ok := it.KeyExpr.(*hclsyntax.ObjectConsKeyExpr); ok && !k.ForceNonLiteral {
				if name := hcl.ExprAsKeyword(k.Wrapped); name != "" {
					keys[i] = constFn(name)
				}
			}
			if keys[i] == nil {
				keys[i], d = c.Compile(it.KeyExpr)
				diags = append(diags, d...)
			}
			vals[i], d = c.Compile(it.ValueExpr)
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
				ks, err := ToString(kv)
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
func (c *Compiler) fallback(e hclsyntax.Expression) Fn {
	return func(rec *Object) (any, error) {
		ctx := c.Ctx.NewChild()
		if len(c.Scope) > 0 {
			ctx.Variables = make(map[string]cty.Value, len(c.Scope))
			for _, n := range c.Scope {
				v, _ := rec.Get(n)
				ctx.Variables[n] = ToCty(v)
			}
		} else {
			ctx.Variables = map[string]cty.Value{RecordVar: ToCty(rec)}
		}
		v, diags := e.Value(ctx)
		if diags.HasErrors() {
			return nil, errors.New(DiagSummary(diags))
		}
		return FromCty(v), nil
	}
}

// DiagSummary joins the error diagnostics of diags into one line.
func DiagSummary(diags hcl.Diagnostics) string {
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

func traverseFn(src Fn, steps hcl.Traversal) Fn {
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
			keys[i] = FromCty(t.Key)
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
	return nil, fmt.Errorf("cannot read attribute %q of a %s", name, TypeName(v))
}

func index(coll, key any) (any, error) {
	switch x := coll.(type) {
	case nil:
		return nil, nil
	case *Object:
		k, err := ToString(key)
		if err != nil {
			return nil, fmt.Errorf("object key: %w", err)
		}
		f, _ := x.Get(k)
		return f, nil
	case []any:
		n, err := ToNumber(key)
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
	return nil, fmt.Errorf("cannot index a %s", TypeName(coll))
}

// compileAll compiles each expression, collecting every diagnostic.
func (c *Compiler) compileAll(exprs []hclsyntax.Expression) ([]Fn, hcl.Diagnostics) {
	fns := make([]Fn, len(exprs))
	var diags hcl.Diagnostics
	for i, e := range exprs {
		var d hcl.Diagnostics
		fns[i], d = c.Compile(e)
		diags = append(diags, d...)
	}
	return fns, diags
}

func (c *Compiler) template(x *hclsyntax.TemplateExpr) (Fn, hcl.Diagnostics) {
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
			s, err := ToString(v)
			if err != nil {
				return nil, err
			}
			sb.WriteString(s)
		}
		return sb.String(), nil
	}, nil
}

// eval1 is the Fn that applies f to the value of v.
func eval1(v Fn, f func(a any) (any, error)) Fn {
	return func(rec *Object) (any, error) {
		a, err := v(rec)
		if err != nil {
			return nil, err
		}
		return f(a)
	}
}

// eval2 is the Fn that applies f to the values of l and r (both
// evaluated, l first).
func eval2(l, r Fn, f func(a, b any) (any, error)) Fn {
	return func(rec *Object) (any, error) {
		a, err := l(rec)
		if err != nil {
			return nil, err
		}
		b, err := r(rec)
		if err != nil {
			return nil, err
		}
		return f(a, b)
	}
}

func not(a any) (any, error) {
	b, ok := a.(bool)
	if !ok {
		return nil, fmt.Errorf("! wants a bool, got a %s", TypeName(a))
	}
	return !b, nil
}

func negate(a any) (any, error) { return arith('-', int64(0), a) }

// binaryOps are the binary operators evaluated natively, on both
// operands' values (&& and || short-circuit: see binary); other
// operators fall back to HCL.
var binaryOps = map[*hclsyntax.Operation]func(a, b any) (any, error){
	hclsyntax.OpEqual:              func(a, b any) (any, error) { return Equal(a, b), nil },
	hclsyntax.OpNotEqual:           func(a, b any) (any, error) { return !Equal(a, b), nil },
	hclsyntax.OpGreaterThan:        ordered(func(c int) bool { return c > 0 }),
	hclsyntax.OpGreaterThanOrEqual: ordered(func(c int) bool { return c >= 0 }),
	hclsyntax.OpLessThan:           ordered(func(c int) bool { return c < 0 }),
	hclsyntax.OpLessThanOrEqual:    ordered(func(c int) bool { return c <= 0 }),
	hclsyntax.OpAdd:                arithmetic('+'),
	hclsyntax.OpSubtract:           arithmetic('-'),
	hclsyntax.OpMultiply:           arithmetic('*'),
	hclsyntax.OpDivide:             arithmetic('/'),
	hclsyntax.OpModulo:             arithmetic('%'),
}

// ordered is a comparison: holds tells from compare's result whether it
// is true; a missing field (nil) compares false.
func ordered(holds func(c int) bool) func(a, b any) (any, error) {
	return func(a, b any) (any, error) {
		if a == nil || b == nil {
			return false, nil
		}
		c, err := compare(a, b)
		if err != nil {
			return nil, err
		}
		return holds(c), nil
	}
}

func arithmetic(op byte) func(a, b any) (any, error) {
	return func(a, b any) (any, error) { return arith(op, a, b) }
}

func (c *Compiler) binary(x *hclsyntax.BinaryOpExpr) (Fn, hcl.Diagnostics) {
	l, d1 := c.Compile(x.LHS)
	r, d2 := c.Compile(x.RHS)
	if diags := append(d1, d2...); diags.HasErrors() {
		return nil, diags
	}
	if x.Op == hclsyntax.OpLogicalAnd || x.Op == hclsyntax.OpLogicalOr {
		decides := x.Op == hclsyntax.OpLogicalOr // the left value that decides alone
		return func(rec *Object) (any, error) {
			a, err := boolOf(l, rec)
			if err != nil || a == decides {
				return a, err
			}
			return boolOf(r, rec)
		}, nil
	}
	if f, ok := binaryOps[x.Op]; ok {
		return eval2(l, r, f), nil
	}
	return c.fallback(x), nil
}

// boolOf is the value of an operand of && or ||.
func boolOf(f Fn, rec *Object) (bool, error) {
	v, err := f(rec)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("&& and || want bools, got a %s", TypeName(v))
	}
	return b, nil
}

func (c *Compiler) call(x *hclsyntax.FunctionCallExpr) (Fn, hcl.Diagnostics) {
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
			pv, d := x.Args[1].Value(c.Ctx)
			if d.HasErrors() {
				return nil, d
			}
			ps, err := ToString(FromCty(pv))
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
			return eval1(args[0], func(a any) (any, error) {
				v, err := fn1(a)
				return called(name, v, err)
			}), nil
		}
		return func(rec *Object) (any, error) {
			var buf [4]any
			a, err := evalArgs(rec, buf[:0])
			if err != nil {
				return nil, err
			}
			v, err := fn(a)
			return called(name, v, err)
		}, nil
	}
	f, ok := c.Ctx.Functions[name]
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
			cargs[i] = ToCty(v)
		}
		v, err := f.Call(cargs)
		if err != nil {
			return called(name, nil, err)
		}
		return FromCty(v), nil
	}, nil
}

// called passes function name's result on, naming the function in an
// error.
func called(name string, v any, err error) (any, error) {
	if err != nil {
		return nil, fmt.Errorf("%s(): %w", name, err)
	}
	return v, nil
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
