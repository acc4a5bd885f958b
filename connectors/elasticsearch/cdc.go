package elasticsearch

// CDC mode (cdc = true): the sink keeps an index equal to a table captured
// by a change-data-capture source (connectors/mysql, or any Debezium-style
// envelope {before, after, op, source, ts_ms}).
//
//   - _id is the primary key, decoded from the record key: a Confluent-
//     framed Avro record (decoded through the schema registry) gives its
//     field values in schema order as text, joined with "|" for a
//     composite key ("\" and "|" inside a value are escaped as "\\" and
//     "\|", so two keys never share an id); a JSON object key gives its
//     members' values the same way, in their order in the key; any other
//     key is used as it is. Numbers print as decimal text, booleans as
//     true/false, bytes as lower-case hex.
//   - A change with op c, u or r indexes the envelope's after image as the
//     document (its columns as JSON fields). With cdc_metadata_field set,
//     the document also gets that field holding {op, ts_ms, source.ts_ms,
//     source.file, source.pos, source.gtid} of the change.
//   - op d and tombstones are bulk deletes of _id; deleting a missing
//     document is done.
//   - Versions: version_type defaults to "external" and version_header to
//     "weir.cdc.version", the version connectors/mysql stamps on every
//     record (from the GTID count, so it keeps growing across a failover
//     to a replica; see its doc.go). The server keeps the
//     highest version per _id, so a replay of the topic or a retried bulk
//     never moves a document back, and a replayed older insert does not
//     resurrect a deleted document. A delete and its tombstone share one
//     version: the second one's 409 version conflict counts as done, like
//     every 409 of a versioned write. A tombstone that directly follows
//     its delete is skipped (the delete was just sent), so a delete costs
//     one bulk item, not a forced round trip for a second action on the
//     same document.
//
//   - Index creation: before its first action on an index, the sink asks
//     whether the index (or an alias of that name) exists; if not, it
//     creates it with cdcIndexMappings, so that dynamic mapping keeps
//     every column's values: date_detection off (a DATE column's
//     "1000-01-01" would make the field a date, and a later zero date
//     "0000-00-00" would then be refused) and floating-point numbers
//     mapped as double, not Elasticsearch's default float (a DOUBLE's
//     1.7976931348623157e308 would be refused as infinite, and every
//     double would be searched at float precision). Decimals (and BIGINT
//     UNSIGNED) arrive as strings (see avroToJSON), so dynamic mapping
//     makes them text with a keyword subfield, exact; a user mapping can
//     make them numbers (a numeric field coerces the string). An existing
//     index, and the mappings and settings of a matching index template,
//     are the user's: left as they are (the index template's dynamic
//     templates come after these). When the server refuses the check or
//     the creation (401/403: the user may index but not manage indices),
//     the sink logs a warning and indexes anyway (the server may create
//     the index with its own defaults).
//
// Limit: Elasticsearch remembers the version of a deleted document only
// for the index setting index.gc_deletes (default 60s). A replay that
// reaches an insert older than a delete more than gc_deletes after that
// delete recreates the document until the replay reaches the delete again
// (the topic holds it after the insert, so the index converges once the
// replay is through). Raise index.gc_deletes (e.g. "1h") on CDC indices
// when replays may lag further behind: the cost is memory for the delete
// markers of that period.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/schemas"
)

// errRedundantTombstone is buildCDC's answer for a tombstone that follows
// its delete (same _id and version): the indexer skips it.
var errRedundantTombstone = errors.New("cdc: tombstone of the delete just sent")

// CDC defaults filled in by Validate when cdc = true.
const (
	CDCVersionHeader = "weir.cdc.version"
	cdcOpHeader      = "weir.cdc.op"
)

// validateCDC fills the CDC defaults and checks the settings CDC mode
// needs; bad reports an error naming the setting.
func (c *Config) validateCDC(bad func(string, ...any)) {
	if !c.CDC {
		if c.CDCMetadataField != "" {
			bad("cdc_metadata_field is set but cdc is false")
		}
		return
	}
	if c.IDFrom != "key" {
		bad("cdc = true takes _id from the record key (primary key): id_from must be \"key\", not %q", c.IDFrom)
	}
	if c.DataStream {
		bad("cdc = true updates and deletes documents: data_stream cannot be set")
	}
	if c.Action != "index" {
		bad("cdc = true indexes the after image: action must be \"index\", not %q", c.Action)
	}
	if c.VersionType == "" {
		c.VersionType = "external"
	}
	if c.VersionField == "" && c.VersionHeader == "" {
		c.VersionHeader = CDCVersionHeader
	}
	if c.CDCMetadataField != "" {
		if _, err := parsePath(c.CDCMetadataField); err != nil {
			bad("cdc_metadata_field: %v", err)
		}
	}
}

