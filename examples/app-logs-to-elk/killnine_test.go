package elk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors/elasticsearch/searchtest"
	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// TestKillDashNineOneMillionLines is issue 7's end-to-end promise on this
// example as users run it (the `weir` binary, `weir run` on the example's
// pipeline with its embedded broker and registry): an application writes
// 1,000,000 JSON lines across 4 files, rotating them by rename and by
// copytruncate, while weir tails them into the topic and indexes them into
// a real Elasticsearch 7.17 node; weir is killed with -9 twice mid-run and
// started again on the same data directory. At the end the index holds
// exactly 1,000,000 documents, one per line, each with the line's content.
func TestKillDashNineOneMillionLines(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 lines through weir run and Elasticsearch")
	}
	es := searchtest.Shared(t, searchtest.Elasticsearch7)
	bin := weirbin.Build(t)
	dir := t.TempDir()
	if keep := os.Getenv("WEIR_TEST_KEEP_DIR"); keep != "" { // for post-mortems: logs, data dir, log files
		var err error
		if dir, err = os.MkdirTemp(keep, "kill9-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("keeping %s", dir)
	}
	for _, f := range []string{"pipeline.hcl", "app_log.avsc"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if f == "pipeline.hcl" {
			b = withRetentionCheckEverySecond(t, b)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs := filepath.Join(dir, "logs")
	os.Mkdir(logs, 0o755)
	prefix := fmt.Sprintf("weir-kill9-%d", time.Now().UnixNano())
	index := prefix + "-2024.05.01"
	// The index as an operator would template it: keywords rather than
	// analyzed text, no replica on a one-node cluster, no periodic refresh
	// (the test refreshes before it counts).
	es.MustDo(t, "PUT", "/"+index, []byte(`{
		"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"},
		"mappings": {"properties": {
			"time": {"type": "date"}, "level": {"type": "keyword"}, "service": {"type": "keyword"},
			"msg": {"type": "keyword"}, "trace_id": {"type": "keyword"}, "status": {"type": "long"},
			"duration_ms": {"type": "double"}, "host": {"type": "keyword"}, "file": {"type": "keyword"}}}}`))
	t.Cleanup(func() { es.Do(t, "DELETE", "/"+index, nil) })

	// Every listener on a port of the test's own (the default admin
	// listener, 127.0.0.1:9645, is shared by every weir run on the host);
	// the first start picks them (startOnFreeAddrs), restarts keep them.
	var kafkaAddr, registryAddr, adminAddr string
	var args []string
	var weirLogs []string
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, args...)
		p := filepath.Join(dir, fmt.Sprintf("weir%d.log", len(weirLogs)))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		weirLogs = append(weirLogs, p)
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); f.Close() })
		return cmd
	}
	// startOnFreeAddrs starts weir run for the first time on free
	// 127.0.0.1 ports. A port picked free can be taken by another process
	// before weir run binds it (hog passes saw it in other tests): weir run
	// then exits on "address already in use", and it starts again on other
	// ports (nobody has the addresses yet). It returns once the broker,
	// registry and admin listeners accept connections.
	startOnFreeAddrs := func() *exec.Cmd {
		for {
			kafkaAddr, registryAddr, adminAddr = testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
			args = []string{"run", dir, "--status", "off", "--watch-interval", "0", "--admin-addr", adminAddr,
				"--var", `log_files=["` + logs + `/*.log*"]`, "--var", "elasticsearch_url=" + es.URL,
				"--var", "index_prefix=" + prefix, "--var", "kafka_addr=" + kafkaAddr, "--var", "registry_addr=" + registryAddr}
			cmd := start()
			err := testkit.WaitListening(2*time.Minute, weirLogs[len(weirLogs)-1], kafkaAddr, registryAddr, adminAddr)
			if err == nil {
				return cmd
			}
			if !errors.Is(err, testkit.ErrPortTaken) {
				t.Fatalf("weir run did not listen on %s, %s and %s: %v", kafkaAddr, registryAddr, adminAddr, err)
			}
			t.Logf("weir run could not bind %s, %s or %s (taken meanwhile): starting it on other ports", kafkaAddr, registryAddr, adminAddr)
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range weirLogs { // the pipeline's own log lines (not the broker's)
				b, _ := os.ReadFile(p)
				t.Logf("--- %s (pipeline lines, warnings and errors of any logger, summaries; last 80)\n%s", p, strings.Join(keptLines(string(b), 80), "\n"))
			}
		}
	})
	began := time.Now()
	count := func() int {
		es.Do(t, "POST", "/"+index+"/_refresh", nil)
		st, b := es.Do(t, "GET", "/"+index+"/_count", nil)
		var c struct{ Count int }
		if st != 200 || json.Unmarshal(b, &c) != nil {
			return -1
		}
		return c.Count
	}
	// indexed is how many documents Elasticsearch has indexed into the
	// index, refreshed (searchable) or not: its indexing statistics, which
	// count each write of a document, so a line written again after a
	// restart counts twice. Polling it does not refresh the index: a
	// refresh and count twice a second for the whole run (about 4
	// minutes) cut the bulk writes into hundreds of small segments for
	// Elasticsearch to merge again, most of its CPU in this test.
	indexed := func() int {
		st, b := es.Do(t, "GET", "/"+index+"/_stats/indexing?filter_path=_all.primaries.indexing.index_total", nil)
		var s struct {
			All struct {
				Primaries struct {
					Indexing struct {
						IndexTotal int `json:"index_total"`
					}
				}
			} `json:"_all"`
		}
		if st != 200 || json.Unmarshal(b, &s) != nil {
			return -1
		}
		return s.All.Primaries.Indexing.IndexTotal
	}
	// waitCount waits for at least min documents while indexing moves:
	// it fails after stall without progress (a restarted weir first
	// starts its embedded broker; its sink, a static member, then takes
	// the killed one's place). It refreshes and counts the documents
	// only once at least min were indexed.
	waitCount := func(min int, stall time.Duration) int {
		t.Helper()
		last, lastAt, loggedAt := -1, time.Now(), time.Now()
		for {
			ops, n := indexed(), -1
			if ops >= min {
				n = count()
			}
			if time.Since(loggedAt) >= 30*time.Second { // the pace, for a failure's log
				t.Logf("%d documents indexed (%d counted) at %s", ops, n, time.Since(began).Round(time.Second))
				loggedAt = time.Now()
			}
			if n > total {
				t.Fatalf("%d documents: more than the %d lines written", n, total)
			}
			if n >= min {
				return n
			}
			if ops != last {
				last, lastAt = ops, time.Now()
			} else if time.Since(lastAt) > stall {
				stallReport(t, es, index, kafkaAddr, adminAddr)
				t.Fatalf("%d documents indexed (%d counted), no progress for %s, waiting for %d", ops, n, stall, min)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}

	written := make(chan error, 1)
	writing := true
	go func() { written <- writeAppLogs(logs) }()
	child := startOnFreeAddrs()
	// The application writes for about a minute; the first kill comes
	// while it writes, the second after the restarted sink has indexed
	// more.
	for kill, at := range []int{150_000, 450_000} {
		waitCount(at, 90*time.Second)
		select {
		case err := <-written:
			writing = false
			if err != nil {
				t.Fatal(err)
			}
		default:
		}
		child.Process.Signal(syscall.SIGKILL)
		child.Wait()
		t.Logf("kill -9 #%d at %s with %d documents indexed (application still writing: %v)",
			kill+1, time.Since(began).Round(time.Millisecond), count(), writing)
		child = start()
	}
	if writing {
		t.Logf("application still writing after the second restart")
		if err := <-written; err != nil {
			t.Fatal(err)
		}
	}
	waitCount(total, 90*time.Second)
	t.Logf("%d documents after %s", total, time.Since(began).Round(time.Millisecond))
	// weir stops cleanly, and nothing more arrives.
	child.Process.Signal(syscall.SIGTERM)
	if err := child.Wait(); err != nil {
		t.Errorf("weir run after SIGTERM: %v", err)
	}
	if n := count(); n != total {
		t.Fatalf("%d documents after weir stopped, want %d", n, total)
	}
	checkDocuments(t, es, index)
}

const (
	appFiles    = 4
	perFile     = 250_000
	rotateEvery = 40_000
	total       = appFiles * perFile
)

// appLine is what line i of file f holds (appLogLine is the line): all
// of one day (one daily index), levels info/warn/error (none filtered).
type appLine struct {
	TS                   time.Time
	Lvl, Svc, Msg, Trace string
	Status               int
	Took                 float64
}

func appLineFields(f, i int) appLine {
	return appLine{
		TS:  time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 100 * time.Millisecond),
		Lvl: [...]string{"INFO", "warn", "error"}[i%3], Svc: fmt.Sprintf("app%d", f),
		Msg:    fmt.Sprintf("app%d %07d GET /v1/items -> 200 lorem ipsum dolor sit amet", f, i),
		Trace:  fmt.Sprintf("%d-%07d", f, i),
		Status: 200 + i%3*100, Took: float64(i%1000) + 0.5,
	}
}

