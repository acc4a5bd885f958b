package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"
)

// ErrInvalidDatum is wrapped by errors about a native value that does not
// fit the schema being encoded.
var ErrInvalidDatum = errors.New("value does not match the Avro schema")

type encFn func(b []byte, v any) ([]byte, error)

// Encoder encodes native values (goavro's native form, plus common Go
// types: any integer or float kind, json.Number, []string,
// map[string]string, bare values for unions) as Avro binary. It is
// immutable and safe for concurrent use.
type Encoder struct {
	schema *Schema
	enc    encFn
}

// NewEncoder compiles the encoder of s.
func NewEncoder(s *Schema) *Encoder {
	c := &encCompiler{memo: map[*Node]*encFn{}}
	return &Encoder{schema: s, enc: c.compile(s.Root)}
}

// Schema returns the schema the encoder writes.
func (e *Encoder) Schema() *Schema { return e.schema }

// Append appends the Avro binary of v to b. On error b is returned
// unchanged (its spare capacity may have been written).
func (e *Encoder) Append(b []byte, v any) ([]byte, error) {
	out, err := e.enc(b, v)
	if err != nil {
		return b, err
	}
	return out, nil
}

type encCompiler struct {
	memo map[*Node]*encFn
}

func datumErr(n *Node, v any) error {
	return fmt.Errorf("%w: %T %s is not a valid %s", ErrInvalidDatum, v, shortValue(v), n.TypeName())
}

func shortValue(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

func (c *encCompiler) compile(n *Node) encFn {
	switch n.Kind {
	case Null:
		return func(b []byte, v any) ([]byte, error) {
			if v != nil {
				return b, datumErr(n, v)
			}
			return b, nil
		}
	case Boolean:
		return func(b []byte, v any) ([]byte, error) {
			x, ok := v.(bool)
			if !ok {
				return b, datumErr(n, v)
			}
			if x {
				return append(b, 1), nil
			}
			return append(b, 0), nil
		}
	case Int, Long:
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if n.Kind == Int {
			lo, hi = math.MinInt32, math.MaxInt32
		}
		logical := n.Logical
		return func(b []byte, v any) ([]byte, error) {
			i, ok := toInt64(v, logical)
			if !ok || i < lo || i > hi {
				return b, datumErr(n, v)
			}
			return appendLong(b, i), nil
		}
	case Float:
		return func(b []byte, v any) ([]byte, error) {
			f, ok := toFloat64(v)
			if !ok {
				return b, datumErr(n, v)
			}
			return appendFloat(b, float32(f)), nil
		}
	case Double:
		return func(b []byte, v any) ([]byte, error) {
			f, ok := toFloat64(v)
			if !ok {
				return b, datumErr(n, v)
			}
			return appendDouble(b, f), nil
		}
	case Bytes, String:
		decimal := n.Logical == "decimal"
		scale := n.Scale
		return func(b []byte, v any) ([]byte, error) {
			switch x := v.(type) {
			case string:
				return appendString(b, x), nil
			case []byte:
				return appendBytes(b, x), nil
			case *big.Rat:
				if decimal {
					return appendBytes(b, unscaled(x, scale, 0)), nil
				}
			}
			return b, datumErr(n, v)
		}
	case Fixed:
		decimal := n.Logical == "decimal"
		return func(b []byte, v any) ([]byte, error) {
			var x []byte
			switch t := v.(type) {
			case []byte:
				x = t
			case string:
				x = []byte(t)
			case *big.Rat:
				if decimal {
					x = unscaled(t, n.Scale, n.Size)
				}
			}
			if len(x) != n.Size {
				return b, fmt.Errorf("%w: fixed %q needs %d bytes, got %T of %d", ErrInvalidDatum, n.Name, n.Size, v, len(x))
			}
			return append(b, x...), nil
		}
	case Enum:
		return func(b []byte, v any) ([]byte, error) {
			s, ok := v.(string)
			if !ok {
				return b, datumErr(n, v)
			}
			i, ok := n.symIndex[s]
			if !ok {
				return b, fmt.Errorf("%w: %q is not a symbol of enum %q %v", ErrInvalidDatum, s, n.Name, n.Symbols)
			}
			return appendLong(b, int64(i)), nil
		}
	case Array:
		item := c.compile(n.Items)
		return func(b []byte, v any) ([]byte, error) {
			switch list := v.(type) {
			case []any:
				return appendArray(b, list, item)
			case []string:
				return appendArray(b, list, item)
			}
			return b, datumErr(n, v)
		}
	case Map:
		val := c.compile(n.Values)
		return func(b []byte, v any) ([]byte, error) {
			switch m := v.(type) {
			case map[string]any:
				return appendMap(b, m, val)
			case map[string]string:
				return appendMap(b, m, val)
			}
			return b, datumErr(n, v)
		}
	case Union:
		return c.union(n)
	}
	return c.record(n)
}

func (c *encCompiler) union(n *Node) encFn {
	branches := make([]encFn, len(n.Branches))
	byName := make(map[string]int, len(n.Branches))
	nullAt := -1
	for i, br := range n.Branches {
		branches[i] = c.compile(br)
		byName[unionName(br)] = i
		if br.Kind.named() {
			byName[shortName(br.Name)] = i
		}
		if ln := br.Kind.String(); ln != unionName(br) && !br.Kind.named() {
			byName[ln] = i
		}
		if br.Kind == Null {
			nullAt = i
		}
	}
	return func(b []byte, v any) ([]byte, error) {
		if v == nil {
			if nullAt < 0 {
				return b, fmt.Errorf("%w: null for a union without a null branch", ErrInvalidDatum)
			}
			return appendLong(b, int64(nullAt)), nil
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for k, inner := range m {
				if i, ok := byName[k]; ok {
					return branches[i](appendLong(b, int64(i)), inner)
				}
			}
		}
		// A bare value: the first branch that accepts it.
		for i, enc := range branches {
			if i == nullAt {
				continue
			}
			if out, err := enc(appendLong(b, int64(i)), v); err == nil {
				return out, nil
			}
		}
		return b, fmt.Errorf("%w: %T %s matches no branch of union %s", ErrInvalidDatum, v, shortValue(v), unionNames(n))
	}
}

func unionNames(n *Node) []string {
	out := make([]string, len(n.Branches))
	for i, b := range n.Branches {
		out[i] = unionName(b)
	}
	return out
}

type encField struct {
	name string
	enc  encFn
	def  func() any // nil: required
}

func (c *encCompiler) record(n *Node) encFn {
	if p, ok := c.memo[n]; ok {
		return func(b []byte, v any) ([]byte, error) { return (*p)(b, v) }
	}
	var self encFn
	c.memo[n] = &self
	fields := make([]encField, len(n.Fields))
	for i, f := range n.Fields {
		fields[i] = encField{name: f.Name, enc: c.compile(f.Type)}
		if f.HasDefault {
			if d, err := defaultFunc(f.Type, f.Default); err == nil {
				fields[i].def = d
			}
		}
	}
	self = func(b []byte, v any) ([]byte, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return b, datumErr(n, v)
		}
		var err error
		for i := range fields {
			f := &fields[i]
			fv, ok := m[f.name]
			if !ok {
				if f.def == nil {
					return b, fmt.Errorf("%w: record %q: field %q is missing and has no default", ErrInvalidDatum, n.Name, f.name)
				}
				fv = f.def()
			}
			if b, err = f.enc(b, fv); err != nil {
				return b, fmt.Errorf("field %q: %w", f.name, err)
			}
		}
		return b, nil
	}
	return self
}

