package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/internal/testkit"
	"weir/internal/weirbin"
	"weir/pipelines"
)

// copyDir copies the regular files of src (recursively) to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			if rel == ".weir" || rel == "out" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

type jsonLines []map[string]any

func readJSONLines(t *testing.T, path string) jsonLines {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	// The sink may be in the middle of writing the last line (a buffered
	// writer flushes whole buffers, not whole lines): only lines that end
	// in a newline are written; a partial tail is "not yet".
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	var out jsonLines
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// syncBuf is testkit.Buffer under the name this package's tests use.
type syncBuf = testkit.Buffer

type weirProc struct {
	cmd    *exec.Cmd
	stdout *syncBuf
	stderr *syncBuf
	done   chan error
}

func startWeirRun(t *testing.T, bin, dir string, args ...string) *weirProc {
	t.Helper()
	return startWeir(t, nil, bin, append([]string{"run", dir, "--var", "kafka_addr=127.0.0.1:0", "--var", "registry_addr=127.0.0.1:0", "--log-format", "json"}, args...)...)
}

// startWeir starts bin with args (env nil: this process's environment)
// and kills it at the end of the test if it is still running.
func startWeir(t *testing.T, env []string, bin string, args ...string) *weirProc {
	t.Helper()
	p := &weirProc{stdout: &syncBuf{}, stderr: &syncBuf{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitLines waits until the file at path holds at least n lines.
func (p *weirProc) waitLines(t *testing.T, path string, n int, within time.Duration) {
	t.Helper()
	testkit.CheckFor(t, within, func() error {
		got, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%w; weir run's stderr:\n%s", err, p.stderr.String())
		}
		if c := strings.Count(string(got), "\n"); c < n {
			return fmt.Errorf("%d of %d lines in %s; weir run's stderr:\n%s", c, n, path, p.stderr.String())
		}
		return nil
	})
}

// interrupt sends SIGINT and waits for a clean exit.
func (p *weirProc) interrupt(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("weir run exited with %v after SIGINT\nstderr:\n%s", err, p.stderr.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("weir run did not stop within 40s of SIGINT\nstderr:\n%s", p.stderr.String())
	}
}

// TestRunQuickstart runs `weir run examples/quickstart` (a copy) as a
// process: records must reach the output file within 10 s of start, the
// stdout sink prints the slow requests, Ctrl-C exits cleanly, and a
// second run resumes without repeating anything.
func TestRunQuickstart(t *testing.T) {
	bin := weirbin.Build(t)
	dir := filepath.Join(t.TempDir(), "quickstart")
	copyDir(t, "../../examples/quickstart", dir)
	out := filepath.Join(dir, "out", "app_logs.jsonl")

	start := time.Now()
	p := startWeirRun(t, bin, dir)
	testbroker.CheckFor(t, 10*time.Second, func() error {
		if n := len(readJSONLines(t, out)); n != 59 {
			return fmt.Errorf("%s has %d lines, want the 59 non-debug lines of data/app.log\nstderr:\n%s", out, n, p.stderr.String())
		}
		return nil
	})
	t.Logf("59 records end to end %v after start", time.Since(start).Round(time.Millisecond))
	lines := readJSONLines(t, out)
	for _, m := range lines {
		if m["level"] == "debug" || m["env"] != "dev" || m["service"] == "" {
			t.Fatalf("record not parsed and transformed: %v", m)
		}
		if ts, _ := m["time"].(string); !strings.HasPrefix(ts, "2024-05-01T10:") {
			t.Fatalf("time not parsed: %v", m)
		}
	}
	// The stream's per-minute counts: the last update of each (service,
	// minute) is the number of archived records of that service in it.
	want := map[string]float64{}
	for _, m := range lines {
		ts, _ := time.Parse(time.RFC3339Nano, m["time"].(string))
		want[fmt.Sprint(m["service"], " ", ts.Truncate(time.Minute).UTC().Format(time.RFC3339))]++
	}
	perMinute := filepath.Join(dir, "out", "requests_per_minute.jsonl")
	testbroker.CheckFor(t, 20*time.Second, func() error {
		got := map[string]float64{}
		for _, m := range readJSONLines(t, perMinute) {
			n, _ := m["requests"].(float64)
			got[fmt.Sprint(m["service"], " ", m["window_start"])] = n
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("requests per minute %v, want %v\nstderr:\n%s", got, want, p.stderr.String())
		}
		return nil
	})
	testbroker.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(p.stdout.String(), `"alert":"search took`) {
			return fmt.Errorf("stdout sink printed no slow request yet: %q", p.stdout.String())
		}
		return nil
	})
	checkQuietStart(t, p)
	p.interrupt(t)
	// The exit summary says what went where.
	for _, want := range []string{`"msg":"pipelines stopped: records per component since start"`,
		`"sink.archive":"59 in, 59 out to ` + filepath.Join(dir, "out", "app_logs.jsonl"), `"source.app":"59 out to topic app_logs"`,
		`"sink.console":"6 in, 6 out to stdout"`, `"stream.slow":"59 in, 6 out to topic slow_requests"`} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Fatalf("no exit summary with %s in stderr:\n%s", want, p.stderr.String())
		}
	}

	// Second run: positions and offsets were committed, so only a new line
	// comes through.
	p2 := startWeirRun(t, bin, dir, "--watch-interval", "0", "--summary-interval", "500ms")
	f, err := os.OpenFile(filepath.Join(dir, "data", "app.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "2024-05-01T11:00:00.000Z ERROR [checkout] order failed: out of stock user=erin duration=700ms")
	f.Close()
	testbroker.CheckFor(t, 20*time.Second, func() error {
		if n := len(readJSONLines(t, out)); n != 60 {
			return fmt.Errorf("%s has %d lines, want 60\nstderr:\n%s", out, n, p2.stderr.String())
		}
		return nil
	})
	if last := readJSONLines(t, out)[59]; last["level"] != "error" || last["duration_ms"] != 700.0 {
		t.Fatalf("appended line arrived as %v", last)
	}
	// The periodic summary counts since this run's start: the one record.
	testbroker.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(p2.stderr.String(), `"msg":"records per component since start","records":{"sink.archive":"1 in, 1 out to `) {
			return fmt.Errorf("no periodic summary with sink.archive's 1 record:\n%s", p2.stderr.String())
		}
		return nil
	})

	// Change one sink's settings and send SIGHUP: only that sink restarts,
	// and the next record goes to its new file.
	hcl := filepath.Join(dir, "pipeline.hcl")
	src, _ := os.ReadFile(hcl)
	os.WriteFile(hcl, bytes.Replace(src, []byte("out/app_logs.jsonl"), []byte("out/app_logs2.jsonl"), 1), 0o644)
	_ = p2.cmd.Process.Signal(syscall.SIGHUP)
	testbroker.CheckFor(t, 20*time.Second, func() error {
		if !strings.Contains(p2.stderr.String(), `"restarted":["sink.archive"]`) {
			return fmt.Errorf("no reload restarting only sink.archive logged:\n%s", p2.stderr.String())
		}
		return nil
	})
	f, _ = os.OpenFile(filepath.Join(dir, "data", "app.log"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(f, "2024-05-01T11:00:01.000Z INFO  [cart] item added user=erin")
	f.Close()
	out2 := filepath.Join(dir, "out", "app_logs2.jsonl")
	testbroker.CheckFor(t, 20*time.Second, func() error {
		if n := len(readJSONLines(t, out2)); n != 1 {
			return fmt.Errorf("%s has %d lines, want 1", out2, n)
		}
		return nil
	})
	if n := len(readJSONLines(t, out)); n != 60 {
		t.Fatalf("old output file has %d lines after the reload, want 60", n)
	}
	p2.interrupt(t)
}

// checkQuietStart checks the quickstart's output once it has run its
// records through (issue 20): fewer than 20 log lines at info and none
// above it on stderr, and stdout holding only the slow-request records.
func checkQuietStart(t *testing.T, p *weirProc) {
	t.Helper()
	info := 0
	for _, l := range strings.Split(strings.TrimSpace(p.stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not a JSON log line: %q", l)
		}
		switch m["level"] {
		case "info":
			info++
		case "debug":
		default:
			t.Errorf("log line above info on a normal start: %s", l)
		}
	}
	if info >= 20 {
		t.Fatalf("%d log lines at info on start, want fewer than 20:\n%s", info, p.stderr.String())
	}
	t.Logf("%d log lines at info on start", info)
	out := strings.TrimSpace(p.stdout.String())
	for _, l := range strings.Split(out, "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["alert"] == nil || m["duration_ms"] == nil || m["msg"] == nil || m["level"] == "info" && m["logger"] != nil {
			t.Fatalf("stdout line is not a slow-request record: %q (%v)", l, err)
		}
		if d, _ := m["duration_ms"].(float64); d < 500 {
			t.Fatalf("stdout record is not a slow request: %q", l)
		}
	}
	if n := strings.Count(out, "\n") + 1; n != 6 {
		t.Fatalf("stdout holds %d records, want the 6 slow requests of data/app.log:\n%s", n, out)
	}
}

