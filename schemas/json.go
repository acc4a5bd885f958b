package schemas

import (
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"

	"weir/internal/jsonw"
)

// AppendJSON appends the Avro JSON encoding of the native value v of s to
// b: records as objects with fields in schema order, unions as null or
// {"branch": value}, bytes and fixed as strings of code points U+0000 to
// U+00FF, logical types as their underlying type, and NaN or infinite
// floats as the strings "NaN", "Infinity", "-Infinity".
func AppendJSON(b []byte, s *Schema, v any) ([]byte, error) {
	return appendJSON(b, s.Root, v, 0)
}

func appendJSON(b []byte, n *Node, v any, depth int) ([]byte, error) {
	if depth > 512 {
		return b, fmt.Errorf("%w: value nested deeper than 512 levels", ErrInvalidDatum)
	}
	switch n.Kind {
	case Null:
		if v != nil {
			return b, datumErr(n, v)
		}
		return append(b, "null"...), nil
	case Boolean:
		x, ok := v.(bool)
		if !ok {
			return b, datumErr(n, v)
		}
		return strconv.AppendBool(b, x), nil
	case Int, Long:
		i, ok := toInt64(v, n.Logical)
		if !ok {
			return b, datumErr(n, v)
		}
		return strconv.AppendInt(b, i, 10), nil
	case Float, Double:
		f, ok := toFloat64(v)
		if !ok {
			return b, datumErr(n, v)
		}
		switch {
		case math.IsNaN(f):
			return append(b, `"NaN"`...), nil
		case math.IsInf(f, 1):
			return append(b, `"Infinity"`...), nil
		case math.IsInf(f, -1):
			return append(b, `"-Infinity"`...), nil
		}
		bits := 64
		if n.Kind == Float {
			bits = 32
		}
		return strconv.AppendFloat(b, f, 'g', -1, bits), nil
	case String:
		switch x := v.(type) {
		case string:
			return jsonw.AppendString(b, x), nil
		case []byte:
			return jsonw.AppendString(b, string(x)), nil
		}
		return b, datumErr(n, v)
	case Bytes, Fixed:
		var raw []byte
		switch x := v.(type) {
		case []byte:
			raw = x
		case string:
			raw = []byte(x)
		case *big.Rat:
			size := 0
			if n.Kind == Fixed {
				size = n.Size
			}
			raw = unscaled(x, n.Scale, size)
		default:
			return b, datumErr(n, v)
		}
		runes := make([]rune, len(raw))
		for i, c := range raw {
			runes[i] = rune(c)
		}
		return jsonw.AppendString(b, string(runes)), nil
	case Enum:
		s, ok := v.(string)
		if !ok || !hasSym(n, s) {
			return b, datumErr(n, v)
		}
		return jsonw.AppendString(b, s), nil
	case Array:
		list, ok := v.([]any)
		if !ok {
			if ss, isSS := v.([]string); isSS {
				list = make([]any, len(ss))
				for i, s := range ss {
					list[i] = s
				}
			} else {
				return b, datumErr(n, v)
			}
		}
		b = append(b, '[')
		for i, it := range list {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, n.Items, it, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return b, datumErr(n, v)
		}
		b = append(b, '{')
		first := true
		for _, k := range sortedKeys(m) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(jsonw.AppendString(b, k), ':')
			var err error
			if b, err = appendJSON(b, n.Values, m[k], depth+1); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case Union:
		if v == nil {
			return append(b, "null"...), nil
		}
		name, inner, i := "", v, -1
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for k, x := range m {
				for j, br := range n.Branches {
					if unionName(br) == k || br.Name == k || (br.Kind.named() && shortName(br.Name) == k) || (!br.Kind.named() && br.Kind.String() == k) {
						name, inner, i = unionName(br), x, j
					}
				}
			}
		}
		if i < 0 { // a bare value: the first branch that takes it
			for j, br := range n.Branches {
				if br.Kind == Null {
					continue
				}
				if _, err := appendJSON(nil, br, v, depth+1); err == nil {
					name, i = unionName(br), j
					break
				}
			}
		}
		if i < 0 {
			return b, fmt.Errorf("%w: %T matches no branch of union %v", ErrInvalidDatum, v, unionNames(n))
		}
		b = append(jsonw.AppendString(append(b, '{'), name), ':')
		b, err := appendJSON(b, n.Branches[i], inner, depth+1)
		if err != nil {
			return b, err
		}
		return append(b, '}'), nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return b, datumErr(n, v)
	}
	b = append(b, '{')
	for i, f := range n.Fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonw.AppendString(b, f.Name), ':')
		fv, ok := m[f.Name]
		if !ok {
			if !f.HasDefault {
				return b, fmt.Errorf("%w: record %q: field %q is missing", ErrInvalidDatum, n.Name, f.Name)
			}
			d, err := nativeDefault(f.Type, f.Default, 0)
			if err != nil {
				return b, err
			}
			fv = d
		}
		var err error
		if b, err = appendJSON(b, f.Type, fv, depth+1); err != nil {
			return b, fmt.Errorf("field %q: %w", f.Name, err)
		}
	}
	return append(b, '}'), nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