// appLogLine is line i of file f: JSON the example's pipeline parses
// (TestAppLogLineFields: it parses to appLineFields(f, i)).
func appLogLine(f, i int) string {
	l := appLineFields(f, i)
	return fmt.Sprintf(`{"ts":%q,"lvl":%q,"svc":%q,"msg":%q,"trace":%q,"status":%d,"took":%d.5}`,
		l.TS.Format(time.RFC3339Nano), l.Lvl, l.Svc, l.Msg, l.Trace, l.Status, i%1000)
}

// TestAppLogLineFields: each line the application writes is JSON whose
// fields are appLineFields' (checkDocuments compares the documents with
// those, not with a parse of each of the million lines).
func TestAppLogLineFields(t *testing.T) {
	for f := range appFiles {
		for i := 0; i < perFile; i += 997 {
			var line struct {
				TS, Lvl, Svc, Msg, Trace string
				Status                   int
				Took                     float64
			}
			if err := json.Unmarshal([]byte(appLogLine(f, i)), &line); err != nil {
				t.Fatalf("line %d of app%d.log: %v: %s", i, f, err, appLogLine(f, i))
			}
			ts, err := time.Parse(time.RFC3339Nano, line.TS)
			want := appLineFields(f, i)
			if err != nil || !ts.Equal(want.TS) || line.Lvl != want.Lvl || line.Svc != want.Svc || line.Msg != want.Msg ||
				line.Trace != want.Trace || line.Status != want.Status || line.Took != want.Took {
				t.Fatalf("line %d of app%d.log parses to %+v (ts %v, %v), want %+v", i, f, line, ts, err, want)
			}
		}
	}
}