// TestQuickstartRetentionKeepsSampleData: the quickstart's sample log
// is dated; every topic it lands in must keep it an hour from now (time
// retention counts from record timestamps), so a rerun still finds it.
func TestQuickstartRetentionKeepsSampleData(t *testing.T) {
	cfg, diags := pipelines.Load([]string{"../../examples/quickstart"}, pipelines.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	data, err := os.ReadFile("../../examples/quickstart/data/app.log")
	if err != nil {
		t.Fatal(err)
	}
	oldest := time.Now()
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		ts, err := time.Parse(time.RFC3339Nano, strings.Fields(l)[0])
		if err != nil {
			t.Fatalf("data/app.log line without a timestamp: %q", l)
		}
		if ts.Before(oldest) {
			oldest = ts
		}
	}
	later := time.Now().Add(time.Hour)
	for _, tp := range cfg.Topics {
		ret := int64(7 * 24 * time.Hour / time.Millisecond) // Kafka's default log.retention.hours=168
		if v, ok := tp.Configs["retention.ms"]; ok {
			if ret, err = strconv.ParseInt(v, 10, 64); err != nil {
				t.Fatalf("topic %s: retention.ms %q: %v", tp.Name, v, err)
			}
		}
		if ret >= 0 && later.Sub(oldest) > time.Duration(ret)*time.Millisecond {
			t.Errorf("topic %s: retention.ms %d deletes the sample data (oldest %v) before a rerun an hour from now", tp.Name, ret, oldest)
		}
	}
}