// buildCDC is build for cdc = true.
func (b *builder) buildCDC(ctx context.Context, r *kgo.Record) (*op, error) {
	if len(r.Key) == 0 {
		return nil, badRecord(r, "cdc: record without a key (primary key)")
	}
	o := &op{rec: r, action: "index"}
	id, err := b.cdcID(ctx, r)
	if err != nil {
		return nil, err
	}
	o.id = id
	meta := Meta{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Time: r.Timestamp}

	var after map[string]any
	if r.Value == nil || headerValue(r, cdcOpHeader) == "d" {
		o.action = "delete"
	} else {
		env, _, err := b.decode(ctx, r)
		if err != nil {
			return nil, err
		}
		if env == nil { // JSON without needDoc: decode it here
			if err := json.Unmarshal(r.Value, &env); err != nil || env == nil {
				return nil, badRecord(r, "cdc: value is not a JSON envelope object")
			}
		}
		opName, _ := env["op"].(string)
		switch opName {
		case "d":
			o.action = "delete"
		case "c", "u", "r":
			a, ok := env["after"].(map[string]any)
			if !ok {
				return nil, badRecord(r, "cdc: op %q without an after image", opName)
			}
			after = a
			if f := b.cfg.CDCMetadataField; f != "" {
				m := map[string]any{"op": opName, "ts_ms": env["ts_ms"]}
				if src, ok := env["source"].(map[string]any); ok {
					for _, k := range []string{"ts_ms", "file", "pos", "gtid"} {
						if v, ok := src[k]; ok {
							m["source_"+k] = v
						}
					}
				}
				after[f] = m
			}
			if o.body, err = json.Marshal(after); err != nil {
				return nil, badRecord(r, "cdc: encoding the after image: %v", err)
			}
		default:
			return nil, badRecord(r, "cdc: envelope op %q is not c, u, r or d", opName)
		}
	}

	v, ok, err := b.versionOf(r, after)
	if err != nil {
		return nil, badRecord(r, "%v", err)
	}
	if !ok {
		return nil, badRecord(r, "cdc: the record has no version (version_field %q, version_header %q)", b.cfg.VersionField, b.cfg.VersionHeader)
	}
	o.version, o.hasVer = v, true

	if b.isStatic {
		o.index = b.static
	} else {
		if after == nil && b.tmpl.NeedsDoc {
			return nil, badRecord(r, "index template %q reads document fields but a delete has no after image", b.tmpl)
		}
		if o.index, err = b.tmpl.Render(after, &meta); err != nil {
			return nil, badRecord(r, "%v", err)
		}
	}
	o.key = o.index + "\x00" + o.id
	if o.action == "delete" && r.Value == nil && o.key == b.lastDelete && o.version == b.lastDeleteVer {
		// The tombstone right after its delete (same document, same
		// version): already sent. Skipping it spares the round trip a
		// second action on one document costs (see Indexer.submit).
		b.lastDelete = ""
		return nil, errRedundantTombstone
	}
	b.lastDelete = ""
	if o.action == "delete" && r.Value != nil {
		b.lastDelete, b.lastDeleteVer = o.key, o.version
	}
	return o, nil
}

func headerValue(r *kgo.Record, key string) string {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return string(r.Headers[i].Value)
		}
	}
	return ""
}

