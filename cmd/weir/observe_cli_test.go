package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"weir/internal/testkit"
	"weir/internal/weirbin"
	"weir/pipelines/observe"
)

// observedRun is a copy of the quickstart running under weir run with
// its pipeline API on a free port, and lines appended to its log file
// every few milliseconds so records keep flowing.
type observedRun struct {
	bin, dir, addr string
	p              *weirProc
}

func startObservedRun(t *testing.T) *observedRun {
	t.Helper()
	bin := weirbin.Build(t)
	dir := filepath.Join(t.TempDir(), "quickstart")
	copyDir(t, "../../examples/quickstart", dir)
	p := startWeirRun(t, bin, dir, "--admin-addr", "127.0.0.1:0")
	re := regexp.MustCompile(`"msg":"pipeline API listening".*"admin_addr":"([^"]+)"`)
	var addr string
	testkit.CheckFor(t, 30*time.Second, func() error {
		m := re.FindStringSubmatch(p.stderr.String())
		if m == nil {
			return fmt.Errorf("no \"pipeline API listening\" line yet; stderr:\n%s", p.stderr.String())
		}
		addr = m[1]
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		appendLogLines(ctx, filepath.Join(dir, "data", "app.log"))
	}()
	return &observedRun{bin: bin, dir: dir, addr: addr, p: p}
}

// appendLogLines writes an application log line every 5 ms until ctx
// ends; every tenth is a slow request.
func appendLogLines(ctx context.Context, path string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	tk := time.NewTicker(5 * time.Millisecond)
	defer tk.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		d := 20 + i%7
		if i%10 == 0 {
			d = 900
		}
		fmt.Fprintf(f, "%s INFO  [search] query user=u%d duration=%dms\n", time.Now().UTC().Format(time.RFC3339Nano), i, d)
	}
}

func (o *observedRun) view(t *testing.T) observe.View {
	t.Helper()
	var v observe.View
	if err := newAdminClient(o.addr).getJSON(context.Background(), "/api/v1/pipeline", &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func component(v observe.View, id string) observe.ComponentView {
	for _, c := range v.Components {
		if c.Component.ID == id {
			return c
		}
	}
	return observe.ComponentView{}
}

// ptyProc is a process whose terminal is a pseudo-terminal.
type ptyProc struct {
	cmd  *exec.Cmd
	tty  *os.File
	out  *syncBuf
	done chan error
}

func startPty(t *testing.T, bin string, args ...string) *ptyProc {
	t.Helper()
	p := &ptyProc{cmd: exec.Command(bin, args...), out: &syncBuf{}, done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), "TERM=xterm")
	tty, err := pty.StartWithSize(p.cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	p.tty = tty
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(p.out, tty) // ends with EIO when the process exits
		close(copied)
	}()
	go func() {
		err := p.cmd.Wait()
		<-copied
		p.done <- err
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
		}
		_ = tty.Close()
	})
	return p
}

func (p *ptyProc) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(within):
		t.Fatalf("%s did not exit within %v; its terminal:\n%q", p.cmd.Args, within, p.out.String())
		return nil
	}
}

