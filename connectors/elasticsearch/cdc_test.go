package elasticsearch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors/elasticsearch/searchtest"
)

func TestCDCConfig(t *testing.T) {
	cfg := Defaults()
	cfg.URLs, cfg.Index, cfg.CDC = []string{"http://127.0.0.1:9200"}, "customers", true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.VersionType != "external" || cfg.VersionHeader != CDCVersionHeader {
		t.Errorf("cdc defaults: version_type %q, version_header %q", cfg.VersionType, cfg.VersionHeader)
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.IDFrom = "offset" }, "id_from must be \"key\""},
		{func(c *Config) { c.DataStream = true }, "data_stream"},
		{func(c *Config) { c.Action = "create" }, "action must be \"index\""},
		{func(c *Config) { c.CDC = false; c.CDCMetadataField = "meta" }, "cdc_metadata_field is set but cdc is false"},
	} {
		c := Defaults()
		c.URLs, c.Index, c.CDC = []string{"http://127.0.0.1:9200"}, "customers", true
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
}

func TestCDCKeyToID(t *testing.T) {
	b := &builder{cfg: &Config{}}
	for key, want := range map[string]string{
		`{"id":42}`:                   "42",
		`{"id":"a|b"}`:                "a|b", // one column: the value as it is
		`{"a":1,"b":"x"}`:             "1|x",
		`{"b":"x","a":1}`:             "x|1", // the key's own column order
		`{"a":"x|y","b":"z\\"}`:       `x\|y|z\\`,
		`{"a":"x","b":"y|z"}`:         `x|y\|z`,
		`{"n":12345678901234567890}`:  "12345678901234567890",
		`{"d":"2024-05-01","f":true}`: "2024-05-01|true",
		`plain-key`:                   "plain-key",
	} {
		got, err := b.cdcID(context.Background(), &kgo.Record{Key: []byte(key)})
		if err != nil || got != want {
			t.Errorf("key %s: id %q (%v), want %q", key, got, err, want)
		}
	}
	for _, key := range []string{`{}`, `{"a":[1]}`, `{"a":`} {
		if _, err := b.cdcID(context.Background(), &kgo.Record{Key: []byte(key)}); err == nil {
			t.Errorf("key %s: no error", key)
		}
	}
	if _, err := b.cdcID(context.Background(), &kgo.Record{Key: []byte{0, 0, 0, 0, 1, 2}}); err == nil {
		t.Error("Avro key without a registry: no error")
	}
}

// cdcRec is a JSON CDC record with connectors/mysql's headers.
func cdcRec(key, op, after string, version string) *kgo.Record {
	value := `{"before":null,"after":` + after + `,"op":"` + op + `","source":{"ts_ms":1714557600000,"file":"mysql-bin.000001","pos":4},"ts_ms":1714557600001}`
	if op == "d" {
		value = `{"before":` + after + `,"after":null,"op":"d","source":{"ts_ms":1},"ts_ms":2}`
	}
	r := rec(key, value)
	r.Headers = []kgo.RecordHeader{{Key: "weir.cdc.version", Value: []byte(version)}, {Key: "weir.cdc.op", Value: []byte(op)}}
	return r
}

func cdcTombstone(key, version string) *kgo.Record {
	r := tombstone(key)
	r.Headers = []kgo.RecordHeader{{Key: "weir.cdc.version", Value: []byte(version)}, {Key: "weir.cdc.op", Value: []byte("d")}}
	return r
}

// Against a real server: the after image becomes the document under the
// composite key's id; replays of older versions change nothing; a delete
// and its tombstone (same version) both count as done; replayed older
// inserts and updates do not resurrect the deleted document; a newer
// create does.
func TestCDCVersionsAgainstServer(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	s.MustDo(t, "PUT", "/"+index, []byte(`{"settings":{"index.gc_deletes":"1h"}}`))
	ix, dead := newIndexer(t, s, index, func(c *Config) { c.CDC = true; c.CDCMetadataField = "cdc" })
	key := `{"shop":7,"sku":"a|b"}`
	id := `7|a\|b`

	addFlush(t, ix, cdcRec(key, "r", `{"shop":7,"sku":"a|b","qty":1}`, "100"))
	d := doc(t, s, index, id)
	if d == nil || d["qty"] != float64(1) || d["_version"] != float64(100) {
		t.Fatalf("after the snapshot row: %v", d)
	}
	if m, _ := d["cdc"].(map[string]any); m == nil || m["op"] != "r" || m["source_file"] != "mysql-bin.000001" {
		t.Errorf("cdc metadata field: %v", d["cdc"])
	}
	addFlush(t, ix, cdcRec(key, "u", `{"shop":7,"sku":"a|b","qty":2}`, "200"))
	// Replays: the snapshot row and the same update again.
	addFlush(t, ix, cdcRec(key, "r", `{"shop":7,"sku":"a|b","qty":1}`, "100"), cdcRec(key, "u", `{"shop":7,"sku":"a|b","qty":2}`, "200"))
	if d := doc(t, s, index, id); d == nil || d["qty"] != float64(2) || d["_version"] != float64(200) {
		t.Fatalf("after the update and its replay: %v", d)
	}

	addFlush(t, ix, cdcRec(key, "d", `{"shop":7,"sku":"a|b","qty":2}`, "300"), cdcTombstone(key, "300"))
	if d := doc(t, s, index, id); d != nil {
		t.Fatalf("document still there after the delete: %v", d)
	}
	// A replay from the beginning: nothing comes back.
	addFlush(t, ix, cdcRec(key, "r", `{"shop":7,"sku":"a|b","qty":1}`, "100"), cdcRec(key, "u", `{"shop":7,"sku":"a|b","qty":2}`, "200"),
		cdcRec(key, "d", `{"shop":7,"sku":"a|b","qty":2}`, "300"), cdcTombstone(key, "300"))
	if d := doc(t, s, index, id); d != nil {
		t.Fatalf("a replayed older change resurrected the deleted document: %v", d)
	}
	addFlush(t, ix, cdcRec(key, "c", `{"shop":7,"sku":"a|b","qty":9}`, "400"))
	if d := doc(t, s, index, id); d == nil || d["qty"] != float64(9) {
		t.Fatalf("re-created row: %v", d)
	}
	if dead.len() != 0 {
		t.Fatalf("dead letters: %v", dead.errs)
	}

	// Bad records are dead-lettered with a reason, not indexed.
	bad := cdcRec(`{"shop":8,"sku":"x"}`, "c", `{"shop":8}`, "500")
	bad.Value = []byte(`{"op":"x","after":{}}`)
	noVer := cdcRec(`{"shop":9,"sku":"x"}`, "c", `{"shop":9}`, "500")
	noVer.Headers = nil
	addFlush(t, ix, bad, noVer)
	if dead.len() != 2 {
		t.Fatalf("%d dead letters, want 2: %v", dead.len(), dead.errs)
	}
	b, _ := json.Marshal(dead.errs[0].Error())
	if !strings.Contains(string(b), `op \"x\"`) || !strings.Contains(dead.errs[1].Error(), "no version") {
		t.Errorf("dead-letter reasons: %v", dead.errs)
	}
}

