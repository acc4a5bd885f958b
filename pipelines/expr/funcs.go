package expr

import (
	"bytes"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Functions are the functions of every HCL expression (Terraform's
// names). Per-record expressions call the native versions in
// nativeFuncs where one exists, and these through a cty conversion
// otherwise.
func Functions(baseDir string) map[string]function.Function {
	return map[string]function.Function{
		"abs":           stdlib.AbsoluteFunc,
		"ceil":          stdlib.CeilFunc,
		"floor":         stdlib.FloorFunc,
		"max":           stdlib.MaxFunc,
		"min":           stdlib.MinFunc,
		"coalesce":      stdlib.CoalesceFunc,
		"concat":        stdlib.ConcatFunc,
		"contains":      stdlib.ContainsFunc,
		"format":        stdlib.FormatFunc,
		"join":          stdlib.JoinFunc,
		"jsondecode":    stdlib.JSONDecodeFunc,
		"jsonencode":    stdlib.JSONEncodeFunc,
		"keys":          stdlib.KeysFunc,
		"length":        stdlib.LengthFunc,
		"lookup":        stdlib.LookupFunc,
		"lower":         stdlib.LowerFunc,
		"merge":         stdlib.MergeFunc,
		"regex":         stdlib.RegexFunc,
		"regexall":      stdlib.RegexAllFunc,
		"regex_replace": stdlib.RegexReplaceFunc,
		"replace":       stdlib.ReplaceFunc,
		"split":         stdlib.SplitFunc,
		"substr":        stdlib.SubstrFunc,
		"title":         stdlib.TitleFunc,
		"trim":          stdlib.TrimFunc,
		"trimprefix":    stdlib.TrimPrefixFunc,
		"trimsuffix":    stdlib.TrimSuffixFunc,
		"trimspace":     stdlib.TrimSpaceFunc,
		"upper":         stdlib.UpperFunc,
		"values":        stdlib.ValuesFunc,
		"tostring":      stdlib.MakeToFunc(cty.String),
		"tonumber":      stdlib.MakeToFunc(cty.Number),
		"tobool":        stdlib.MakeToFunc(cty.Bool),
		"startswith":    strPredFunc(strings.HasPrefix),
		"endswith":      strPredFunc(strings.HasSuffix),
		"strcontains":   strPredFunc(strings.Contains),
		"env":           envFunc,
		"file":          fileFunc(baseDir),
		"now":           nowFunc,
		"regex_match":   regexMatchFunc,
	}
}

// regexMatchFunc is regex_match(str, pattern): whether pattern matches
// somewhere in str.
var regexMatchFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "pattern", Type: cty.String}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		re, err := regexp.Compile(args[1].AsString())
		if err != nil {
			return cty.NilVal, err
		}
		return cty.BoolVal(re.MatchString(args[0].AsString())), nil
	},
})