func TestValidateFmtGraph(t *testing.T) {
	out := mustWeir(t, "", "validate", "../../examples/quickstart")
	if !strings.Contains(out, "valid: 3 topics, 1 sources, 2 streams, 3 sinks") {
		t.Fatalf("validate: %q", out)
	}
	dot := mustWeir(t, "", "graph", "../../examples/quickstart")
	for _, want := range []string{`"source.app" -> "topic.app_logs"`, `"topic.app_logs" -> "stream.slow"`, `"stream.slow" -> "topic.slow_requests"`, `"topic.slow_requests" -> "sink.console"`} {
		if !strings.Contains(dot, want) {
			t.Fatalf("graph lacks %s:\n%s", want, dot)
		}
	}
	mustWeir(t, "", "fmt", "--check", "../../examples/quickstart")

	// A mysql source's table blocks: the sinks read the table topics by
	// reference, and the graph shows source → table topic → sink.
	cdc := "../../examples/mysql-cdc-to-es"
	if out := mustWeir(t, "", "validate", cdc); !strings.Contains(out, "valid: 3 topics, 1 sources, 0 streams, 2 sinks") {
		t.Fatalf("validate %s: %q", cdc, out)
	}
	dot = mustWeir(t, "", "graph", cdc)
	for _, want := range []string{`"source.shop" -> "topic.shop.inventory.customers"`, `"topic.shop.inventory.customers" -> "sink.search"`,
		`"source.shop" -> "topic.shop.inventory.order_lines"`, `"topic.shop.inventory.order_lines" -> "sink.search_order_lines"`} {
		if !strings.Contains(dot, want) {
			t.Fatalf("graph of %s lacks %s:\n%s", cdc, want, dot)
		}
	}
	mustWeir(t, "", "fmt", "--check", cdc)

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	os.WriteFile(bad, []byte("topic \"a\" {\n  partitons = 2\n}\nsink \"stdout\" \"s\" {\n  from = topic.b\n}\n"), 0o644)
	_, stderr, err := runWeir(t, "", "validate", bad)
	if err == nil || !strings.Contains(err.Error(), "2 errors") {
		t.Fatalf("validate of a bad file: err %v", err)
	}
	for _, want := range []string{bad + `:2:3: error: Unsupported argument`, bad + `:5:10: error: Reference to undeclared topic`, "  partitons = 2"} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	ugly := filepath.Join(dir, "ugly.hcl")
	os.WriteFile(ugly, []byte("topic \"a\" {\npartitions=2\n    replication_factor = 1\n}\n"), 0o644)
	if _, _, err := runWeir(t, "", "fmt", "--check", ugly); err == nil {
		t.Fatal("fmt --check accepted an unformatted file")
	}
	mustWeir(t, "", "fmt", ugly)
	b, _ := os.ReadFile(ugly)
	if want := "topic \"a\" {\n  partitions         = 2\n  replication_factor = 1\n}\n"; string(b) != want {
		t.Fatalf("fmt wrote %q, want %q", b, want)
	}
	mustWeir(t, "", "fmt", "--check", ugly)
}
