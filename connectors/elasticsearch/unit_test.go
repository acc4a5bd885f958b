package elasticsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/schemas"
)

func TestTemplateRender(t *testing.T) {
	at := time.Date(2024, 12, 31, 23, 5, 9, 0, time.FixedZone("x", 3600)) // 22:05:09 UTC
	doc := map[string]any{"svc": map[string]any{"name": "api"}, "n": json.Number("42"), "ok": true, "obj": map[string]any{}}
	m := &Meta{Topic: "logs", Partition: 3, Key: []byte("k1"), Time: at}
	for _, c := range []struct{ tmpl, want, err string }{
		{"plain", "plain", ""},
		{"logs-%{+2006.01.02}", "logs-2024.12.31", ""},
		{"logs-%{+yyyy.MM.dd.HH}", "logs-2024.12.31.22", ""},
		{"%{[svc][name]}-%{svc.name}-%{n}-%{ok}", "api-api-42-true", ""},
		{"%{[@metadata][topic]}-%{[@metadata][partition]}-%{[@metadata][key]}", "logs-3-k1", ""},
		{"x-%{[missing]}", "", "field [missing] is missing"},
		{"x-%{obj}", "", "not a string or number"},
	} {
		tp, err := ParseTemplate(c.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		got, err := tp.Render(doc, m)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrTemplate) {
				t.Errorf("%s: err %v, want %q", c.tmpl, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.tmpl, got, err, c.want)
		}
	}
	for _, bad := range []string{"x-%{", "%{}", "%{+}", "%{[a]b}", "%{[@metadata][offset]}", "%{a..b}"} {
		if _, err := ParseTemplate(bad); err == nil {
			t.Errorf("ParseTemplate(%q) accepted", bad)
		}
	}
	if s, ok := mustTemplate(t, "abc").Static(); !ok || s != "abc" {
		t.Error("static template not recognized")
	}
	if _, ok := mustTemplate(t, "a-%{+2006}").Static(); ok {
		t.Error("time template called static")
	}
}

func mustTemplate(t *testing.T, s string) *Template {
	tp, err := ParseTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestSpecDecodeAndValidate(t *testing.T) {
	cfg, err := Spec.Decode(map[string]any{"urls": "http://h:9200", "index": "logs-%{+2006.01.02}", "bulk_max_bytes": "1MiB", "flush_interval": "250ms", "data_stream": true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.BulkMaxBytes != 1<<20 || c.FlushInterval != 250*time.Millisecond || c.Action != "create" || c.Workers != 2 || c.MaxRetries != 10 {
		t.Fatalf("%+v", c)
	}
	for _, bad := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"urls": "u", "index": "i", "nope": 1}, "unknown setting nope"},
		{map[string]any{"index": "i"}, `"urls"`},
		{map[string]any{"urls": "u", "index": "i-%{"}, "index:"},
		{map[string]any{"urls": "u", "index": "i", "id_from": "field"}, "needs id_field"},
		{map[string]any{"urls": "u", "index": "i", "version_type": "external"}, "needs version_field or version_header"},
		{map[string]any{"urls": "u", "index": "i", "version_field": "v"}, "version_type is empty"},
		{map[string]any{"urls": "u", "index": "i", "value_format": "avro"}, "schema_registry_url"},
		{map[string]any{"urls": "u", "index": "i", "api_key": "k", "username": "u", "password": "p"}, "choose one"},
		{map[string]any{"urls": "u", "index": "i", "workers": 0}, "workers"},
	} {
		_, err := Spec.Decode(bad.raw)
		if err == nil || !errors.Is(err, connectors.ErrConfig) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want an ErrConfig naming %q", bad.raw, err, bad.want)
		}
	}
	if k, err := connectors.Default.Lookup("elasticsearch"); err != nil || k.NewSink == nil {
		t.Fatalf("kind not registered: %v", err)
	}
}

