package elasticsearch

import (
	"encoding/json"
	"fmt"
	"testing"

	"weir/connectors/conformance"
	"weir/connectors/elasticsearch/searchtest"
)

// The elasticsearch kind on the shared Elasticsearch 7 node: each case
// writes to an index of its own, documents keyed by the record key; the
// bad record is a value that is not a JSON document.
func TestConformance(t *testing.T) {
	conformance.TestSink(t, conformance.SinkDef{
		Kind: "elasticsearch",
		New: func(t *testing.T, env *conformance.Env, name string) *conformance.SinkCase {
			s := server(t, searchtest.Elasticsearch7)
			index := "weir-" + name
			return &conformance.SinkCase{
				Config: map[string]any{"urls": []any{s.URL}, "index": index, "flush_interval": "50ms"},
				Delivered: func() ([]int, error) {
					if st, b := s.Do(t, "POST", "/"+index+"/_refresh", nil); st != 200 {
						return nil, fmt.Errorf("refresh %s: %d %s", index, st, b)
					}
					st, b := s.Do(t, "GET", "/"+index+"/_search?size=1000", nil)
					if st != 200 {
						return nil, fmt.Errorf("search %s: %d %s", index, st, b)
					}
					var r struct {
						Hits struct {
							Hits []struct {
								Source struct{ ID int } `json:"_source"`
							}
						}
					}
					if err := json.Unmarshal(b, &r); err != nil {
						return nil, err
					}
					var ids []int
					for _, h := range r.Hits.Hits {
						ids = append(ids, h.Source.ID)
					}
					return ids, nil
				},
				Bad: []byte("not a JSON document"),
			}
		},
		BadConfigs: []conformance.BadConfig{
			{Name: "id_field without id_from field", Setting: "id_field", Change: func(c map[string]any) { c["id_field"] = "id" }},
			{Name: "no urls", Setting: "urls", Change: func(c map[string]any) { c["urls"] = []any{} }},
		},
	})
}