func toInt64(v any, logical string) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case uint:
		return int64(x), uint64(x) <= math.MaxInt64
	case float64:
		return int64(x), x == math.Trunc(x) && x >= -(1<<63) && x < 1<<63
	case float32:
		return int64(x), float64(x) == math.Trunc(float64(x)) && x >= -(1<<63) && x < 1<<63
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	case time.Time:
		switch logical {
		case "timestamp-millis", "local-timestamp-millis":
			return x.Unix()*1e3 + int64(x.Nanosecond()/1e6), true
		case "timestamp-micros", "local-timestamp-micros":
			return x.Unix()*1e6 + int64(x.Nanosecond()/1e3), true
		case "date":
			return x.Unix() / 86400, true
		}
	case time.Duration:
		switch logical {
		case "time-millis":
			return int64(x / time.Millisecond), true
		case "time-micros":
			return int64(x / time.Microsecond), true
		}
	}
	return 0, false
}

func toFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	if i, ok := toInt64(v, ""); ok {
		return float64(i), true
	}
	return 0, false
}

// unscaled returns r*10^scale truncated, as big-endian two's complement,
// padded (sign-extended) to size bytes when size > 0.
func unscaled(r *big.Rat, scale, size int) []byte {
	n := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	n.Quo(n, r.Denom())
	var b []byte
	switch n.Sign() {
	case 0:
		b = []byte{0}
	case 1:
		b = n.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
	default:
		l := (n.BitLen() + 8) / 8
		m := new(big.Int).Add(n, new(big.Int).Lsh(big.NewInt(1), uint(l*8)))
		b = m.Bytes()
		for len(b) < l {
			b = append([]byte{0}, b...)
		}
	}
	if size > len(b) {
		pad := byte(0)
		if n.Sign() < 0 {
			pad = 0xff
		}
		p := make([]byte, size-len(b), size)
		for i := range p {
			p[i] = pad
		}
		b = append(p, b...)
	}
	return b
}

// appendArray writes list as an Avro array: one block of its items, each
// written by item (no block when it is empty), and the end marker.
func appendArray[T any](b []byte, list []T, item encFn) ([]byte, error) {
	if len(list) > 0 {
		b = appendLong(b, int64(len(list)))
		for i, it := range list {
			var err error
			if b, err = item(b, it); err != nil {
				return b, fmt.Errorf("array item %d: %w", i, err)
			}
		}
	}
	return append(b, 0), nil
}

// appendMap writes m as an Avro map: one block of its entries, each value
// written by val (no block when it is empty), and the end marker.
func appendMap[V any](b []byte, m map[string]V, val encFn) ([]byte, error) {
	if len(m) > 0 {
		b = appendLong(b, int64(len(m)))
		for k, it := range m {
			b = appendString(b, k)
			var err error
			if b, err = val(b, it); err != nil {
				return b, fmt.Errorf("map key %q: %w", k, err)
			}
		}
	}
	return append(b, 0), nil
}
