package elasticsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/schemas"
)

// op is one record turned into a bulk action.
type op struct {
	rec     *kgo.Record
	seq     uint64 // order of Write calls within the sink
	action  string // index, create, delete
	index   string
	id      string
	version int64
	hasVer  bool
	body    []byte // nil for delete
	key     string // index + "\x00" + id; "" without an id

	attempts int   // retries made so far
	outcome  int   // outcome* (set by bulk callbacks)
	err      error // the server's error for the outcome
}

const (
	outcomeUnsent      = iota // not given to the bulk indexer (yet, or again)
	outcomePending            // in the bulk indexer, no result yet
	outcomeDone               // stored (or an equivalent no-op: already deleted, newer version present)
	outcomeRetry              // retryable rejection of this item
	outcomeUnavailable        // the whole request failed: the server is down or overloaded
	outcomeBusy               // the server's thread pool refused the whole request (429 es_rejected_execution_exception)
	outcomeRejected           // non-retryable: dead-letter it
	outcomeFatal              // the request was refused for reasons no record causes (401, 403, 404): stop
)

// builder turns records into ops.
type builder struct {
	cfg       *Config
	tmpl      *Template
	static    string
	isStatic  bool
	idPath    []string
	tsPath    []string
	verPath   []string
	needDoc   bool
	serde     *schemas.Serde // nil without a registry
	versionTy string

	lastDelete    string // cdc: index+id of the last op built, when a delete from a value
	lastDeleteVer int64  // and its version
}

func newBuilder(cfg *Config, serde *schemas.Serde) (*builder, error) {
	t, err := ParseTemplate(cfg.Index)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	b := &builder{cfg: cfg, tmpl: t, serde: serde, versionTy: cfg.VersionType}
	b.static, b.isStatic = t.Static()
	if cfg.IDFrom == "field" {
		b.idPath, _ = parsePath(cfg.IDField)
	}
	if cfg.TimestampField != "" {
		b.tsPath, _ = parsePath(cfg.TimestampField)
	}
	if cfg.VersionField != "" {
		b.verPath, _ = parsePath(cfg.VersionField)
	}
	b.needDoc = t.NeedsDoc || b.idPath != nil || b.verPath != nil || cfg.DataStream ||
		(t.NeedsTime && b.tsPath != nil)
	return b, nil
}

// badRecord wraps connectors.ErrBadRecord with the record's position.
func badRecord(r *kgo.Record, format string, args ...any) error {
	return fmt.Errorf("%w: %s/%d@%d: %s", connectors.ErrBadRecord, r.Topic, r.Partition, r.Offset, fmt.Sprintf(format, args...))
}

// build returns the op for r. Errors wrap connectors.ErrBadRecord (dead-
// letter the record) or connectors.ErrRetriable (the schema registry is
// unreachable: try again later).
func (b *builder) build(ctx context.Context, r *kgo.Record) (*op, error) {
	if b.cfg.CDC {
		return b.buildCDC(ctx, r)
	}
	o := &op{rec: r, action: b.cfg.Action}
	meta := Meta{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Time: r.Timestamp}
	var doc map[string]any

	if r.Value == nil { // tombstone → delete _id = key
		if len(r.Key) == 0 {
			return nil, badRecord(r, "tombstone (null value) without a key: nothing to delete")
		}
		o.action, o.id = "delete", string(r.Key)
	} else {
		var err error
		doc, o.body, err = b.decode(ctx, r)
		if err != nil {
			return nil, err
		}
		if b.tsPath != nil {
			if v, ok := lookup(doc, b.tsPath); ok {
				if t, ok := toTime(v); ok {
					meta.Time = t
				}
			}
		}
		if b.cfg.DataStream {
			if _, ok := doc["@timestamp"]; !ok {
				doc["@timestamp"] = meta.Time.UTC().Format(time.RFC3339Nano)
				if o.body, err = json.Marshal(doc); err != nil {
					return nil, badRecord(r, "re-encoding document: %v", err)
				}
			}
		}
		switch b.cfg.IDFrom {
		case "key":
			o.id = string(r.Key)
		case "offset":
			o.id = offsetID(r)
		case "field":
			v, ok := lookup(doc, b.idPath)
			s, isScalar := scalarString(v)
			if !ok || !isScalar || s == "" {
				return nil, badRecord(r, "id_field %q is missing, empty or not a string/number", b.cfg.IDField)
			}
			o.id = s
		}
	}

	if b.versionTy != "" {
		v, ok, err := b.versionOf(r, doc)
		if err != nil {
			return nil, badRecord(r, "%v", err)
		}
		if !ok {
			return nil, badRecord(r, "version_type %s but the record has no version (version_field %q, version_header %q)", b.versionTy, b.cfg.VersionField, b.cfg.VersionHeader)
		}
		o.version, o.hasVer = v, true
	}

	if b.isStatic {
		o.index = b.static
	} else {
		if doc == nil && b.tmpl.NeedsDoc {
			return nil, badRecord(r, "index template %q reads document fields but a tombstone has no document", b.tmpl)
		}
		idx, err := b.tmpl.Render(doc, &meta)
		if err != nil {
			return nil, badRecord(r, "%v", err)
		}
		o.index = idx
	}
	if o.id != "" {
		o.key = o.index + "\x00" + o.id
	}
	return o, nil
}

