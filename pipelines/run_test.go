package pipelines_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/brokertest/testbroker"
	_ "weir/connectors/file"
	_ "weir/connectors/filesink"
	_ "weir/connectors/kafkasink"
	_ "weir/connectors/stdout"
	"weir/internal/kafkaclient"
	"weir/pipelines"
)

// env is a broker, a registry and a folder of pipeline files.
type env struct {
	t   *testing.T
	b   *testbroker.Broker
	reg string
	dir string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	b := testbroker.Start(t)
	return &env{t: t, b: b, reg: b.Registry(t), dir: t.TempDir()}
}

func (e *env) write(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) load(vars ...string) *pipelines.Config {
	e.t.Helper()
	cfg, diags := pipelines.Load([]string{e.dir}, pipelines.Options{Vars: vars, SchemaRegistryURL: e.reg, Brokers: []string{e.b.Addr}})
	if diags.HasErrors() {
		for _, d := range diags {
			e.t.Error(pipelines.DiagLine(d))
		}
		e.t.FailNow()
	}
	return cfg
}

func (e *env) runner() *pipelines.Runner {
	e.t.Helper()
	r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, SchemaRegistry: e.reg,
		Logger: zaptest.NewLogger(e.t, zaptest.Level(zap.WarnLevel)), RestartBackoff: 200 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(r.Stop)
	return r
}

// readLines returns the JSON objects of a file sink's output.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

const appSchema = `{"type":"record","name":"AppLog","namespace":"test","fields":[
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"level","type":"string"},
  {"name":"msg","type":"string"},
  {"name":"n","type":"long"},
  {"name":"service","type":"string"},
  {"name":"user","type":["null","string"],"default":null}
]}`

const endToEnd = `
variable "service" {
  type = string
}

topic "app_logs" {
  partitions = 2
  schema     = file("app.avsc")
  config = {
    "retention.ms" = 86400000
  }
}

topic "errors" {}

source "file" "app" {
  topic   = topic.app_logs
  include = ["${path.root}/in/*.log"]

  parse_json {
    field = "message"
  }
  parse_timestamp {
    field  = "time"
    target = "ts"
  }
  set {
    level   = upper(record.level)
    service = var.service
  }
  filter {
    condition = record.level != "DEBUG"
  }
}

stream "errors" {
  from = [topic.app_logs]
  to   = topic.errors
  filter {
    condition = record.level == "ERROR"
  }
  set {
    alert = "${record.service}: ${record.msg}"
  }
}

sink "file" "all" {
  from = [topic.app_logs]
  path = "${path.root}/out/all.jsonl"
}

sink "file" "error_file" {
  from = topic.errors
  path = "${path.root}/out/errors.jsonl"
}
`

func logLine(i int, level string) string {
	return fmt.Sprintf(`{"time":"2024-05-01T10:00:%02dZ","level":%q,"msg":"event %d","n":%d}`, i%60, level, i, i)
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.write("app.avsc", appSchema)
	e.write("p.hcl", endToEnd)
	levels := []string{"info", "debug", "error", "warn"}
	var lines []string
	for i := 0; i < 200; i++ {
		lines = append(lines, logLine(i, levels[i%4]))
	}
	e.write("in/app.log", strings.Join(lines, "\n")+"\n")
	cfg := e.load("service=checkout")
	r := e.runner()
	if _, err := r.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	all := filepath.Join(e.dir, "out/all.jsonl")
	errs := filepath.Join(e.dir, "out/errors.jsonl")
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if n, m := len(readLines(t, all)), len(readLines(t, errs)); n != 150 || m != 50 {
			return fmt.Errorf("all.jsonl has %d lines (want 150), errors.jsonl %d (want 50)", n, m)
		}
		return nil
	})
	seen := map[float64]bool{}
	for _, m := range readLines(t, all) {
		if m["level"] == "DEBUG" || m["service"] != "checkout" {
			t.Fatalf("record not transformed: %v", m)
		}
		if _, ok := m["time"]; ok {
			t.Fatalf("field outside the Avro schema survived: %v", m)
		}
		if ts, _ := m["ts"].(string); !strings.HasPrefix(ts, "2024-05-01T10:00:") {
			t.Fatalf("timestamp not parsed into ts: %v", m)
		}
		n := m["n"].(float64)
		if seen[n] {
			t.Fatalf("record %v twice", n)
		}
		seen[n] = true
	}
	for _, m := range readLines(t, errs) {
		if m["level"] != "ERROR" || m["alert"] != fmt.Sprintf("checkout: %s", m["msg"]) {
			t.Fatalf("stream output %v", m)
		}
	}
	// The topic holds Avro with the registered schema.
	recs := e.b.ReadAll("app_logs")
	if len(recs) != 150 || recs[0].Value[0] != 0 {
		t.Fatalf("app_logs has %d records, first value %x", len(recs), recs[0].Value[:5])
	}
	if ts := recs[0].Timestamp; ts.Year() != 2024 {
		t.Fatalf("record timestamp %v, want the parsed time", ts)
	}
}

