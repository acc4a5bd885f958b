package console

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"weir/broker/admin"
	"weir/internal/browsertest"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// startWeirRun runs `weir run` on a copy of the quickstart, with its
// admin listener on a free port and lines appended to its log every
// 10 ms so records keep flowing; it returns the console's base URL.
func startWeirRun(t *testing.T) string {
	t.Helper()
	bin := weirbin.Build(t)
	dir := filepath.Join(t.TempDir(), "quickstart")
	if err := os.CopyFS(dir, os.DirFS("../examples/quickstart")); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(dir, ".weir"))
	_ = os.RemoveAll(filepath.Join(dir, "out"))
	stderr := &testkit.Buffer{}
	cmd := exec.Command(bin, "run", dir, "--var", "kafka_addr=127.0.0.1:0", "--var", "registry_addr=127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	re := regexp.MustCompile(`"msg":"pipeline API listening".*"console":"([^"]+)"`)
	var base string
	testkit.CheckFor(t, 60*time.Second, func() error {
		select {
		case <-done:
			return testkit.Stop(fmt.Errorf("weir run exited:\n%s", stderr.String()))
		default:
		}
		m := re.FindStringSubmatch(stderr.String())
		if m == nil {
			return fmt.Errorf("weir run does not say where its console is yet:\n%s", stderr.String())
		}
		base = m[1]
		return nil
	})
	f, err := os.OpenFile(filepath.Join(dir, "data", "app.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	appended := make(chan struct{})
	t.Cleanup(func() { cancel(); <-appended; f.Close() })
	go func() {
		defer close(appended)
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			d := 30
			if i%5 == 0 {
				d = 800
			}
			fmt.Fprintf(f, "%s INFO  [search] query user=u%d duration=%dms\n", time.Now().UTC().Format(time.RFC3339Nano), i, d)
		}
	}()
	return base
}

// TestPipelinesPage: the console of a running `weir run` (the
// quickstart, records flowing) shows the pipeline graph with non-zero
// rates on its edges and boxes, every component running, and passes the
// accessibility check at 1280 and 390 px; its restart button restarts
// one component.
func TestPipelinesPage(t *testing.T) {
	br := browsertest.Shared(t)
	base := startWeirRun(t)
	url := base + "pipelines"
	for _, w := range []int64{1280, 390} {
		tab := br.Tab(t, browsertest.TabOptions{Width: w, Height: 900})
		// Rates need two looks a few seconds apart: poll the page.
		testkit.CheckFor(t, 30*time.Second, func() error {
			if st := tab.Go(url); st != 200 {
				return fmt.Errorf("status %d", st)
			}
			zero := browsertest.Eval[[]string](tab, `Array.from(document.querySelectorAll("#edges tbody tr"))
				.filter(r => r.querySelector("[data-rate=edge]").textContent === "0/s").map(r => r.dataset.edge)`)
			if n := browsertest.Eval[int](tab, `document.querySelectorAll("#edges tbody tr").length`); n != 8 {
				return fmt.Errorf("%d edges, want 8", n)
			}
			if len(zero) > 0 {
				return fmt.Errorf("edges without records: %v", zero)
			}
			return nil
		})
		text := checkPage(t, tab, fmt.Sprintf("pipelines-%d", w), url, 200)
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("#pipeline-graph .node").length`); n != 9 {
			t.Errorf("graph at %d px: %d boxes, want 6 components and 3 topics", w, n)
		}
		labels := browsertest.Eval[[]string](tab, `Array.from(document.querySelectorAll("#pipeline-graph .edge-label:not(.edge-label-bad)")).map(e => e.textContent)`)
		if len(labels) != 8 {
			t.Errorf("graph edge labels %q, want 8", labels)
		}
		for _, l := range labels {
			if l == "0/s" {
				t.Errorf("graph edge without records: labels %q", labels)
			}
		}
		states := browsertest.Eval[[]string](tab, `Array.from(document.querySelectorAll("#components tbody tr")).map(r => r.dataset.component + " " + r.children[1].textContent)`)
		if got := strings.Join(states, ", "); got != "source.app running, stream.slow running, stream.requests_per_minute running, sink.archive running, sink.console running, sink.per_minute running" {
			t.Errorf("components at %d px: %s", w, got)
		}
		if !strings.Contains(text, "Restart") {
			t.Errorf("no restart button at %d px:\n%s", w, text)
		}
	}

	tab := br.Tab(t, browsertest.TabOptions{Width: 1280, Height: 900})
	tab.Go(url)
	if st := tab.SubmitAndWait(chromedp.Click(chromedp.CSS(`tr[data-component="sink.archive"] button[type=submit]`))); st != 200 {
		t.Fatalf("restart of sink.archive: status %d", st)
	}
	if got := tab.Text("#restarted"); !strings.Contains(got, "Restart of sink.archive requested") {
		t.Fatalf("after the restart: %q", got)
	}
	tab.CheckA11y("pipelines-restarted")
	testkit.CheckFor(t, 30*time.Second, func() error {
		tab.Go(url)
		st := browsertest.Eval[string](tab, `document.querySelector('tr[data-component="sink.archive"]').children[1].textContent + " " +
			document.querySelector('tr[data-component="sink.archive"] [data-rate=in]').textContent`)
		if st == "running 0/s" || !strings.HasPrefix(st, "running ") {
			return fmt.Errorf("sink.archive after its restart: %s", st)
		}
		return nil
	})
}

