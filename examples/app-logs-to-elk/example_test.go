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

	"weir/broker/brokertest/testbroker"
	_ "weir/connectors/elasticsearch"
	"weir/connectors/elasticsearch/searchtest"
	_ "weir/connectors/file"
	"weir/internal/kafkaclient"
	"weir/internal/weirbin"
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

func TestMain(m *testing.M) {
	// TestKillDashNineOneMillionLines indexes a million documents: the
	// search server's C2 compiling pays for itself.
	searchtest.HeavyIndexing = true
	code := m.Run()
	searchtest.StopShared()
	weirbin.Cleanup() // TestKillDashNineOneMillionLines's weir binary
	os.Exit(code)
}

// TestEndToEnd runs the example against a real Elasticsearch 7.17 node
// (started from Maven Central jars by searchtest): the 80 non-debug lines
// of data/app.log must become exactly 80 documents in the daily index,
// each the parsed form of its line.
func TestEndToEnd(t *testing.T) {
	es := searchtest.Shared(t, searchtest.Elasticsearch7)
	esURL := es.URL
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
	r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, SchemaRegistry: reg, Logger: zap.NewNop()})
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
	// Every non-debug line is one document holding its parsed fields.
	resp, err := http.Get(esURL + "/" + prefix + "-2024.05.01/_search?size=200")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		Hits struct {
			Hits []struct {
				ID     string         `json:"_id"`
				Source map[string]any `json:"_source"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	docs := map[string]map[string]any{}
	for _, h := range res.Hits.Hits {
		if !strings.HasPrefix(h.ID, "app_logs+") {
			t.Errorf("document _id %q is not topic+partition+offset", h.ID)
		}
		docs[fmt.Sprint(h.Source["trace_id"])] = h.Source
	}
	lines, err := os.ReadFile("data/app.log")
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var in struct {
			TS, Lvl, Svc, Msg, Trace string
			Status                   float64
			Took                     float64
		}
		if err := json.Unmarshal([]byte(l), &in); err != nil {
			t.Fatal(err)
		}
		if in.Lvl == "debug" {
			continue
		}
		want++
		d := docs[in.Trace]
		ts, _ := time.Parse(time.RFC3339Nano, in.TS)
		dts, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(d["time"]))
		if d == nil || d["msg"] != in.Msg || d["level"] != in.Lvl || d["service"] != in.Svc ||
			d["status"] != in.Status || d["duration_ms"] != in.Took || !dts.Equal(ts) ||
			!strings.HasSuffix(fmt.Sprint(d["file"]), "app.log") {
			t.Errorf("line %s\n  indexed as %v", l, d)
		}
	}
	if want != 80 || len(docs) != want {
		t.Fatalf("%d documents for %d non-debug lines (want 80)", len(docs), want)
	}
}