// cdcID turns a primary-key record key into _id (see the comment at the
// top of this file).
func (b *builder) cdcID(ctx context.Context, r *kgo.Record) (string, error) {
	k := r.Key
	switch {
	case k[0] == 0 && b.serde != nil:
		id, payload, err := schemas.ParseHeader(k)
		if err != nil {
			return "", badRecord(r, "cdc: key is not Confluent-framed Avro: %v", err)
		}
		codec, err := b.serde.Codec(ctx, id)
		if err != nil {
			if errors.Is(err, schemas.ErrUnknownSchema) {
				return "", badRecord(r, "cdc: key Avro schema id %d: %v", id, err)
			}
			return "", fmt.Errorf("%w: key schema id %d of %s/%d@%d: %v", connectors.ErrRetriable, id, r.Topic, r.Partition, r.Offset, err)
		}
		native, err := codec.Decoder.Decode(payload)
		if err != nil {
			return "", badRecord(r, "cdc: decoding Avro key with schema id %d: %v", id, err)
		}
		root := codec.Schema.Root
		plain := avroToJSON(root, native)
		if root.Kind != schemas.Record {
			return keyPart(r, plain)
		}
		m, _ := plain.(map[string]any)
		parts := make([]string, 0, len(root.Fields))
		for _, f := range root.Fields {
			s, err := keyPart(r, m[f.Name])
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return joinKey(parts), nil
	case k[0] == 0:
		return "", badRecord(r, "cdc: key is Confluent-framed Avro (magic byte 0) but no schema_registry_url is configured")
	case k[0] == '{':
		d := json.NewDecoder(bytes.NewReader(k))
		d.UseNumber()
		if t, err := d.Token(); err != nil || t != json.Delim('{') {
			return "", badRecord(r, "cdc: key is not a JSON object (%s)", snippet(k))
		}
		var parts []string
		for d.More() {
			if _, err := d.Token(); err != nil { // member name
				return "", badRecord(r, "cdc: key is not a JSON object: %v", err)
			}
			var v any
			if err := d.Decode(&v); err != nil {
				return "", badRecord(r, "cdc: key is not a JSON object: %v", err)
			}
			s, err := keyPart(r, v)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		if len(parts) == 0 {
			return "", badRecord(r, "cdc: key is an empty JSON object")
		}
		return joinKey(parts), nil
	}
	return string(k), nil
}

func keyPart(r *kgo.Record, v any) (string, error) {
	if bs, ok := v.([]byte); ok {
		return hex.EncodeToString(bs), nil
	}
	s, ok := scalarString(v)
	if !ok {
		return "", badRecord(r, "cdc: key column value %v (%T) is not a string, number or bytes", v, v)
	}
	return s, nil
}

var keyEscaper = strings.NewReplacer(`\`, `\\`, `|`, `\|`)

func joinKey(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	for i, p := range parts {
		parts[i] = keyEscaper.Replace(p)
	}
	return strings.Join(parts, "|")
}

// cdcIndexMappings are the mappings of an index the sink creates in CDC
// mode (see the comment at the top of this file).
const cdcIndexMappings = `{"mappings":{"date_detection":false,"dynamic_templates":[` +
	`{"weir_cdc_doubles":{"match_mapping_type":"double","mapping":{"type":"double"}}}]}}`

// ensureCDCIndex creates index with cdcIndexMappings unless it exists.
// Errors wrap connectors.ErrRetriable (the server did not answer, or
// answered 429/5xx): the caller tries again later.
func (ix *Indexer) ensureCDCIndex(ctx context.Context, index string) error {
	retriable := func(what string, status int, err error) error {
		if err == nil {
			err = fmt.Errorf("status %d", status)
		}
		return fmt.Errorf("%w: cdc: %s index %s: %v", connectors.ErrRetriable, what, index, err)
	}
	res, err := ix.client.Indices.Exists([]string{index}, ix.client.Indices.Exists.WithContext(ctx))
	if err != nil {
		return retriable("checking", 0, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	switch {
	case res.StatusCode == 200:
		return nil
	case res.StatusCode == 429 || res.StatusCode >= 500:
		return retriable("checking", res.StatusCode, nil)
	case res.StatusCode != 404:
		ix.log.Warn("cdc: cannot check whether the index exists; indexing into it as it is",
			zap.String("index", index), zap.Int("status", res.StatusCode))
		return nil
	}
	res, err = ix.client.Indices.Create(index, ix.client.Indices.Create.WithBody(strings.NewReader(cdcIndexMappings)),
		ix.client.Indices.Create.WithContext(ctx))
	if err != nil {
		return retriable("creating", 0, err)
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	res.Body.Close()
	switch {
	case res.StatusCode == 200:
		ix.log.Info("cdc: created index (date_detection off, floating-point numbers as double)", zap.String("index", index))
	case res.StatusCode == 429 || res.StatusCode >= 500:
		return retriable("creating", res.StatusCode, nil)
	case res.StatusCode == 400 && bytes.Contains(body, []byte("resource_already_exists_exception")):
		// created in the meantime (another sink task)
	default:
		ix.log.Warn("cdc: cannot create the index; indexing into it as it is",
			zap.String("index", index), zap.Int("status", res.StatusCode), zap.ByteString("error", body))
	}
	return nil
}
