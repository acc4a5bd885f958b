// Package elk_test checks the app-logs-to-elk example: the pipeline
// validates, and (with a search server) runs end to end.
package elk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	_ "weir/connectors/elasticsearch"
	_ "weir/connectors/file"
	"weir/internal/testbroker"
	"weir/pipelines"
)

func TestPipelineValidates(t *testing.T) {
	cfg, diags := pipelines.Load([]string{"."}, pipelines.Options{})
	if diags.HasErrors() {
		for _, d := range diags {
			t.Error(pipelines.DiagLine(d))
		}
		t.FailNow()
	}
	if len(cfg.Sources) != 1 || len(cfg.Sinks) != 1 || cfg.Sinks[0].Kind != "elasticsearch" {
		t.Fatalf("unexpected pipeline: %d sources, %d sinks", len(cfg.Sources), len(cfg.Sinks))
	}
}

// TestEndToEnd runs the example against a real search server named by
// WEIR_TEST_ES_URL (Elasticsearch 7.17 or OpenSearch 2.x; the
// connectors/elasticsearch tests start one from Maven Central jars):
// the 80 non-debug lines of data/app.log must become documents in the
// daily index, with the parsed fields.
func TestEndToEnd(t *testing.T) {
	esURL := os.Getenv("WEIR_TEST_ES_URL")
	if esURL == "" {
		t.Skip("WEIR_TEST_ES_URL is not set (a search server's http://host:port)")
	}
	b := testbroker.Start(t)
	reg := b.Registry(t)
	dir := t.TempDir()
	for _, f := range []string{"pipeline.hcl", "app_log.avsc", "data/app.log"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prefix := fmt.Sprintf("weir-example-%d", time.Now().UnixNano())
	cfg, diags := pipelines.Load([]string{dir}, pipelines.Options{
		Vars:              []string{"elasticsearch_url=" + esURL, "index_prefix=" + prefix},
		SchemaRegistryURL: reg, Brokers: []string{b.Addr}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r, err := pipelines.NewRunner(pipelines.RunOptions{Brokers: []string{b.Addr}, SchemaRegistry: reg, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if _, err := r.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	testbroker.CheckFor(t, 60*time.Second, func() error {
		http.Post(esURL+"/"+prefix+"-*/_refresh", "application/json", nil)
		resp, err := http.Get(esURL + "/" + prefix + "-*/_count")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var c struct{ Count int }
		json.NewDecoder(resp.Body).Decode(&c)
		if c.Count != 80 {
			return fmt.Errorf("%d documents indexed, want 80 (status %v)", c.Count, r.Status())
		}
		return nil
	})
	resp, err := http.Get(esURL + "/" + prefix + "-2024.05.01/_search?q=level:error&size=100")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		Hits struct {
			Hits []struct {
				Source map[string]any `json:"_source"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits.Hits) == 0 {
		t.Fatal("no error documents in the daily index app-logs-2024.05.01")
	}
	for _, h := range res.Hits.Hits {
		s := h.Source
		if s["status"] != 500.0 || !strings.Contains(fmt.Sprint(s["msg"]), "500") || s["service"] == nil || s["trace_id"] == nil {
			t.Fatalf("document not parsed as expected: %v", s)
		}
	}
}
