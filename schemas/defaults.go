package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"time"
)

// defaultFunc returns a function producing the native form of the JSON
// default d for n. Scalars are converted once; complex values are rebuilt
// on every call so decoded records never share mutable state.
func defaultFunc(n *Node, d any) (func() any, error) {
	v, err := nativeDefault(n, d, 0)
	if err != nil {
		return nil, err
	}
	switch v.(type) {
	case map[string]any, []any, []byte, *big.Rat:
		return func() any {
			fresh, _ := nativeDefault(n, d, 0)
			return fresh
		}, nil
	}
	return func() any { return v }, nil
}

// nativeDefault converts a field default (decoded JSON) to native form.
func nativeDefault(n *Node, d any, depth int) (any, error) {
	if depth > 256 {
		return nil, fmt.Errorf("default nested too deeply")
	}
	bad := func() (any, error) {
		return nil, fmt.Errorf("%s is not a valid %s", compactJSON(d), n.TypeName())
	}
	switch n.Kind {
	case Null:
		if d != nil {
			return bad()
		}
		return nil, nil
	case Boolean:
		b, ok := d.(bool)
		if !ok {
			return bad()
		}
		return b, nil
	case Int, Long:
		num, ok := d.(json.Number)
		if !ok {
			return bad()
		}
		i, err := num.Int64()
		if err != nil {
			return bad()
		}
		if n.Kind == Int {
			if i < math.MinInt32 || i > math.MaxInt32 {
				return bad()
			}
			return logicalFromInt(n, int32(i)), nil
		}
		return logicalFromLong(n, i), nil
	case Float, Double:
		var f float64
		switch x := d.(type) {
		case json.Number:
			v, err := x.Float64()
			if err != nil {
				return bad()
			}
			f = v
		case string:
			switch x {
			case "NaN":
				f = math.NaN()
			case "Infinity":
				f = math.Inf(1)
			case "-Infinity":
				f = math.Inf(-1)
			default:
				return bad()
			}
		default:
			return bad()
		}
		if n.Kind == Float {
			return float32(f), nil
		}
		return f, nil
	case String:
		s, ok := d.(string)
		if !ok {
			return bad()
		}
		return s, nil
	case Bytes, Fixed:
		s, ok := d.(string)
		if !ok {
			return bad()
		}
		b := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 255 {
				return nil, fmt.Errorf("default %q has a code point above U+00FF, which bytes defaults cannot hold", s)
			}
			b = append(b, byte(r))
		}
		if n.Kind == Fixed && len(b) != n.Size {
			return nil, fmt.Errorf("default %q has %d bytes, fixed %q needs %d", s, len(b), n.Name, n.Size)
		}
		if n.Logical == "decimal" {
			return decimal(b, n.Scale), nil
		}
		return b, nil
	case Enum:
		s, ok := d.(string)
		if !ok || !hasSym(n, s) {
			return bad()
		}
		return s, nil
	case Array:
		list, ok := d.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(list))
		for i, it := range list {
			v, err := nativeDefault(n.Items, it, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case Map:
		m, ok := d.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(m))
		for k, it := range m {
			v, err := nativeDefault(n.Values, it, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case Union:
		if len(n.Branches) == 0 {
			return bad()
		}
		first := n.Branches[0]
		v, err := nativeDefault(first, d, depth+1)
		if err != nil {
			return nil, err
		}
		if first.Kind == Null {
			return nil, nil
		}
		return map[string]any{unionName(first): v}, nil
	case Record:
		m, ok := d.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(n.Fields))
		for _, f := range n.Fields {
			fv, ok := m[f.Name]
			if !ok {
				if !f.HasDefault {
					return nil, fmt.Errorf("record default lacks field %q", f.Name)
				}
				fv = f.Default
			}
			v, err := nativeDefault(f.Type, fv, depth+1)
			if err != nil {
				return nil, err
			}
			out[f.Name] = v
		}
		return out, nil
	}
	return bad()
}

func logicalFromInt(n *Node, i int32) any {
	switch n.Logical {
	case "date":
		return epoch.AddDate(0, 0, int(i))
	case "time-millis":
		return time.Duration(i) * time.Millisecond
	}
	return i
}

func logicalFromLong(n *Node, i int64) any {
	switch n.Logical {
	case "time-micros":
		return time.Duration(i) * time.Microsecond
	case "timestamp-millis":
		return time.Unix(i/1e3, (i%1e3)*1e6).UTC()
	case "timestamp-micros":
		return time.Unix(i/1e6, (i%1e6)*1e3).UTC()
	}
	return i
}