// decode returns the document (nil when no setting needs its fields) and
// the JSON body to index.
func (b *builder) decode(ctx context.Context, r *kgo.Record) (map[string]any, []byte, error) {
	v := r.Value
	avro := b.cfg.ValueFormat == "avro" || (b.cfg.ValueFormat == "auto" && len(v) > 0 && v[0] == 0)
	if avro {
		if b.serde == nil {
			return nil, nil, badRecord(r, "value is Confluent-framed Avro (magic byte 0) but no schema_registry_url is configured")
		}
		id, payload, err := schemas.ParseHeader(v)
		if err != nil {
			return nil, nil, badRecord(r, "value is not Confluent-framed Avro: %v", err)
		}
		codec, err := b.serde.Codec(ctx, id)
		if err != nil {
			if errors.Is(err, schemas.ErrUnknownSchema) {
				return nil, nil, badRecord(r, "Avro schema id %d: %v", id, err)
			}
			// The registry did not answer: the record is fine, try later.
			return nil, nil, fmt.Errorf("%w: schema id %d of %s/%d@%d: %v", connectors.ErrRetriable, id, r.Topic, r.Partition, r.Offset, err)
		}
		native, err := codec.Decoder.Decode(payload)
		if err != nil {
			return nil, nil, badRecord(r, "decoding Avro value with schema id %d: %v", id, err)
		}
		plain := avroToJSON(codec.Schema.Root, native)
		doc, ok := plain.(map[string]any)
		if !ok {
			return nil, nil, badRecord(r, "Avro value is a %s, not a record", codec.Schema.Root.TypeName())
		}
		body, err := json.Marshal(doc)
		if err != nil {
			return nil, nil, badRecord(r, "encoding Avro value as JSON: %v", err)
		}
		return doc, body, nil
	}

	body := v
	if bytes.IndexByte(v, '\n') >= 0 { // bulk bodies are one line each
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, nil, badRecord(r, "value is not JSON: %v", err)
		}
		body = buf.Bytes()
	}
	if !b.needDoc {
		if !json.Valid(body) {
			return nil, nil, badRecord(r, "value is not JSON (%s)", snippet(v))
		}
		return nil, body, nil
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil || d.More() {
		if err == nil {
			err = errors.New("trailing data")
		}
		return nil, nil, badRecord(r, "value is not a JSON object: %v (%s)", err, snippet(v))
	}
	if doc == nil {
		return nil, nil, badRecord(r, "value is JSON null, not an object")
	}
	return doc, body, nil
}

func snippet(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "..."
	}
	return strconv.Quote(string(b))
}