// A tombstone right after its delete (same _id, same version) is skipped;
// any other tombstone is a delete.
func TestCDCRedundantTombstone(t *testing.T) {
	cfg := Defaults()
	cfg.URLs, cfg.Index, cfg.CDC = []string{"http://127.0.0.1:9200"}, "customers", true
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := newBuilder(&cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	build := func(r *kgo.Record) (*op, error) { return b.build(context.Background(), r) }
	if o, err := build(cdcRec(`{"id":1}`, "d", `{"id":1}`, "300")); err != nil || o.action != "delete" || o.id != "1" || o.version != 300 {
		t.Fatalf("delete: %+v, %v", o, err)
	}
	if _, err := build(cdcTombstone(`{"id":1}`, "300")); err != errRedundantTombstone {
		t.Fatalf("tombstone after its delete: %v, want errRedundantTombstone", err)
	}
	for _, tc := range []struct{ before, tomb *kgo.Record }{
		{cdcRec(`{"id":1}`, "d", `{"id":1}`, "300"), cdcTombstone(`{"id":1}`, "301")}, // another version
		{cdcRec(`{"id":1}`, "d", `{"id":1}`, "300"), cdcTombstone(`{"id":2}`, "300")}, // another key
		{cdcRec(`{"id":1}`, "c", `{"id":1}`, "300"), cdcTombstone(`{"id":1}`, "300")}, // not after a delete
		{cdcTombstone(`{"id":1}`, "300"), cdcTombstone(`{"id":1}`, "300")},            // after a tombstone
	} {
		build(tc.before)
		if o, err := build(tc.tomb); err != nil || o.action != "delete" {
			t.Errorf("tombstone %s after %s: %+v, %v", tc.tomb.Key, tc.before.Value, o, err)
		}
	}
}

// A missing index is created with date detection off and floating-point
// numbers as double, so dynamic mapping refuses no column value: a zero
// date after a date, a DOUBLE beyond float range. An existing index keeps
// its own mappings.
func TestCDCCreatesIndex(t *testing.T) {
	s := server(t, searchtest.Elasticsearch7)
	index := indexName(t)
	ix, dead := newIndexer(t, s, index, func(c *Config) { c.CDC = true })
	addFlush(t, ix, cdcRec(`{"id":1}`, "r", `{"id":1,"dt":"1000-01-01","d":0.1,"de":"18446744073709551615"}`, "1"),
		cdcRec(`{"id":2}`, "c", `{"id":2,"dt":"0000-00-00","d":1.7976931348623157e308,"de":"0.5"}`, "2"))
	if dead.len() != 0 {
		t.Fatalf("dead letters: %v", dead.errs)
	}
	if n := count(t, s, index); n != 2 {
		t.Fatalf("%d documents, want 2", n)
	}
	var m map[string]struct {
		Mappings struct {
			DateDetection *bool `json:"date_detection"`
			Properties    map[string]struct{ Type string }
		}
	}
	if err := json.Unmarshal(s.MustDo(t, "GET", "/"+index+"/_mapping", nil), &m); err != nil {
		t.Fatal(err)
	}
	mp := m[index].Mappings
	if mp.DateDetection == nil || *mp.DateDetection || mp.Properties["d"].Type != "double" || mp.Properties["dt"].Type != "text" {
		t.Errorf("mapping of the created index: date_detection %v, properties %+v", mp.DateDetection, mp.Properties)
	}

	// An index that exists is the user's.
	own := indexName(t) + "-own"
	s.MustDo(t, "PUT", "/"+own, []byte(`{"mappings":{"properties":{"d":{"type":"keyword"}}}}`))
	ix2, _ := newIndexer(t, s, own, func(c *Config) { c.CDC = true })
	addFlush(t, ix2, cdcRec(`{"id":1}`, "r", `{"id":1,"d":0.1}`, "1"))
	m = nil
	if err := json.Unmarshal(s.MustDo(t, "GET", "/"+own+"/_mapping", nil), &m); err != nil {
		t.Fatal(err)
	}
	if mp := m[own].Mappings; mp.DateDetection != nil || mp.Properties["d"].Type != "keyword" {
		t.Errorf("mapping of an existing index changed: date_detection %v, properties %+v", mp.DateDetection, mp.Properties)
	}
}