// graphOnly is a console.Pipelines with a fixed graph, for the page's
// read-only and bad-input behaviour (TestPipelinesPage runs the real
// one).
type graphOnly struct {
	g         PipelineGraph
	restarted []string
}

func (p *graphOnly) Graph(context.Context) (PipelineGraph, error) { return p.g, nil }

func (p *graphOnly) Restart(_ context.Context, name string) error {
	for _, c := range p.g.Components {
		if c.Name == name && c.Restartable {
			p.restarted = append(p.restarted, name)
			return nil
		}
	}
	return fmt.Errorf("%w: %q", ErrNoComponent, name)
}

// TestPipelinesPageReadOnly: in read-only mode the page shows no restart
// button and a restart POST is refused; outside it, a restart of a
// component that does not exist is a 404 naming it, a failed component
// shows its last error and the graph marks its failing edge.
func TestPipelinesPageReadOnly(t *testing.T) {
	p := &graphOnly{g: PipelineGraph{Components: []PipelineComponent{
		{Name: "source.a", Block: "source", Kind: "file", State: "running", OutRate: 5, Restartable: true},
		{Name: "topic.t", Block: "topic", Lag: -1},
		{Name: "sink.b", Block: "sink", Kind: "elasticsearch", State: "failed", LastError: "connection refused", Errors: 3, DeadLetters: 2, Restartable: true},
	}, Edges: []PipelineEdge{{From: "source.a", To: "topic.t", Rate: 5}, {From: "topic.t", To: "sink.b", Errors: 3, DeadLetters: 2}}}}
	for _, ro := range []bool{true, false} {
		c, err := New(Config{Kafka: kafkaclient.Options{Brokers: []string{"127.0.0.1:1"}}, ReadOnly: ro, Pipelines: p})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := admin.New(admin.Config{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		c.Mount(s)
		s.Start()
		defer func() { _ = s.Shutdown(context.Background()) }()
		base := "http://" + s.Addr() + "/console/pipelines"
		code, body := get(t, base)
		if code != 200 || !strings.Contains(body, "connection refused") || !strings.Contains(body, "edge edge-bad") ||
			!strings.Contains(body, "3 err · 2 DLQ") {
			t.Fatalf("read-only %v: %d\n%s", ro, code, body)
		}
		if strings.Contains(body, "Restart") == ro {
			t.Errorf("read-only %v: restart button shown %v", ro, !ro)
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/sink.b/restart", nil)
		req.Header.Set("Origin", "http://"+s.Addr())
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusSeeOther
		if ro {
			want = http.StatusForbidden
		}
		if resp.StatusCode != want {
			t.Errorf("read-only %v: restart answered %d, want %d", ro, resp.StatusCode, want)
		}
		if !ro {
			req, _ := http.NewRequest(http.MethodPost, base+"/sink.nope/restart", nil)
			req.Header.Set("Origin", "http://"+s.Addr())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b := new(strings.Builder)
			_, _ = fmt.Fprint(b, resp.Status)
			buf := make([]byte, 64<<10)
			n, _ := resp.Body.Read(buf)
			resp.Body.Close()
			if resp.StatusCode != 404 || !strings.Contains(string(buf[:n]), `sink.nope`) {
				t.Errorf("restart of sink.nope: %s %s", b, buf[:n])
			}
		}
	}
	if fmt.Sprint(p.restarted) != "[sink.b]" {
		t.Errorf("restarted %v, want [sink.b] once (read-only refused)", p.restarted)
	}

}