func TestClassify(t *testing.T) {
	item := func(st int, typ string) esutil.BulkIndexerResponseItem {
		var r esutil.BulkIndexerResponseItem
		r.Status, r.Error.Type, r.Error.Reason = st, typ, "why"
		return r
	}
	idx := &op{action: "index", id: "1", index: "i"}
	ver := &op{action: "index", id: "1", index: "i", hasVer: true}
	create := &op{action: "create", id: "1", index: "i"}
	createNoID := &op{action: "create", index: "i"}
	del := &op{action: "delete", id: "1", index: "i"}
	for _, c := range []struct {
		o    *op
		res  esutil.BulkIndexerResponseItem
		err  error
		want int
	}{
		{idx, item(429, "es_rejected_execution_exception"), nil, outcomeRetry},
		{idx, item(503, "unavailable_shards_exception"), nil, outcomeRetry},
		{idx, item(500, "x"), nil, outcomeRetry},
		{idx, item(429, "circuit_breaking_exception"), nil, outcomeRetry},
		{idx, item(400, "mapper_parsing_exception"), nil, outcomeRejected},
		{idx, item(400, "illegal_argument_exception"), nil, outcomeRejected},
		{idx, item(409, "version_conflict_engine_exception"), nil, outcomeRejected},
		{ver, item(409, "version_conflict_engine_exception"), nil, outcomeDone},
		{create, item(409, "version_conflict_engine_exception"), nil, outcomeDone},
		{createNoID, item(409, "version_conflict_engine_exception"), nil, outcomeRejected},
		{del, item(404, ""), nil, outcomeDone},
		{idx, item(404, "index_not_found_exception"), nil, outcomeRejected},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New("flush: dial tcp: connection refused"), outcomeUnavailable},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New("flush: [429 Too Many Requests] {}"), outcomeUnavailable},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New(`flush: [429 Too Many Requests] {"error":{"root_cause":[],"type":"es_rejected_execution_exception","reason":"rejected execution of TimedRunnable"},"status":429}`), outcomeBusy},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New(`flush: [503 Service Unavailable] {"error":{"type":"es_rejected_execution_exception"}}`), outcomeUnavailable},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New(`flush: [429 Too Many Requests] {"error":{"type":"unavailable","reason":"es_rejected_execution_exception"}}`), outcomeUnavailable},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New("flush: [503 Service Unavailable] {}"), outcomeUnavailable},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New("flush: [500 Internal Server Error] {}"), outcomeRetry},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New("flush: [413 Request Entity Too Large] {}"), outcomeRejected},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New("flush: [401 Unauthorized] {}"), outcomeFatal},
		{idx, esutil.BulkIndexerResponseItem{}, errors.New("flush: [403 Forbidden] {}"), outcomeFatal},
	} {
		got, err := classify(c.o, c.res, c.err)
		if got != c.want {
			t.Errorf("%s %d %s %v: outcome %d, want %d (%v)", c.o.action, c.res.Status, c.res.Error.Type, c.err, got, c.want, err)
		}
		if got == outcomeRejected && c.err == nil {
			var ie *ItemError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.res.Error.Type) {
				t.Errorf("rejection error %v lacks the server's error", err)
			}
		}
	}
}

