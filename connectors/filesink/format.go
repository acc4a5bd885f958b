package filesink

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/internal/jsonw"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/schemas"
)

// Formats of the lines a Writer produces.
const (
	FormatJSON     = "json"
	FormatRaw      = "raw"
	FormatEnvelope = "envelope"
)

// Formats lists the accepted format names.
var Formats = []string{FormatJSON, FormatRaw, FormatEnvelope}

// Writer formats records as lines into a buffer. It is used from one
// goroutine at a time.
type Writer struct {
	format string
	serde  *schemas.Serde // nil: Avro values cannot be decoded
	buf    []byte
}

// NewWriter returns a Writer of format; registryURL ("" for none) is the
// schema registry used to decode Confluent-framed Avro values, reached
// with the client settings registryConfig (kafkaclient.OpenRegistry).
func NewWriter(format, registryURL string, registryConfig map[string]string) (*Writer, error) {
	w := &Writer{format: format}
	if registryURL != "" {
		cl, err := kafkaclient.OpenRegistry(registryURL, registryConfig)
		if err != nil {
			return nil, err
		}
		w.serde = schemas.NewSerde(srclient.Source(cl))
	}
	return w, nil
}

// Buffered returns the formatted lines not yet taken.
func (w *Writer) Buffered() []byte { return w.buf }

// Reset drops the buffered lines (after they were written).
func (w *Writer) Reset() { w.buf = w.buf[:0] }

// Append formats r as one line. A value that cannot be decoded is an
// error wrapping connectors.ErrBadRecord (and nothing is buffered); an
// unreachable registry wraps connectors.ErrRetriable.
func (w *Writer) Append(ctx context.Context, r *kgo.Record) error {
	start := len(w.buf)
	var err error
	switch w.format {
	case FormatRaw:
		w.buf = append(w.buf, r.Value...)
	case FormatEnvelope:
		w.buf = append(w.buf, `{"topic":`...)
		w.buf = strconv.AppendQuote(w.buf, r.Topic)
		w.buf = fmt.Appendf(w.buf, `,"partition":%d,"offset":%d,"timestamp":`, r.Partition, r.Offset)
		w.buf = jsonw.AppendString(w.buf, r.Timestamp.UTC().Format(time.RFC3339Nano))
		w.buf = append(w.buf, `,"key":`...)
		if r.Key == nil {
			w.buf = append(w.buf, "null"...)
		} else {
			w.buf = appendBytes(w.buf, r.Key)
		}
		w.buf = append(w.buf, `,"value":`...)
		w.buf, err = w.appendValue(ctx, w.buf, r.Value)
		w.buf = append(w.buf, '}')
	default:
		w.buf, err = w.appendValue(ctx, w.buf, r.Value)
	}
	if err != nil {
		w.buf = w.buf[:start]
		return err
	}
	w.buf = append(w.buf, '\n')
	return nil
}

// AppendValueJSON appends value as JSON: decoded Avro, JSON as is
// (compacted), anything else as a JSON string.
func (w *Writer) appendValue(ctx context.Context, b, v []byte) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	if len(v) >= 5 && v[0] == schemas.Magic {
		if w.serde == nil {
			return b, fmt.Errorf("%w: Avro value (schema id %d) and no schema registry to decode it", connectors.ErrBadRecord, int32(v[1])<<24|int32(v[2])<<16|int32(v[3])<<8|int32(v[4]))
		}
		id, native, err := w.serde.Decode(ctx, v)
		if err != nil {
			if errors.Is(err, schemas.ErrUnknownSchema) || errors.Is(err, schemas.ErrMalformed) {
				return b, fmt.Errorf("%w: %v", connectors.ErrBadRecord, err)
			}
			return b, fmt.Errorf("%w: decoding Avro: %v", connectors.ErrRetriable, err)
		}
		c, err := w.serde.Codec(ctx, id)
		if err != nil {
			return b, fmt.Errorf("%w: %v", connectors.ErrRetriable, err)
		}
		return appendAvroJSON(b, c.Schema.Root, native), nil
	}
	t := bytes.TrimSpace(v)
	if json.Valid(t) {
		if bytes.IndexByte(t, '\n') < 0 {
			return append(b, t...), nil
		}
		var out bytes.Buffer
		if err := json.Compact(&out, t); err == nil {
			return append(b, out.Bytes()...), nil
		}
	}
	return appendBytes(b, v), nil
}

func appendBytes(b, v []byte) []byte {
	if utf8.Valid(v) {
		return jsonw.AppendString(b, string(v))
	}
	return jsonw.AppendString(b, base64.StdEncoding.EncodeToString(v))
}

// appendAvroJSON writes a native Avro value as plain JSON: unions as
// their bare value, timestamps as RFC 3339, bytes as strings.
func appendAvroJSON(b []byte, n *schemas.Node, v any) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	switch n.Kind {
	case schemas.Union:
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for name, bv := range m {
				for _, br := range n.Branches {
					if br.TypeName() == name {
						return appendAvroJSON(b, br, bv)
					}
				}
			}
		}
		return appendNative(b, v)
	case schemas.Record:
		m, ok := v.(map[string]any)
		if !ok {
			return appendNative(b, v)
		}
		b = append(b, '{')
		for i, f := range n.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendString(b, f.Name)
			b = append(b, ':')
			b = appendAvroJSON(b, f.Type, m[f.Name])
		}
		return append(b, '}')
	case schemas.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return appendNative(b, v)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendString(b, k)
			b = append(b, ':')
			b = appendAvroJSON(b, n.Values, m[k])
		}
		return append(b, '}')
	case schemas.Array:
		l, ok := v.([]any)
		if !ok {
			return appendNative(b, v)
		}
		b = append(b, '[')
		for i, e := range l {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendAvroJSON(b, n.Items, e)
		}
		return append(b, ']')
	}
	return appendNative(b, v)
}

func appendNative(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float32:
		return appendFloat(b, float64(x))
	case float64:
		return appendFloat(b, x)
	case string:
		return jsonw.AppendString(b, x)
	case []byte:
		return appendBytes(b, x)
	case time.Time:
		return jsonw.AppendString(b, x.UTC().Format(time.RFC3339Nano))
	case time.Duration:
		return strconv.AppendInt(b, x.Milliseconds(), 10)
	case *big.Rat:
		return append(b, x.FloatString(10)...)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendString(b, k)
			b = append(b, ':')
			b = appendNative(b, x[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendNative(b, e)
		}
		return append(b, ']')
	}
	return jsonw.AppendString(b, fmt.Sprint(v))
}

func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