// TestTapTopPty runs the quickstart with records flowing and watches it
// through pseudo-terminals: weir tap shows decoded records within 2 s,
// weir top redraws in place with non-zero rates and quits on q.
func TestTapTopPty(t *testing.T) {
	if testing.Short() {
		t.Skip("starts weir run and tails it; skipped with -short")
	}
	o := startObservedRun(t)

	t.Run("tap", func(t *testing.T) {
		start := time.Now()
		p := startPty(t, o.bin, "tap", "source.app", "--admin-addr", o.addr, "--limit", "3")
		var first time.Duration
		testkit.CheckFor(t, 2*time.Second, func() error {
			for _, l := range strings.Split(p.out.String(), "\n") {
				var s observe.Sample
				if json.Unmarshal([]byte(strings.TrimSpace(l)), &s) == nil && s.Component == "source.app" {
					var v map[string]any
					if err := json.Unmarshal(s.Value, &v); err != nil || v["service"] == nil || v["env"] != "dev" || s.Topic != "app_logs" {
						return testkit.Stop(fmt.Errorf("tapped record not decoded from Avro: %s (%v)", l, err))
					}
					first = time.Since(start)
					return nil
				}
			}
			return fmt.Errorf("no record on weir tap's terminal yet: %q", p.out.String())
		})
		t.Logf("first tapped record %v after weir tap started", first.Round(time.Millisecond))
		if err := p.wait(t, 10*time.Second); err != nil {
			t.Fatalf("weir tap --limit 3: %v; terminal:\n%s", err, p.out.String())
		}
		if n := strings.Count(strings.TrimSpace(p.out.String()), "\n") + 1; n != 3 {
			t.Fatalf("weir tap --limit 3 printed %d lines:\n%s", n, p.out.String())
		}
	})

	t.Run("top", func(t *testing.T) {
		p := startPty(t, o.bin, "top", "--admin-addr", o.addr, "--interval", "300ms")
		var frames int
		testkit.CheckFor(t, 15*time.Second, func() error {
			out := p.out.String()
			fs := strings.Split(out, "\x1b[H")
			frames = len(fs) - 1
			if frames < 2 {
				return fmt.Errorf("%d frames drawn: %q", frames, out)
			}
			last := fs[len(fs)-1]
			if !strings.Contains(last, "\x1b[J") {
				last = fs[len(fs)-2] // the newest frame is still being written
			}
			if err := topRates(last); err != nil {
				return fmt.Errorf("frame %d: %v\n%s", frames, err, last)
			}
			return nil
		})
		t.Logf("non-zero rates in frame %d", frames)
		if _, err := p.tty.Write([]byte("q")); err != nil {
			t.Fatal(err)
		}
		if err := p.wait(t, 5*time.Second); err != nil {
			t.Fatalf("weir top after q: %v", err)
		}
		if out := p.out.String(); !strings.HasSuffix(out, "\x1b[?25h\x1b[?1049l") {
			t.Fatalf("weir top did not restore the terminal (cursor, main screen) on q: %q", out[max(0, len(out)-200):])
		}
	})

	t.Run("top-plain", func(t *testing.T) {
		out, err := exec.Command(o.bin, "top", "--admin-addr", o.addr, "--interval", "200ms", "--count", "2").Output()
		if err != nil {
			t.Fatalf("weir top --count 2: %v", err)
		}
		if strings.Contains(string(out), "\x1b") {
			t.Fatalf("weir top off a terminal wrote escape sequences: %q", out)
		}
		if n := strings.Count(string(out), "COMPONENT"); n != 2 {
			t.Fatalf("weir top --count 2 printed %d tables:\n%s", n, out)
		}
	})
}

