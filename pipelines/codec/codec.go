package codec

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"weir/pipelines/expr"
	"weir/schemas"
)

// Record values on topics are Confluent-framed Avro (topics declared
// with a schema) or JSON. Decoder turns either into an Event's fields;
// Encoder writes the fields in a topic's format.

// ErrUndecodable wraps a value transforms cannot read.
var ErrUndecodable = errors.New("record value cannot be decoded")

// Decoder reads record values into Objects; safe for concurrent use.
type Decoder struct {
	Serde *schemas.Serde // nil: no registry
}

// Decode reads a value: Avro by its schema id, a JSON object, or (any
// other bytes) an object {"message": "<value>"}. A JSON object's
// members are appended to into (empty), and returned; its strings may
// share v's memory, which must not change while they are in use.
func (d *Decoder) Decode(ctx context.Context, v []byte, into *expr.Object) (*expr.Object, error) {
	if len(v) >= 5 && v[0] == schemas.Magic {
		if d.Serde == nil {
			return nil, fmt.Errorf("%w: Avro value and no schema registry", ErrUndecodable)
		}
		id, native, err := d.Serde.Decode(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUndecodable, err)
		}
		c, err := d.Serde.Codec(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUndecodable, err)
		}
		o, ok := fromAvro(c.Schema.Root, native).(*expr.Object)
		if !ok {
			return &expr.Object{Keys: []string{"value"}, Vals: []any{fromAvro(c.Schema.Root, native)}}, nil
		}
		return o, nil
	}
	if len(v) > 0 && (v[0] == '{' || v[0] == ' ' || v[0] == '\t' || v[0] == '\n') {
		if err := ParseObjectInto(into, v); err == nil {
			return into, nil
		}
	}
	into.Set("message", View(v))
	return into, nil
}

// fromAvro converts goavro-native values to the pipeline domain, guided
// by the schema (unions become bare values, records keep field order).
func fromAvro(n *schemas.Node, v any) any {
	if v == nil {
		return nil
	}
	switch n.Kind {
	case schemas.Union:
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for name, bv := range m {
				for _, br := range n.Branches {
					if br.TypeName() == name {
						return fromAvro(br, bv)
					}
				}
			}
		}
	case schemas.Record:
		if m, ok := v.(map[string]any); ok {
			o := &expr.Object{Keys: make([]string, 0, len(n.Fields)), Vals: make([]any, 0, len(n.Fields))}
			for _, f := range n.Fields {
				o.Keys = append(o.Keys, f.Name)
				o.Vals = append(o.Vals, fromAvro(f.Type, m[f.Name]))
			}
			return o
		}
	case schemas.Map:
		if m, ok := v.(map[string]any); ok {
			o := &expr.Object{}
			for _, k := range sortedKeys(m) {
				o.Keys = append(o.Keys, k)
				o.Vals = append(o.Vals, fromAvro(n.Values, m[k]))
			}
			return o
		}
	case schemas.Array:
		if l, ok := v.([]any); ok {
			out := make([]any, len(l))
			for i, e := range l {
				out[i] = fromAvro(n.Items, e)
			}
			return out
		}
	}
	return FromNative(v)
}

// FromNative converts a Go value (goavro native, encoding/json) to the
// native domain of package expr.
func FromNative(v any) any {
	switch x := v.(type) {
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case float32:
		return float64(x)
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return x
	case time.Duration:
		return x.Milliseconds()
	case *big.Rat:
		f, _ := x.Float64()
		return f
	case map[string]any:
		o := &expr.Object{}
		for _, k := range sortedKeys(x) {
			o.Keys = append(o.Keys, k)
			o.Vals = append(o.Vals, FromNative(x[k]))
		}
		return o
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = FromNative(e)
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Encoder writes events in a topic's format: Avro with the
// topic's registered schema, or JSON (enc == nil).
type Encoder struct {
	id     int32
	schema *schemas.Schema
	enc    *schemas.Encoder
}

// JSON is the encoder of topics without a schema.
var JSON = &Encoder{}

// NewAvroEncoder returns the encoder of a topic whose values are schema
// (registered with id), Confluent-framed.
func NewAvroEncoder(id int32, schema *schemas.Schema) *Encoder {
	return &Encoder{id: id, schema: schema, enc: schemas.NewEncoder(schema)}
}

func (e *Encoder) Encode(b []byte, fields *expr.Object) ([]byte, error) {
	if e == nil || e.enc == nil {
		return AppendJSON(b, fields), nil
	}
	b = schemas.AppendHeader(b, e.id)
	return e.enc.Append(b, toAvro(e.schema.Root, fields))
}

// toAvro converts a pipeline value to the native form the encoder
// takes, coercing scalars to the schema's types where that is lossless
// enough for logs (numbers from strings, strings from numbers, times to
// timestamp-millis or RFC 3339).
func toAvro(n *schemas.Node, v any) any {
	if v == nil {
		return nil
	}
	switch n.Kind {
	case schemas.Record:
		o, ok := v.(*expr.Object)
		if !ok {
			return v
		}
		m := make(map[string]any, len(n.Fields))
		for _, f := range n.Fields {
			if fv, ok := o.Get(f.Name); ok {
				m[f.Name] = toAvro(f.Type, fv)
			}
		}
		return m
	case schemas.Union:
		for _, br := range n.Branches {
			if br.Kind != schemas.Null && branchFits(br, v) {
				return toAvro(br, v)
			}
		}
		for _, br := range n.Branches {
			if br.Kind != schemas.Null {
				return toAvro(br, v)
			}
		}
		return v
	case schemas.Map:
		o, ok := v.(*expr.Object)
		if !ok {
			return v
		}
		m := make(map[string]any, o.Len())
		for i, k := range o.Keys {
			m[k] = toAvro(n.Values, o.Vals[i])
		}
		return m
	case schemas.Array:
		l, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = toAvro(n.Items, e)
		}
		return out
	case schemas.String, schemas.Enum:
		if _, ok := v.(string); ok {
			return v
		}
		if s, err := expr.ToString(v); err == nil {
			return s
		}
	case schemas.Int, schemas.Long:
		switch x := v.(type) {
		case time.Time:
			if n.Logical == "" {
				return x.UnixMilli()
			}
		case string:
			if i, err := strconv.ParseInt(x, 10, 64); err == nil {
				return i
			}
			if t, err := time.Parse(time.RFC3339Nano, x); err == nil && n.Logical != "" {
				return t
			}
		}
	case schemas.Float, schemas.Double:
		if s, ok := v.(string); ok {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f
			}
		}
	case schemas.Boolean:
		if s, ok := v.(string); ok {
			if b, err := strconv.ParseBool(s); err == nil {
				return b
			}
		}
	}
	if o, ok := v.(*expr.Object); ok {
		return expr.Plain(o)
	}
	return v
}

// branchFits reports whether v naturally belongs to union branch n.
func branchFits(n *schemas.Node, v any) bool {
	switch v.(type) {
	case string, []byte:
		return n.Kind == schemas.String || n.Kind == schemas.Bytes || n.Kind == schemas.Enum || n.Kind == schemas.Fixed
	case int64:
		return n.Kind == schemas.Long || n.Kind == schemas.Int || n.Kind == schemas.Double || n.Kind == schemas.Float
	case float64:
		return n.Kind == schemas.Double || n.Kind == schemas.Float
	case bool:
		return n.Kind == schemas.Boolean
	case time.Time:
		return n.Kind == schemas.Long && n.Logical != ""
	case *expr.Object:
		return n.Kind == schemas.Record || n.Kind == schemas.Map
	case []any:
		return n.Kind == schemas.Array
	}
	return false
}