// writeAppLogs writes perFile lines to each of appFiles files in about
// a minute, rotating each file every rotateEvery lines, alternately by rename
// (then a new file) and by copytruncate (the copy appears atomically).
func writeAppLogs(dir string) error {
	out := make([]*os.File, appFiles)
	path := func(f int) string { return filepath.Join(dir, fmt.Sprintf("app%d.log", f)) }
	for f := range out {
		var err error
		if out[f], err = os.OpenFile(path(f), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
	}
	rotations := make([]int, appFiles)
	const chunk = 1000
	for i := 0; i < perFile; i += chunk {
		for f := 0; f < appFiles; f++ {
			var b []byte
			for j := i; j < i+chunk; j++ {
				b = append(b, appLogLine(f, j)...)
				b = append(b, '\n')
			}
			if _, err := out[f].Write(b); err != nil {
				return err
			}
			if (i+chunk)%rotateEvery != 0 {
				continue
			}
			rotations[f]++
			rotated := fmt.Sprintf("%s.%d", path(f), rotations[f])
			if (rotations[f]+f)%2 == 0 { // rename, then a new file
				if err := os.Rename(path(f), rotated); err != nil {
					return err
				}
				out[f].Close()
				var err error
				if out[f], err = os.OpenFile(path(f), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
					return err
				}
				continue
			}
			data, err := os.ReadFile(path(f))
			if err != nil {
				return err
			}
			tmp := filepath.Join(dir, "copy.tmp")
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				return err
			}
			if err := os.Rename(tmp, rotated); err != nil {
				return err
			}
			if err := out[f].Truncate(0); err != nil {
				return err
			}
		}
		time.Sleep(250 * time.Millisecond) // pacing: ~16,000 lines/s
	}
	for _, f := range out {
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// checkDocuments scrolls over the whole index: every line must be exactly
// one document, and each document must hold its line's parsed fields.
func checkDocuments(t *testing.T, es *searchtest.Server, index string) {
	t.Helper()
	seen := make([]uint8, total)
	docs, bad := 0, 0
	body := []byte(`{"size": 10000, "sort": ["_doc"], "_source": ["msg", "level", "service", "trace_id", "status", "duration_ms", "time"]}`)
	path := "/" + index + "/_search?scroll=2m"
	var scrollID string
	for {
		st, b := es.Do(t, "POST", path, body)
		if st != 200 {
			t.Fatalf("scroll: status %d: %.500s", st, b)
		}
		var res struct {
			ScrollID string `json:"_scroll_id"`
			Hits     struct {
				Hits []struct {
					ID     string `json:"_id"`
					Source struct {
						Msg, Level, Service, Time string
						TraceID                   string `json:"trace_id"`
						Status                    int
						DurationMS                float64 `json:"duration_ms"`
					} `json:"_source"`
				}
			}
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Hits.Hits) == 0 {
			break
		}
		scrollID = res.ScrollID
		for _, h := range res.Hits.Hits {
			docs++
			s := h.Source
			var f, i int
			if _, err := fmt.Sscanf(s.Msg, "app%d %d ", &f, &i); err != nil || f < 0 || f >= appFiles || i < 0 || i >= perFile {
				if bad++; bad <= 5 {
					t.Errorf("document %s: msg %q is no line of the application", h.ID, s.Msg)
				}
				continue
			}
			seen[f*perFile+i]++
			line := appLineFields(f, i)
			got, err := time.Parse(time.RFC3339Nano, s.Time)
			if s.Msg != line.Msg || s.Level != strings.ToLower(line.Lvl) || s.Service != line.Svc || s.TraceID != line.Trace ||
				s.Status != line.Status || s.DurationMS != line.Took || err != nil || !got.Equal(line.TS) ||
				!strings.HasPrefix(h.ID, "app_logs+") {
				if bad++; bad <= 5 {
					t.Errorf("document %s does not match line %d of app%d.log:\n  %+v\n  %s", h.ID, i, f, s, appLogLine(f, i))
				}
			}
		}
		path = "/_search/scroll"
		body, _ = json.Marshal(map[string]string{"scroll": "2m", "scroll_id": scrollID})
	}
	if scrollID != "" {
		b, _ := json.Marshal(map[string]string{"scroll_id": scrollID})
		es.Do(t, "DELETE", "/_search/scroll", b)
	}
	missing, dups := 0, 0
	var runs []string // "app2.log lines 240000-249999 missing", first ones
	for k := 0; k < total; {
		n := seen[k]
		j := k
		for j < total && seen[j] == n && j/perFile == k/perFile {
			j++
		}
		if n != 1 {
			if n == 0 {
				missing += j - k
			} else {
				dups += j - k
			}
			if len(runs) < 20 {
				runs = append(runs, fmt.Sprintf("app%d.log lines %d-%d: %d documents each", k/perFile, k%perFile, (j-1)%perFile, n))
			}
		}
		k = j
	}
	if docs != total || missing > 0 || dups > 0 || bad > 0 {
		t.Fatalf("%d documents for %d lines: %d lines missing, %d duplicated, %d documents wrong\n%s",
			docs, total, missing, dups, bad, strings.Join(runs, "\n"))
	}
}

// withRetentionCheckEverySecond returns the example's pipeline with its
// embedded broker checking retention every second instead of every 5
// minutes (log.retention.check.interval.ms), so that every run applies the
// topic's retention while the sink is behind, not only a run on a machine
// slow enough for one weir run to live 5 minutes: the records carry the
// lines' own times (parse_timestamp), all of 2024-05-01, and retention by
// those deleted the unread data at the first check (the stalls at 424,008,
// 386,161, 906,409 and 109,323 documents); the topic now keeps records by
// their arrival time (message.timestamp.type LogAppendTime).
func withRetentionCheckEverySecond(t *testing.T, pipeline []byte) []byte {
	t.Helper()
	const at = "  registry_addr = var.registry_addr\n}"
	out := strings.Replace(string(pipeline), at, "  registry_addr = var.registry_addr\n  config        = { \"log.retention.check.interval.ms\" = \"1000\" }\n}", 1)
	if out == string(pipeline) {
		t.Fatalf("pipeline.hcl: no broker block ending with %q to add the retention check interval to", at)
	}
	return []byte(out)
}

// keptLines are the lines of a weir run log that explain a failure: the
// pipeline's own lines (not "tailing file"), every warning and error of
// any logger (broker, group coordinator, registry), and the run's
// per-component summaries; the last max of them.
func keptLines(log string, max int) []string {
	var keep []string
	for _, l := range strings.Split(log, "\n") {
		switch {
		case strings.Contains(l, `"msg":"tailing file"`):
		case strings.Contains(l, `"logger":"pipelines"`), strings.Contains(l, `"level":"warn"`), strings.Contains(l, `"level":"error"`),
			strings.Contains(l, `"msg":"records per component since start"`):
			keep = append(keep, l)
		}
	}
	if len(keep) > max {
		keep = keep[len(keep)-max:]
	}
	return keep
}

// stallReport logs what a stalled sink's failure needs to explain
// itself: the sink's consumer group (state, members, assignment) and
// its lag per partition from the broker, the pipeline's component states
// and last errors from weir run's pipeline API, and Elasticsearch's own
// view (cluster health, the index, write thread pool rejections, pending
// tasks).
func stallReport(t *testing.T, es *searchtest.Server, index, kafkaAddr, adminAddr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const group = "weir-sink-es" // pipelines: a sink's default group is weir-sink-<name>
	if cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr)); err != nil {
		t.Logf("stall report: kafka client: %v", err)
	} else {
		adm := kadm.NewClient(cl)
		if gs, err := adm.DescribeGroups(ctx, group); err != nil {
			t.Logf("stall report: describing group %s: %v", group, err)
		} else {
			for _, g := range gs.Sorted() {
				t.Logf("stall report: group %s: state %s, protocol %s, coordinator %d, error %v", g.Group, g.State, g.Protocol, g.Coordinator.NodeID, g.Err)
				for _, m := range g.Members {
					a, _ := m.Assigned.AsConsumer()
					var parts []string
					if a != nil {
						for _, tp := range a.Topics {
							parts = append(parts, fmt.Sprint(tp.Topic, tp.Partitions))
						}
					}
					t.Logf("stall report:   member %s (%s %s) assigned %s", m.MemberID, m.ClientID, m.ClientHost, strings.Join(parts, " "))
				}
			}
		}
		if lag, err := adm.Lag(ctx, group); err != nil {
			t.Logf("stall report: lag of group %s: %v", group, err)
		} else {
			for _, l := range lag.Sorted() {
				for _, ml := range l.Lag.Sorted() {
					member := "none"
					if ml.Member != nil {
						member = ml.Member.MemberID
					}
					t.Logf("stall report: lag %s/%d: committed %d, end %d, lag %d, member %s, err %v",
						ml.Topic, ml.Partition, ml.Commit.At, ml.End.Offset, ml.Lag, member, ml.Err)
				}
			}
		}
		cl.Close()
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+adminAddr+"/api/v1/pipeline", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Logf("stall report: pipeline API: %v", err)
	} else {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		resp.Body.Close()
		t.Logf("stall report: pipeline API (%s): %s", resp.Status, b)
	}
	for _, path := range []string{"/_cluster/health", "/_cat/indices/" + index + "?v",
		"/_nodes/stats/thread_pool?filter_path=nodes.*.thread_pool.write,nodes.*.thread_pool.search", "/_nodes/stats/breaker?filter_path=nodes.*.breakers.parent",
		"/_cat/pending_tasks?v", "/_nodes/hot_threads?threads=3"} {
		st, b := es.Do(t, "GET", path, nil)
		t.Logf("stall report: elasticsearch GET %s: %d: %.3000s", path, st, b)
	}
}
