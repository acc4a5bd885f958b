package mysql

// TestWeirRunFidelity: issue 13's end-to-end promise through the product
// as users run it.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/broker/brokertest/testbroker"
	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/deadletter"
	"weir/internal/srclient"
	"weir/internal/testkit"
	"weir/internal/weirbin"
	"weir/schemas"
)

// weirRunPipeline is the pipeline of TestWeirRunFidelity, as a user
// writes it: the embedded broker and registry, a mysql source (Avro) with
// a table block per table, an Elasticsearch sink with cdc = true per
// table topic. @NAME@ are filled in by the test.
const weirRunPipeline = `
broker {
  data_dir      = "${path.root}/.weir"
  kafka_addr    = "@KAFKA@"
  registry_addr = "@REGISTRY@"
}

source "mysql" "db" {
  exactly_once      = true
  topic             = "srv.schema-changes"
  host              = "@HOST@"
  port              = @PORT@
  user              = "@USER@"
  password          = "@PASSWORD@"
  server_name       = "srv"
  include_databases = ["@DB@"]

  table "fid" {
    name = "@DB@.fid"
    topic { partitions = 3 }
  }
  table "cs" {
    name = "@DB@.cs"
    topic { partitions = 3 }
  }
}

sink "elasticsearch" "fid" {
  from           = [source.db.table["fid"].topic]
  instance_id    = "fid-1"
  urls           = ["@ES@"]
  index          = "@INDEX@-fid"
  cdc            = true
  flush_interval = "200ms"
}

sink "elasticsearch" "cs" {
  from           = [source.db.table["cs"].topic]
  instance_id    = "cs-1"
  urls           = ["@ES@"]
  index          = "@INDEX@-cs"
  cdc            = true
  flush_interval = "200ms"
}
`