func strPredFunc(f func(s, x string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "x", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(f(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

// envFunc is env("NAME"): the environment variable; unset, an error
// naming it, unless a default is given: env("NAME", "default"). Its
// value is never part of the error.
var envFunc = function.New(&function.Spec{
	Params:   []function.Parameter{{Name: "name", Type: cty.String}},
	VarParam: &function.Parameter{Name: "default", Type: cty.String},
	Type:     function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if len(args) > 2 {
			return cty.NilVal, fmt.Errorf("env takes a name and at most one default, not %d arguments", len(args))
		}
		name := args[0].AsString()
		if v, ok := os.LookupEnv(name); ok {
			return cty.StringVal(v), nil
		}
		if len(args) == 2 {
			return args[1], nil
		}
		return cty.NilVal, fmt.Errorf("environment variable %s is not set (give a default with env(%q, \"...\") if it may be unset)", name, name)
	},
})

// nowFunc is now(): the current time as an RFC 3339 string (per record
// in transforms, where it is a timestamp).
var nowFunc = function.New(&function.Spec{
	Type: function.StaticReturnType(cty.String),
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
		return cty.StringVal(time.Now().UTC().Format(time.RFC3339Nano)), nil
	},
})

// fileFunc is file("path"): the file's content, relative paths from the
// directory of the pipeline files. One trailing line break ("\n" or
// "\r\n") is dropped, so a secret written with echo or an editor is the
// secret alone (unlike Terraform's file(), which keeps it); other
// whitespace is kept.
func fileFunc(baseDir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			if !filepath.IsAbs(p) {
				p = filepath.Join(baseDir, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return cty.NilVal, err
			}
			if !utf8.Valid(b) {
				return cty.NilVal, fmt.Errorf("%s is not UTF-8 text", p)
			}
			if bytes.HasSuffix(b, []byte("\n")) {
				b = bytes.TrimSuffix(b[:len(b)-1], []byte("\r"))
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

// nativeFunc is a per-record function over the native value domain.
type nativeFunc struct {
	min, max int // arity (max -1: variadic)
	fn       func(args []any) (any, error)
}

func str1(f func(string) string) nativeFunc {
	u := str1Unary(f)
	return nativeFunc{1, 1, func(a []any) (any, error) { return u(a[0]) }}
}

func str1Unary(f func(string) string) func(any) (any, error) {
	return func(a any) (any, error) {
		s, err := ToString(a)
		if err != nil {
			return nil, err
		}
		return f(s), nil
	}
}

// unaryFuncs are native functions of one argument called without an
// argument slice (which would escape to the heap on every call); each
// is also in nativeFuncs, which checks its arity.
var unaryFuncs = map[string]func(any) (any, error){
	"lower":     str1Unary(strings.ToLower),
	"upper":     str1Unary(strings.ToUpper),
	"trimspace": str1Unary(strings.TrimSpace),
}

func strPred(f func(s, x string) bool) nativeFunc {
	return nativeFunc{2, 2, func(a []any) (any, error) {
		s, err := ToString(a[0])
		if err != nil {
			return nil, err
		}
		x, err := ToString(a[1])
		if err != nil {
			return nil, err
		}
		return f(s, x), nil
	}}
}

var nativeFuncs = map[string]nativeFunc{
	"lower":       str1(strings.ToLower),
	"upper":       str1(strings.ToUpper),
	"trimspace":   str1(strings.TrimSpace),
	"startswith":  strPred(strings.HasPrefix),
	"endswith":    strPred(strings.HasSuffix),
	"strcontains": strPred(strings.Contains),
	"tostring": {1, 1, func(a []any) (any, error) {
		if a[0] == nil {
			return nil, nil
		}
		return ToString(a[0])
	}},
	"tonumber": {1, 1, func(a []any) (any, error) {
		if a[0] == nil {
			return nil, nil
		}
		return ToNumber(a[0])
	}},
	"replace": {3, 3, func(a []any) (any, error) {
		var s [3]string
		for i := range s {
			var err error
			if s[i], err = ToString(a[i]); err != nil {
				return nil, err
			}
		}
		return strings.ReplaceAll(s[0], s[1], s[2]), nil
	}},
	"length": {1, 1, func(a []any) (any, error) {
		switch x := a[0].(type) {
		case string:
			return int64(utf8.RuneCountInString(x)), nil
		case []byte:
			return int64(utf8.RuneCount(x)), nil
		case []any:
			return int64(len(x)), nil
		case *Object:
			return int64(x.Len()), nil
		}
		return nil, fmt.Errorf("length of a %s", TypeName(a[0]))
	}},
	"coalesce": {1, -1, func(a []any) (any, error) {
		for _, v := range a {
			if v != nil {
				if s, ok := v.(string); ok && s == "" {
					continue
				}
				return v, nil
			}
		}
		return nil, fmt.Errorf("no non-null, non-empty argument")
	}},
	"contains": {2, 2, func(a []any) (any, error) {
		l, ok := a[0].([]any)
		if !ok {
			return nil, fmt.Errorf("contains wants a list, got a %s", TypeName(a[0]))
		}
		for _, e := range l {
			if Equal(e, a[1]) {
				return true, nil
			}
		}
		return false, nil
	}},
	"lookup": {2, 3, func(a []any) (any, error) {
		o, ok := a[0].(*Object)
		k, err := ToString(a[1])
		if err != nil {
			return nil, err
		}
		if ok {
			if v, ok := o.Get(k); ok {
				return v, nil
			}
		}
		if len(a) == 3 {
			return a[2], nil
		}
		return nil, fmt.Errorf("no key %q", k)
	}},
	"join": {2, 2, func(a []any) (any, error) {
		sep, err := ToString(a[0])
		if err != nil {
			return nil, err
		}
		l, ok := a[1].([]any)
		if !ok {
			return nil, fmt.Errorf("join wants a list, got a %s", TypeName(a[1]))
		}
		parts := make([]string, len(l))
		for i, e := range l {
			if parts[i], err = ToString(e); err != nil {
				return nil, err
			}
		}
		return strings.Join(parts, sep), nil
	}},
	"split": {2, 2, func(a []any) (any, error) {
		sep, err := ToString(a[0])
		if err != nil {
			return nil, err
		}
		s, err := ToString(a[1])
		if err != nil {
			return nil, err
		}
		parts := strings.Split(s, sep)
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	}},
	"now": {0, 0, func([]any) (any, error) { return time.Now(), nil }},
}

// regexFuncs take a pattern as second argument (regex_match(str,
// pattern), regex_replace(str, pattern, replacement)); a constant
// pattern is compiled once (see compileCall).
var regexFuncs = map[string]func(re *regexp.Regexp, a []any) (any, error){
	"regex_match": func(re *regexp.Regexp, a []any) (any, error) {
		s, err := ToString(a[0])
		if err != nil {
			return nil, err
		}
		return re.MatchString(s), nil
	},
	"regex_replace": func(re *regexp.Regexp, a []any) (any, error) {
		s, err := ToString(a[0])
		if err != nil {
			return nil, err
		}
		r, err := ToString(a[2])
		if err != nil {
			return nil, err
		}
		return re.ReplaceAllString(s, r), nil
	},
}

var regexArity = map[string]int{"regex_match": 2, "regex_replace": 3}

// ToCty converts a native value for cty functions and fallback
// evaluation.
func ToCty(v any) cty.Value {
	switch x := v.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType)
	case bool:
		return cty.BoolVal(x)
	case string:
		return cty.StringVal(x)
	case []byte:
		return cty.StringVal(strings.ToValidUTF8(string(x), "\ufffd"))
	case int64:
		return cty.NumberIntVal(x)
	case float64:
		return cty.NumberFloatVal(x)
	case time.Time:
		return cty.StringVal(x.UTC().Format(time.RFC3339Nano))
	case []any:
		if len(x) == 0 {
			return cty.EmptyTupleVal
		}
		vs := make([]cty.Value, len(x))
		for i, e := range x {
			vs[i] = ToCty(e)
		}
		return cty.TupleVal(vs)
	case *Object:
		if x.Len() == 0 {
			return cty.EmptyObjectVal
		}
		m := make(map[string]cty.Value, x.Len())
		for i, k := range x.Keys {
			m[k] = ToCty(x.Vals[i])
		}
		return cty.ObjectVal(m)
	}
	return cty.StringVal(fmt.Sprint(v))
}

// FromCty converts a cty value to the native domain (unknown and null
// become nil).
func FromCty(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	v, _ = v.Unmark()
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Bool:
		return v.True()
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact {
				return i
			}
		}
		f, _ := bf.Float64()
		return f
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, FromCty(e))
		}
		return out
	case t.IsMapType() || t.IsObjectType():
		o := &Object{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			o.Keys = append(o.Keys, k.AsString())
			o.Vals = append(o.Vals, FromCty(e))
		}
		return o
	}
	return nil
}