const reloadPipeline = `
topic "events" {
  partitions = 3
}

source "file" "in" {
  topic         = topic.events
  include       = ["${path.root}/in/*.log"]
  poll_interval = "20ms"
  parse_json {
    field = "message"
  }
  remove {
    fields = ["message", "host", "offset", "timestamp"]
  }
}

sink "file" "a" {
  from = [topic.events]
  path = "${path.root}/out/%s"
}

sink "file" "b" {
  from = [topic.events]
  path = "${path.root}/out/b.jsonl"
}
`

// TestReloadRestartsOnlyChangedSink changes one sink's settings while
// records flow: only that sink restarts, and across its two output files
// every record appears exactly once.
func TestReloadRestartsOnlyChangedSink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.write("p.hcl", fmt.Sprintf(reloadPipeline, "a1.jsonl"))
	e.write("in/x.log", "")
	r := e.runner()
	if _, err := r.Apply(context.Background(), e.load()); err != nil {
		t.Fatal(err)
	}
	const total = 3000
	f, err := os.OpenFile(filepath.Join(e.dir, "in/x.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	writeN := func(from, to int) {
		for i := from; i < to; i++ {
			fmt.Fprintf(f, "{\"n\":%d}\n", i)
			if i%100 == 99 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	writeN(0, 1000)
	a1, a2, b := filepath.Join(e.dir, "out/a1.jsonl"), filepath.Join(e.dir, "out/a2.jsonl"), filepath.Join(e.dir, "out/b.jsonl")
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if n := len(readLines(t, a1)); n < 200 {
			return fmt.Errorf("a1 has %d lines", n)
		}
		return nil
	})
	// Reload while the writer keeps going.
	done := make(chan struct{})
	go func() { defer close(done); writeN(1000, total) }()
	if err := os.WriteFile(p, []byte(fmt.Sprintf(reloadPipeline, "a2.jsonl")), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := r.Apply(context.Background(), e.load())
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 1 || changed[0] != "sink.a" {
		t.Fatalf("reload restarted %v, want only sink.a", changed)
	}
	<-done
	count := func(paths ...string) (map[float64]int, int) {
		seen := map[float64]int{}
		n := 0
		for _, p := range paths {
			for _, m := range readLines(t, p) {
				seen[m["n"].(float64)]++
				n++
			}
		}
		return seen, n
	}
	testbroker.CheckFor(t, 60*time.Second, func() error {
		_, na := count(a1, a2)
		_, nb := count(b)
		if na < total || nb < total {
			return fmt.Errorf("sink a wrote %d lines, sink b %d; want %d each", na, nb, total)
		}
		return nil
	})
	for name, paths := range map[string][]string{"a": {a1, a2}, "b": {b}} {
		seen, n := count(paths...)
		if n != total || len(seen) != total {
			t.Fatalf("sink %s: %d lines, %d distinct records, want %d each (lost or duplicated across the reload)", name, n, len(seen), total)
		}
	}
	if len(readLines(t, a2)) == 0 {
		t.Fatal("the reloaded sink wrote nothing to its new path")
	}
	for _, st := range r.Status() {
		want := 1
		if st.Starts != want || st.State != "running" {
			t.Errorf("%s: state %s after %d starts (want running, 1 start each: a restarted sink is a new task)", st.ID, st.State, st.Starts)
		}
	}
}