func TestParseServerInfo(t *testing.T) {
	es7 := `{"version":{"number":"7.17.29"},"tagline":"You Know, for Search"}`
	es6 := `{"version":{"number":"6.8.0"},"tagline":"You Know, for Search"}`
	os2 := `{"version":{"distribution":"opensearch","number":"2.19.6"},"tagline":"The OpenSearch Project: https://opensearch.org/"}`
	h := http.Header{}
	if i, err := parseServerInfo([]byte(es7), h); err != nil || i.Product != "elasticsearch" || i.Major != 7 || i.Minor != 17 {
		t.Fatalf("%+v %v", i, err)
	}
	if i, err := parseServerInfo([]byte(os2), h); err != nil || i.Product != "opensearch" {
		t.Fatalf("%+v %v", i, err)
	}
	for _, bad := range []string{es6, `{"name":"x"}`, `{"version":{"number":"1.0"},"tagline":"Solr"}`, `<html>`} {
		if _, err := parseServerInfo([]byte(bad), h); !errors.Is(err, ErrUnsupportedServer) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestAvroToJSON(t *testing.T) {
	s, err := schemas.Parse(`{"type":"record","name":"ev","namespace":"weir","fields":[
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"host","type":["null","string"]},
		{"name":"n","type":["null","long"]},
		{"name":"tags","type":{"type":"array","items":"string"}},
		{"name":"sub","type":["null",{"type":"record","name":"sub","fields":[{"name":"a","type":"int"}]}]},
		{"name":"lvl","type":{"type":"enum","name":"lvl","symbols":["INFO","WARN"]}},
		{"name":"de","type":["null",{"type":"bytes","logicalType":"decimal","precision":65,"scale":30}]},
		{"name":"u","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":0}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	native := map[string]any{
		"ts":   time.UnixMilli(1700000000123).UTC(),
		"host": map[string]any{"string": "h1"},
		"n":    nil,
		"tags": []any{"a", "b"},
		"sub":  map[string]any{"weir.sub": map[string]any{"a": int32(7)}},
		"lvl":  "WARN",
		"de":   map[string]any{"bytes.decimal": rat("-12345678901234567890123456789012345.123456789012345678901234567890")},
		"u":    rat("18446744073709551615"),
	}
	b, err := json.Marshal(avroToJSON(s.Root, native))
	if err != nil {
		t.Fatal(err)
	}
	// Decimals: strings of the exact digits at the schema's scale.
	want := `{"de":"-12345678901234567890123456789012345.123456789012345678901234567890","host":"h1","lvl":"WARN","n":null,` +
		`"sub":{"a":7},"tags":["a","b"],"ts":"2023-11-14T22:13:20.123Z","u":"18446744073709551615"}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

// id_from = "offset" names a document by its record's topic+partition+
// offset: the same record always gets the same _id, different records of
// the same content get different ones.
func TestIDFromOffset(t *testing.T) {
	raw, err := Spec.Decode(map[string]any{"urls": "http://h:9200", "index": "logs", "id_from": "offset"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := FromConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newBuilder(&cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range []*kgo.Record{
		{Topic: "app_logs", Partition: 2, Offset: 41, Value: []byte(`{"msg":"x"}`)},
		{Topic: "app_logs", Partition: 2, Offset: 41, Value: []byte(`{"msg":"x"}`), Key: []byte("k")}, // re-delivered
		{Topic: "app_logs", Partition: 1, Offset: 41, Value: []byte(`{"msg":"x"}`)},
		{Topic: "app_logs", Partition: 2, Offset: 42, Value: []byte(`{"msg":"x"}`)},
	} {
		o, err := b.build(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		ids[o.id] = true
	}
	if len(ids) != 3 || !ids["app_logs+2+41"] || !ids["app_logs+1+41"] || !ids["app_logs+2+42"] {
		t.Fatalf("ids %v, want app_logs+2+41, app_logs+1+41, app_logs+2+42", ids)
	}
	if _, err := Spec.Decode(map[string]any{"urls": "u", "index": "i", "id_from": "offset", "id_field": "f"}); err == nil || !strings.Contains(err.Error(), "id_field is set") {
		t.Fatalf("id_field with id_from = offset: %v", err)
	}
}

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

// TestSchemaRegistryConfig: schema_registry_config reaches the registry
// client (kafkaclient.OpenRegistry, built by internal/srclient): a
// setting it holds is read (a missing CA file is an error naming it),
// and neither the error nor the printed config holds the password.
func TestSchemaRegistryConfig(t *testing.T) {
	const secret = "Es-Reg-Secret-1"
	cfg, err := Spec.Decode(map[string]any{"urls": "http://h:9200", "index": "i", "value_format": "avro", "schema_registry_url": "https://127.0.0.1:1",
		"schema_registry_config": map[string]any{"basic.auth.user.info": "u:" + secret, "schema.registry.ssl.truststore.location": "/nonexistent/ca.pem"}})
	if err != nil {
		t.Fatal(err)
	}
	if printed := fmt.Sprint(Spec.Redact(cfg)); strings.Contains(printed, secret) {
		t.Errorf("printed config holds the password: %s", printed)
	}
	c, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewIndexer(c, nil, nil, nil)
	if err == nil || !errors.Is(err, connectors.ErrConfig) || !strings.Contains(err.Error(), "CA file") || strings.Contains(err.Error(), secret) {
		t.Errorf("NewIndexer with a missing registry CA file: %v", err)
	}
}
