package expr

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Record values inside transforms use a small native domain, so compiled
// expressions run without cty conversions:
//
//	nil, bool, string, int64, float64, time.Time, []byte, []any, *Object
//
// JSON integers become int64, other numbers float64; Avro values are
// normalized into the same domain (package pipelines/codec).

// Object is an ordered set of fields: a record or a map. Lookups are
// linear, which beats a Go map for the dozen fields of a log event, and
// the order of fields is kept for output.
type Object struct {
	Keys []string
	Vals []any
}

// Get returns the value of field k (nil, false when absent).
func (o *Object) Get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	for i, kk := range o.Keys {
		if kk == k {
			return o.Vals[i], true
		}
	}
	return nil, false
}

// Set sets field k, appending it when new.
func (o *Object) Set(k string, v any) {
	for i, kk := range o.Keys {
		if kk == k {
			o.Vals[i] = v
			return
		}
	}
	o.Keys = append(o.Keys, k)
	o.Vals = append(o.Vals, v)
}

// Delete removes field k and reports whether it was there.
func (o *Object) Delete(k string) bool {
	for i, kk := range o.Keys {
		if kk == k {
			o.Keys = append(o.Keys[:i], o.Keys[i+1:]...)
			o.Vals = append(o.Vals[:i], o.Vals[i+1:]...)
			return true
		}
	}
	return false
}

// Rename renames field from to to (replacing a field called to) and
// reports whether from was there.
func (o *Object) Rename(from, to string) bool {
	for i, kk := range o.Keys {
		if kk == from {
			v := o.Vals[i]
			o.Keys = append(o.Keys[:i], o.Keys[i+1:]...)
			o.Vals = append(o.Vals[:i], o.Vals[i+1:]...)
			o.Set(to, v)
			return true
		}
	}
	return false
}

// Len is the number of fields.
func (o *Object) Len() int { return len(o.Keys) }

// Truthy is the condition semantics of filter and route: only true is
// true; null, false and anything else are not.
func Truthy(v any) bool {
	b, ok := v.(bool)
	return ok && b
}

// ToString renders a scalar as a string (templates, string functions).
func ToString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case nil:
		return "", errNull
	}
	return "", fmt.Errorf("a %s cannot be used as a string", TypeName(v))
}

// ToNumber converts to int64 or float64.
func ToNumber(v any) (any, error) {
	switch x := v.(type) {
	case int64, float64:
		return x, nil
	case string:
		if i, err := strconv.ParseInt(x, 10, 64); err == nil {
			return i, nil
		}
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return f, nil
		}
		return nil, fmt.Errorf("%q is not a number", x)
	case []byte:
		return ToNumber(string(x))
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case time.Time:
		return x.UnixMilli(), nil
	case nil:
		return nil, errNull
	}
	return nil, fmt.Errorf("a %s is not a number", TypeName(v))
}

// ToFloat returns a number as a float64, and whether v is a number.
func ToFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// TypeName names the type of a native value in error messages.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string, []byte:
		return "string"
	case int64, float64:
		return "number"
	case time.Time:
		return "timestamp"
	case []any:
		return "list"
	case *Object:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// Equal is HCL's == over the native domain: numbers compare by value,
// strings and bytes by content, lists and objects deeply.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		switch y := b.(type) {
		case string:
			return x == y
		case []byte:
			return x == string(y)
		}
		return false
	case []byte:
		switch y := b.(type) {
		case string:
			return string(x) == y
		case []byte:
			return string(x) == string(y)
		}
		return false
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return float64(x) == y
		}
		return false
	case float64:
		f, ok := ToFloat(b)
		return ok && f == x
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Object:
		y, ok := b.(*Object)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for i, k := range x.Keys {
			v, ok := y.Get(k)
			if !ok || !Equal(x.Vals[i], v) {
				return false
			}
		}
		return true
	}
	return false
}

// compare orders numbers, strings and timestamps; it returns -1, 0, 1.
func compare(a, b any) (int, error) {
	if a == nil || b == nil {
		return 0, errNull
	}
	if x, ok := a.(time.Time); ok {
		if y, ok := b.(time.Time); ok {
			return x.Compare(y), nil
		}
	}
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp3(x < y, x > y), nil
		}
	case string:
		if y, ok := b.(string); ok {
			return cmp3(x < y, x > y), nil
		}
	}
	xn, err := ToNumber(a)
	if err != nil {
		return 0, err
	}
	yn, err := ToNumber(b)
	if err != nil {
		return 0, err
	}
	xf, _ := ToFloat(xn)
	yf, _ := ToFloat(yn)
	return cmp3(xf < yf, xf > yf), nil
}

func cmp3(lt, gt bool) int {
	if lt {
		return -1
	}
	if gt {
		return 1
	}
	return 0
}

// arith applies + - * / % with int64 arithmetic when both sides are
// integers (division excepted), float64 otherwise.
func arith(op byte, a, b any) (any, error) {
	an, err := ToNumber(a)
	if err != nil {
		return nil, err
	}
	bn, err := ToNumber(b)
	if err != nil {
		return nil, err
	}
	ai, aInt := an.(int64)
	bi, bInt := bn.(int64)
	if aInt && bInt && op != '/' {
		switch op {
		case '+':
			return ai + bi, nil
		case '-':
			return ai - bi, nil
		case '*':
			return ai * bi, nil
		case '%':
			if bi == 0 {
				return nil, fmt.Errorf("modulo by zero")
			}
			return ai % bi, nil
		}
	}
	af, _ := ToFloat(an)
	bf, _ := ToFloat(bn)
	switch op {
	case '+':
		return af + bf, nil
	case '-':
		return af - bf, nil
	case '*':
		return af * bf, nil
	case '/':
		if bf == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return af / bf, nil
	case '%':
		if bf == 0 {
			return nil, fmt.Errorf("modulo by zero")
		}
		return math.Mod(af, bf), nil
	}
	return nil, fmt.Errorf("unknown operator %c", op)
}

// Plain converts a native value to plain Go values: objects become
// map[string]any (losing their order), lists []any of plain values.
func Plain(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Plain(e)
		}
		return out
	case *Object:
		m := make(map[string]any, x.Len())
		for i, k := range x.Keys {
			m[k] = Plain(x.Vals[i])
		}
		return m
	}
	return v
}