// TestWeirRunFidelity runs the weir binary (`weir run` on a pipeline
// file: embedded broker and registry, mysql source, Elasticsearch sinks
// with cdc = true) on the latin1-default server and on the utf8mb4 one.
// Two tables: every type of fidelityCols and every character set of
// charsetTable with non-ASCII text (CJK, emoji, accented Latin in latin1
// and utf8mb4 columns, all 256 latin1 bytes, binary bytes). Rows are in
// the snapshot; a workload then inserts, updates (some changing the
// primary key) and deletes rows of both tables while weir is killed
// with -9 (once a change of the workload has reached the index) and
// started again on the same data directory. The source is exactly_once
// (changes and binlog positions in one transaction). At the end the
// topics, read with read_committed (replayed key by key: no change
// missed or delivered twice — a repeated insert, delete or update fails
// the replay —, decoded through the registry) and the indices equal the
// tables value for
// value: the values the server returns (decimals exact, instants as
// UNIX_TIMESTAMP, floats as the stored float, bits as integers, WKT,
// bytes); no record is dead-lettered.
func TestWeirRunFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("weir run with MariaDB and Elasticsearch")
	}
	es := searchtest.Shared(t, searchtest.Elasticsearch7)
	bin := weirbin.Build(t)
	onBothServersDB(t, func(t *testing.T, srv *mysqltest.Server) {
		began := time.Now()
		// The source is exactly_once: its topics are read read_committed.
		e := &env{t: t, db: srv, name: srv.NewDatabase(t), committed: true}
		f := fidelitySQL("fid")
		e.exec("SET SESSION sql_mode = ''", f.create, charsetTable,
			f.insert(1, f.snap), f.insert(2, f.ins), f.insert(3, f.snap), f.update(3, f.upd),
			"INSERT INTO cs VALUES "+charsetRow(1, "s1")+", "+charsetRow(2, "s2"))

		index := fmt.Sprintf("weir-run-%d", time.Now().UnixNano())
		dir := t.TempDir()
		t.Cleanup(func() { es.Do(t, "DELETE", "/"+index+"-*", nil) })
		w := &weirRun{t: t, bin: bin, dir: dir}
		p, kafka, reg := w.startOnFreeAddrs(func(kafka, reg string) {
			pipeline := strings.NewReplacer("@KAFKA@", kafka, "@REGISTRY@", reg, "@HOST@", srv.Host, "@PORT@", strconv.Itoa(srv.Port),
				"@USER@", mysqltest.CDCUser, "@PASSWORD@", mysqltest.CDCPassword, "@DB@", e.name, "@ES@", es.URL, "@INDEX@", index).
				Replace(weirRunPipeline)
			if err := os.WriteFile(filepath.Join(dir, "pipeline.hcl"), []byte(pipeline), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		cl, err := sr.NewClient(sr.URLs("http://" + reg))
		if err != nil {
			t.Fatal(err)
		}
		e.kafka, e.reg, e.serde = kafka, "http://"+reg, schemas.NewSerde(srclient.Source(cl))
		// The snapshot in the indices.
		testbroker.CheckFor(t, 120*time.Second, func() error {
			for name, n := range map[string]int{"fid": 3, "cs": 2} {
				docs, err := searchDocs(es.URL, index+"-"+name)
				if err != nil || len(docs) < n {
					return fmt.Errorf("index %s-%s: %d documents, want %d (%v)", index, name, len(docs), n, err)
				}
			}
			return nil
		})
		t.Logf("snapshot indexed %v in", time.Since(began).Round(time.Millisecond))

		wl := &fidelityWorkload{f: f, rounds: 90, nextID: 100}
		werr := make(chan error, 1)
		go func() { werr <- wl.run(e) }()
		waitWorkload := func(n int64) {
			testbroker.CheckFor(t, 60*time.Second, func() error {
				if p := wl.progress.Load(); p < n {
					select {
					case err := <-werr:
						werr <- err
						if err != nil {
							t.Fatalf("workload: %v", err)
						}
					default:
					}
					return fmt.Errorf("workload at round %d of %d", p, n)
				}
				return nil
			})
		}
		// kill -9 once a change of the workload is in the index (the
		// workload goes on), start again once it has made more changes.
		testbroker.CheckFor(t, 120*time.Second, func() error {
			docs, err := searchDocs(es.URL, index+"-fid")
			if err != nil || len(docs) <= 3 {
				return fmt.Errorf("index %s-fid: %d documents, waiting for the workload's first (%v)", index, len(docs), err)
			}
			return nil
		})
		w.kill(p)
		t.Logf("kill -9 of weir run at workload round %d, %v in", wl.progress.Load(), time.Since(began).Round(time.Millisecond))
		waitWorkload(int64(wl.rounds) * 2 / 3)
		w.start()
		t.Logf("weir run started again at workload round %d", wl.progress.Load())
		if err := <-werr; err != nil {
			t.Fatalf("workload: %v", err)
		}
		t.Logf("workload done (%d rounds), %v in", wl.rounds, time.Since(began).Round(time.Millisecond))
		// The tables hold what they will hold at the end; read them once.

		// The tables as the server reads them.
		fidWant := map[string]map[string]string{}
		for _, id := range e.db.Query(t, e.name, "SELECT id FROM fid") {
			n, _ := strconv.Atoi(id[0])
			fidWant[id[0]] = fidelityWant(t, e, "fid", n)
		}
		csWant := map[string]map[string]string{}
		for _, row := range e.db.Query(t, e.name, "SELECT id, "+strings.Join(charsetCols, ",")+" FROM cs") {
			m := map[string]string{}
			for i, c := range charsetCols {
				m[c] = row[i+1]
			}
			csWant[row[0]] = m
		}
		tables := []struct {
			name  string
			want  map[string]map[string]string
			diffs func(got map[string]any, want map[string]string, doc bool) []string
		}{
			{"fid", fidWant, func(got map[string]any, want map[string]string, doc bool) []string {
				if doc {
					got = fidelityNative(got)
				}
				return fidelityDiffs(got, want)
			}},
			{"cs", csWant, charsetDiffs},
		}
		for _, tb := range tables {
			testbroker.CheckFor(t, 120*time.Second, func() error {
				images, n, _ := e.replayImages(e.topic(tb.name))
				if t.Failed() {
					t.FailNow()
				}
				got := map[string]map[string]any{}
				for k, img := range images {
					got[strings.TrimSuffix(strings.TrimPrefix(k, "map[id:"), "]")] = img
				}
				if err := sameRows(got, tb.want, false, tb.diffs); err != nil {
					return fmt.Errorf("topic %s (%d change records): %w", e.topic(tb.name), n, err)
				}
				return nil
			})
			testbroker.CheckFor(t, 120*time.Second, func() error {
				docs, err := searchDocs(es.URL, index+"-"+tb.name)
				if err != nil {
					return err
				}
				if err := sameRows(docs, tb.want, true, tb.diffs); err != nil {
					return fmt.Errorf("index %s-%s: %w", index, tb.name, err)
				}
				return nil
			})
			t.Logf("topic and index of %s equal the table (%d rows), %v in", tb.name, len(tb.want), time.Since(began).Round(time.Millisecond))
			if dl := e.readAll(deadletter.Topic(tb.name)); len(dl) != 0 {
				t.Errorf("%d records in the dead-letter topic of sink %s, want none; first: %s", len(dl), tb.name, dl[0].Headers)
			}
		}
		t.Logf("done in %v", time.Since(began).Round(time.Millisecond))
	})
}

// sameRows compares rows (id → column → value) with the table (id →
// column → the server's text): the same ids, no column the table lacks,
// and no difference diffs reports.
func sameRows(rows map[string]map[string]any, table map[string]map[string]string, doc bool,
	diffs func(got map[string]any, want map[string]string, doc bool) []string) error {
	var out []string
	for id, want := range table {
		got, ok := rows[id]
		if !ok {
			out = append(out, "row "+id+" is missing")
			continue
		}
		if g := plain(native(got["id"])); g != id {
			out = append(out, "row "+id+" has id "+g)
		}
		for _, d := range diffs(got, want, doc) {
			out = append(out, "row "+id+": "+d)
		}
		for col := range got {
			if _, ok := want[col]; !ok && col != "id" {
				out = append(out, "row "+id+" has "+col+", the table has no such column")
			}
		}
	}
	for id := range rows {
		if _, ok := table[id]; !ok {
			out = append(out, "row "+id+" is not in the table (deleted or re-keyed)")
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.Strings(out)
	n := len(out)
	if n > 12 {
		out = out[:12]
	}
	return fmt.Errorf("%d rows, the table %d; %d differences:\n%s", len(rows), len(table), n, strings.Join(out, "\n"))
}

// charsetBytes are charsetTable's binary columns: bytes in Avro, base64
// in JSON documents.
var charsetBytes = map[string]bool{"b": true, "bl": true, "bn": true}

// charsetDiffs compares a row of charsetTable as delivered with the
// server's text: byte for byte, and text always valid UTF-8.
func charsetDiffs(got map[string]any, want map[string]string, doc bool) []string {
	var out []string
	for _, c := range charsetCols {
		var g string
		switch x := native(got[c]).(type) {
		case []byte:
			g = string(x)
		case string:
			g = x
			if doc && charsetBytes[c] {
				b, err := base64.StdEncoding.DecodeString(x)
				if err != nil {
					out = append(out, fmt.Sprintf("column %s: %q is not base64: %v", c, trunc(x), err))
					continue
				}
				g = string(b)
			}
		default:
			out = append(out, fmt.Sprintf("column %s: %T %v", c, x, x))
			continue
		}
		if g != want[c] {
			out = append(out, fmt.Sprintf("column %s:\n got %q\nwant %q", c, trunc(g), trunc(want[c])))
		}
	}
	return out
}

// fidelityWorkload changes the rows of the fidelity and charset tables
// in rounds: inserts (the snapshot's or the insert's values), updates to
// another set of values, primary-key changes and deletes, with
// non-ASCII text in every character set.
type fidelityWorkload struct {
	f        fidelityStmts
	rounds   int
	nextID   int
	progress atomic.Int64
}

func (w *fidelityWorkload) run(e *env) error {
	c, err := client.Connect(e.db.Addr(), mysqltest.AdminUser, mysqltest.AdminPassword, e.name)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Execute("SET SESSION sql_mode = ''"); err != nil {
		return err
	}
	fid, cs := []int{1, 2, 3}, []int{1, 2}
	sets := [][]string{w.f.snap, w.f.ins, w.f.upd}
	for i := 0; i < w.rounds; i++ {
		id := w.nextID
		w.nextID++
		stmts := []string{
			"BEGIN",
			w.f.insert(id, sets[i%2]),
			w.f.update(fid[i%len(fid)], sets[(i+1)%3]),
			"INSERT INTO cs VALUES " + charsetRow(id, fmt.Sprintf("w%d ñ", i)),
			fmt.Sprintf(`UPDATE cs SET l1 = CONCAT(l1, ' Ñandú %d'), u4 = CONCAT(u4, ' 🚀'), u3 = CONCAT(u3, ' ç'),
				e = IF(e = '€uro', 'Zoë', '€uro'), s = 'ß,x', eu = '李雷', j = JSON_SET(j, '$.r', 'ü %d 😀'),
				b = CONCAT(b, X'FF00'), bn = X'00C3A9FF' WHERE id = %d`, i, i, cs[i%len(cs)]),
		}
		fid, cs = append(fid, id), append(cs, id)
		switch i % 6 {
		case 2: // a primary-key change: delete of the old key, create of the new one
			nid := w.nextID
			w.nextID++
			stmts = append(stmts, fmt.Sprintf("UPDATE fid SET id = %d WHERE id = %d", nid, fid[0]),
				fmt.Sprintf("UPDATE cs SET id = %d WHERE id = %d", nid, cs[0]))
			fid, cs = append(fid[1:], nid), append(cs[1:], nid)
		case 4:
			stmts = append(stmts, fmt.Sprintf("DELETE FROM fid WHERE id = %d", fid[0]),
				fmt.Sprintf("DELETE FROM cs WHERE id = %d", cs[0]))
			fid, cs = fid[1:], cs[1:]
		}
		stmts = append(stmts, "COMMIT")
		for _, q := range stmts {
			if _, err := c.Execute(q); err != nil {
				c.Execute("ROLLBACK")
				return fmt.Errorf("%.200s: %w", q, err)
			}
		}
		w.progress.Store(int64(i + 1))
		time.Sleep(20 * time.Millisecond) // pacing: the kill comes mid-stream
	}
	return nil
}

// weirRun starts and kills `weir run` on a pipeline folder.
type weirRun struct {
	t    *testing.T
	bin  string
	dir  string
	runs int
}

func (w *weirRun) start() *exec.Cmd {
	w.t.Helper()
	w.runs++
	cmd := exec.Command(w.bin, "run", w.dir, "--status", "off", "--watch-interval", "0")
	logPath := filepath.Join(w.dir, fmt.Sprintf("weir%d.log", w.runs))
	f, err := os.Create(logPath)
	if err != nil {
		w.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		f.Close()
		if w.t.Failed() {
			b, _ := os.ReadFile(logPath)
			var keep []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, `"level":"error"`) || strings.Contains(l, `"level":"warn"`) || !strings.HasPrefix(l, "{") {
					keep = append(keep, l)
				}
			}
			if len(keep) > 40 {
				keep = keep[len(keep)-40:]
			}
			w.t.Logf("--- %s (errors and warnings, last 40)\n%s", logPath, strings.Join(keep, "\n"))
		}
	})
	return cmd
}

func (w *weirRun) kill(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// startOnFreeAddrs starts weir run for the first time with its broker
// and registry on free 127.0.0.1 ports (weir run must listen on the same
// ones after its restarts); write writes the pipeline for them. A port
// picked free can be taken by another process before weir run binds it
// (a hog pass saw it once): weir run then exits on "address already in
// use", and it starts again on other ports (nobody has the addresses
// yet). It returns once both listeners accept connections.
func (w *weirRun) startOnFreeAddrs(write func(kafka, reg string)) (cmd *exec.Cmd, kafka, reg string) {
	w.t.Helper()
	for {
		kafka, reg = testkit.FreeAddr(w.t), testkit.FreeAddr(w.t)
		write(kafka, reg)
		cmd = w.start()
		err := testkit.WaitListening(2*time.Minute, filepath.Join(w.dir, fmt.Sprintf("weir%d.log", w.runs)), kafka, reg)
		if err == nil {
			return cmd, kafka, reg
		}
		if !errors.Is(err, testkit.ErrPortTaken) {
			w.t.Fatalf("weir run did not listen on %s and %s: %v", kafka, reg, err)
		}
		w.t.Logf("weir run could not bind %s or %s (taken meanwhile): starting it on other ports", kafka, reg)
		w.kill(cmd)
	}
}
