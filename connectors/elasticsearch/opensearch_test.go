package elasticsearch

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors/elasticsearch/searchtest"
)

// OpenSearch sends no X-Elastic-Product header: the sink identifies it
// and the v8 client then talks to it like to Elasticsearch.
func TestOpenSearchIndexDeleteAndVersions(t *testing.T) {
	s := server(t, searchtest.OpenSearch2)
	index := indexName(t)
	ix, d := newIndexer(t, s, index, func(c *Config) {
		c.VersionType = "external_gte"
		c.VersionField = "v"
		c.VersionHeader = "v"
		c.Compress = true
	})
	var rs []*kgo.Record
	for i := 0; i < 300; i++ {
		rs = append(rs, rec(fmt.Sprint(i), jsonf(`{"v":%d,"i":%d}`, 2, i)))
	}
	addFlush(t, ix, rs...)
	del := tombstone("7")
	del.Headers = []kgo.RecordHeader{{Key: "v", Value: []byte("3")}}
	addFlush(t, ix, rec("8", `{"v":1,"i":-1}`), del)
	if n := count(t, s, index); n != 299 {
		t.Fatalf("count %d, want 299", n)
	}
	if got := doc(t, s, index, "8"); got["i"] != float64(8) {
		t.Fatalf("8 = %v: an older version overwrote it", got)
	}
	if info := ix.Server(); info == nil || info.Product != "opensearch" || !strings.HasPrefix(info.Version, "2.19.") {
		t.Fatalf("server identified as %+v", info)
	}
	if d.len() != 0 {
		t.Fatalf("dead letters %v", d.errs)
	}
}

// Data streams: create op, @timestamp added from the event time when the
// document lacks it; re-delivery with the same _id does not duplicate.
func TestDataStreamOnOpenSearch(t *testing.T) {
	s := server(t, searchtest.OpenSearch2)
	stream := "weir-ds-logs-app"
	s.MustDo(t, "PUT", "/_index_template/weir-ds", []byte(`{"index_patterns":["weir-ds-*"],"priority":5,"data_stream":{},
		"template":{"settings":{"number_of_shards":1,"number_of_replicas":0}}}`))
	ix, d := newIndexer(t, s, "weir-ds-logs-%{[app]}", func(c *Config) { c.DataStream = true })
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	var rs []*kgo.Record
	for i := 0; i < 100; i++ {
		r := rec(fmt.Sprint("id-", i), jsonf(`{"app":"app","msg":"m%d"}`, i))
		r.Timestamp = at
		if i == 0 {
			r.Value = []byte(`{"app":"app","msg":"own","@timestamp":"2020-01-01T00:00:00Z"}`)
		}
		rs = append(rs, r)
	}
	addFlush(t, ix, rs...)
	addFlush(t, ix, rs[:10]...) // re-delivery: 409 on create means it is there
	if n := count(t, s, stream); n != 100 {
		t.Fatalf("count %d, want 100", n)
	}
	b := s.MustDo(t, "GET", "/"+stream+"/_search?q=msg:m5", nil)
	var res struct {
		Hits struct {
			Hits []struct {
				Index  string         `json:"_index"`
				Source map[string]any `json:"_source"`
			}
		}
	}
	json.Unmarshal(b, &res)
	if len(res.Hits.Hits) != 1 || res.Hits.Hits[0].Source["@timestamp"] != "2024-05-06T07:08:09Z" ||
		!strings.HasPrefix(res.Hits.Hits[0].Index, ".ds-"+stream) {
		t.Fatalf("search: %s", b)
	}
	b = s.MustDo(t, "GET", "/"+stream+"/_search?q=msg:own", nil)
	if !strings.Contains(string(b), `"@timestamp":"2020-01-01T00:00:00Z"`) {
		t.Fatalf("own @timestamp replaced: %s", b)
	}
	if d.len() != 0 {
		t.Fatalf("dead letters %v", d.errs)
	}
	if st := ix.Stats(); st.Stored != 110 {
		t.Fatalf("stats %+v", st)
	}
}