// topRates checks one frame of weir top: the source and the archive sink
// move records, and so does the edge between the source and its topic.
func topRates(frame string) error {
	rows := map[string][]string{}
	for _, l := range strings.Split(frame, "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(strings.ReplaceAll(l, "\x1b[K", "")), "\r")
		f := strings.Fields(l)
		if len(f) > 3 && f[1] == "→" {
			rows[f[0]+"→"+f[2]] = f
		} else if len(f) > 3 {
			rows[f[0]] = f
		}
	}
	for _, c := range []struct {
		row string
		col int
	}{{"source.app", 3}, {"sink.archive", 2}, {"stream.slow", 2}, {"source.app→topic.app_logs", 3}} {
		f := rows[c.row]
		if len(f) <= c.col {
			return fmt.Errorf("no row %s", c.row)
		}
		if f[c.col] == "0" {
			return fmt.Errorf("%s: rate 0 in %v", c.row, f)
		}
	}
	if f := rows["source.app"]; f[1] != "running" {
		return fmt.Errorf("source.app state %q", f[1])
	}
	return nil
}

// TestPipelineAPI checks the pipeline API of weir run: the graph with
// counters and rates, taps of every kind of point (a source's output, a
// step's input, a stream's input with its offsets, an aggregating
// stream's results) as NDJSON and SSE, a restart, and clear errors for
// what does not exist, after which the server goes on.
func TestPipelineAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts weir run; skipped with -short")
	}
	o := startObservedRun(t)
	base := adminURL(o.addr)

	var v observe.View
	testkit.CheckFor(t, 15*time.Second, func() error {
		v = o.view(t)
		for _, e := range v.Edges {
			if e.RecordsPerSec <= 0 && e.To != "sink.console" && e.From != "topic.slow_requests" {
				return fmt.Errorf("edge %s → %s: %v records/s", e.From, e.To, e.RecordsPerSec)
			}
		}
		return nil
	})
	if got := strings.Join(observe.Graph{Components: componentsOf(v)}.IDs(), " "); got !=
		"sink.archive sink.console sink.per_minute source.app stream.requests_per_minute stream.slow" {
		t.Fatalf("components %s", got)
	}
	if len(v.Edges) != 8 || len(v.Topics) != 3 {
		t.Fatalf("%d edges, %d topics: %+v", len(v.Edges), len(v.Topics), v)
	}
	src, slow := component(v, "source.app"), component(v, "stream.slow")
	if src.State != "running" || src.Kind != "file" || strings.Join(src.Steps, ",") != "parse_regex,parse_timestamp,set,filter" || src.BytesOut <= 0 {
		t.Fatalf("source.app: %+v", src)
	}
	// The slow stream keeps one record in ten: its records out are its
	// results, not its inputs.
	if slow.RecordsOut <= 0 || slow.RecordsOut > slow.RecordsIn/5 {
		t.Fatalf("stream.slow: %v in, %v out; want about a tenth out", slow.RecordsIn, slow.RecordsOut)
	}

	tap := func(path string) (observe.Sample, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		if !sc.Scan() {
			t.Fatalf("GET %s: %s, no line: %v", path, resp.Status, sc.Err())
		}
		line := sc.Text()
		var s observe.Sample
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s); err != nil {
			t.Fatalf("GET %s: %q: %v", path, line, err)
		}
		return s, line
	}
	if s, _ := tap("/api/v1/tap/source.app/filter?direction=in&limit=1"); s.Step != 4 || s.Direction != "in" || !strings.Contains(string(s.Value), `"level":"info"`) {
		t.Fatalf("the filter step's input: %+v", s)
	}
	if s, _ := tap("/api/v1/tap/slow?direction=in&limit=1"); s.Partition == nil || s.Offset == nil || s.Topic != "app_logs" {
		t.Fatalf("stream.slow's input: %+v", s)
	}
	if s, _ := tap("/api/v1/tap/slow?limit=1"); s.Topic != "slow_requests" || !strings.Contains(string(s.Value), `"alert":"search took 900ms`) {
		t.Fatalf("stream.slow's output: %+v %s", s, s.Value)
	}
	if s, line := tap("/api/v1/tap/stream.requests_per_minute?limit=1&format=sse"); !strings.HasPrefix(line, "data: {") || !strings.Contains(string(s.Value), `"requests":`) {
		t.Fatalf("the per-minute counts as SSE: %q", line)
	}
	if s, _ := tap("/api/v1/tap/sink.archive?limit=1"); s.Direction != "in" || s.Offset == nil {
		t.Fatalf("sink.archive's input: %+v", s)
	}

	// Bad input: clear answers, and the server goes on.
	for path, want := range map[string]string{
		"/api/v1/tap/nope":                         `404 Not Found: no such component "nope"; components: sink.archive,`,
		"/api/v1/tap/source.app/7":                 "404 Not Found: no such component: source.app has 4 transform steps, not a step 7",
		"/api/v1/tap/sink.archive?direction=out":   "400 Bad Request: direction out: the records of sink.archive leave weir",
		"/api/v1/tap/source.app?rate=fast":         `400 Bad Request: rate "fast": want samples per second`,
		"/api/v1/tap/source.app?limit=-1":          `400 Bad Request: limit "-1"`,
		"/api/v1/tap/source.app?direction=sideway": `400 Bad Request: direction "sideway"`,
	} {
		_, err := newAdminClient(o.addr).do(context.Background(), http.MethodGet, path, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("GET %s: %v, want %q", path, err, want)
		}
	}
	out, err := exec.Command(o.bin, "tap", "nope", "--admin-addr", o.addr).CombinedOutput()
	if err == nil || !strings.Contains(string(out), `no such component "nope"`) {
		t.Fatalf("weir tap nope: %v\n%s", err, out)
	}

	// Restart one component: it stops (final flush, commit), starts
	// again and goes on consuming.
	before := component(o.view(t), "sink.archive")
	resp, err := newAdminClient(o.addr).do(context.Background(), http.MethodPost, "/api/v1/components/archive/restart", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	testkit.CheckFor(t, 20*time.Second, func() error {
		c := component(o.view(t), "sink.archive")
		if c.Starts != before.Starts+1 || c.State != "running" || c.RecordsIn <= before.RecordsIn+100 || c.Rates.RecordsIn <= 0 {
			return fmt.Errorf("sink.archive after the restart: %+v (before: %+v)", c, before)
		}
		return nil
	})
	if !strings.Contains(o.p.stderr.String(), `"msg":"pipeline component restarting on request","component":"sink.archive"`) {
		t.Fatalf("no log line of the restart:\n%s", o.p.stderr.String())
	}
	_, err = newAdminClient(o.addr).do(context.Background(), http.MethodPost, "/api/v1/components/sink.nope/restart", nil)
	if err == nil || !strings.Contains(err.Error(), `404 Not Found: no such component "sink.nope"`) {
		t.Fatalf("restarting sink.nope: %v", err)
	}
	if c := component(o.view(t), "source.app"); c.Starts != 1 || c.State != "running" {
		t.Fatalf("the source was restarted too: %+v", c)
	}
}

func componentsOf(v observe.View) []observe.Component {
	out := make([]observe.Component, len(v.Components))
	for i, c := range v.Components {
		out[i] = c.Component
	}
	return out
}