func (b *builder) versionOf(r *kgo.Record, doc map[string]any) (int64, bool, error) {
	if b.verPath != nil && doc != nil {
		if v, ok := lookup(doc, b.verPath); ok {
			n, err := toInt64(v)
			if err != nil {
				return 0, false, fmt.Errorf("version_field %q: %v", b.cfg.VersionField, err)
			}
			return n, true, nil
		}
	}
	if h := b.cfg.VersionHeader; h != "" {
		for i := len(r.Headers) - 1; i >= 0; i-- {
			if r.Headers[i].Key == h {
				n, err := strconv.ParseInt(strings.TrimSpace(string(r.Headers[i].Value)), 10, 64)
				if err != nil || n < 0 {
					return 0, false, fmt.Errorf("version_header %q: %q is not a non-negative decimal integer", h, r.Headers[i].Value)
				}
				return n, true, nil
			}
		}
	}
	return 0, false, nil
}

func toInt64(v any) (int64, error) {
	var n int64
	var err error
	switch x := v.(type) {
	case json.Number:
		n, err = strconv.ParseInt(x.String(), 10, 64)
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int:
		n = int64(x)
	case string:
		n, err = strconv.ParseInt(x, 10, 64)
	case time.Time:
		n = x.UnixMicro()
	default:
		err = fmt.Errorf("a %T is not an integer", v)
	}
	if err == nil && n < 0 {
		err = fmt.Errorf("%d is negative", n)
	}
	return n, err
}

// toTime reads an event time: RFC 3339 text, epoch milliseconds, or an
// Avro timestamp.
func toTime(v any) (time.Time, bool) {
	switch x := v.(type) {
	case time.Time:
		return x, true
	case string:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02"} {
			if t, err := time.Parse(layout, x); err == nil {
				return t, true
			}
		}
	case json.Number:
		if ms, err := x.Int64(); err == nil {
			return time.UnixMilli(ms), true
		}
	case int64:
		return time.UnixMilli(x), true
	}
	return time.Time{}, false
}

// avroToJSON converts goavro's native form of a value of schema n into
// plain JSON values: unions unwrapped to their branch value, timestamps
// as RFC 3339 text, dates as YYYY-MM-DD, decimals as strings of their
// exact digits at the schema's scale (as Debezium's decimal.handling.mode
// = string: a JSON number would be mapped as a float by the server, and
// one beyond the long range, such as a BIGINT UNSIGNED ≥ 2^63, refused),
// bytes as base64 (encoding/json's []byte).
func avroToJSON(n *schemas.Node, v any) any {
	if v == nil {
		return nil
	}
	switch n.Kind {
	case schemas.Union:
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return v
		}
		for name, bv := range m {
			for _, br := range n.Branches {
				if unionName(br) == name {
					return avroToJSON(br, bv)
				}
			}
			return bv
		}
	case schemas.Record:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(m))
		for _, f := range n.Fields {
			if fv, ok := m[f.Name]; ok {
				out[f.Name] = avroToJSON(f.Type, fv)
			}
		}
		return out
	case schemas.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = avroToJSON(n.Values, e)
		}
		return out
	case schemas.Array:
		a, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(a))
		for i, e := range a {
			out[i] = avroToJSON(n.Items, e)
		}
		return out
	}
	switch x := v.(type) {
	case time.Time:
		if n.Logical == "date" {
			return x.UTC().Format("2006-01-02")
		}
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		if n.Logical == "time-micros" {
			return x.Microseconds()
		}
		return x.Milliseconds()
	case *big.Rat:
		return x.FloatString(n.Scale)
	case float32:
		return json.Number(strconv.FormatFloat(float64(x), 'g', -1, 32))
	}
	return v
}

// unionName is goavro's name of a union branch in native form.
func unionName(n *schemas.Node) string {
	switch n.Kind {
	case schemas.Record, schemas.Enum, schemas.Fixed:
		return n.Name
	}
	switch n.Logical {
	case "date", "time-millis", "time-micros", "timestamp-millis", "timestamp-micros", "decimal":
		return n.Kind.String() + "." + n.Logical
	}
	return n.Kind.String()
}

// offsetID is the _id of id_from = "offset": topic+partition+offset, as
// Kafka Connect's Elasticsearch sink names documents with key.ignore.
func offsetID(r *kgo.Record) string {
	return r.Topic + "+" + strconv.Itoa(int(r.Partition)) + "+" + strconv.FormatInt(r.Offset, 10)
}
