package mysql

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/elasticsearch"
	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
)

const childEnv = "WEIR_MYSQL_TEST_CHILD"

type childConfig struct {
	Broker string
	Config Config
	// Sink, when set, runs an Elasticsearch CDC sink next to the source.
	Sink *childSink
	// ExactlyOnce runs the source exactly-once (records and binlog
	// positions in one transaction per commit).
	ExactlyOnce bool
	// HoldSnapshotAt > 0 holds the snapshot of table HoldTable (db.table,
	// INT key) before the chunk after key HoldSnapshotAt until the child
	// dies: a kill then falls in the snapshot whatever the machine's speed.
	HoldTable      string
	HoldSnapshotAt int
}

// childSink is the search sink of a child: cdc = true into Index,
// consuming Topic as static member Instance of Group.
type childSink struct {
	URL, Index, Topic, Registry, Group, Instance string
}

// childMain runs a source task (and a sink task, if configured) against
// a broker until killed (the test binary re-executed with childEnv set).
func childMain() {
	var cc childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &cc); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		os.Exit(2)
	}
	lg, _ := zap.NewDevelopment()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{cc.Broker}}, Logger: lg}
	if cc.HoldSnapshotAt > 0 {
		var once sync.Once
		hook := func(ctx context.Context, table string, after [][]byte) bool {
			if table != cc.HoldTable || len(after) == 0 {
				return false
			}
			n, _ := strconv.Atoi(string(after[0]))
			if n < cc.HoldSnapshotAt {
				return false
			}
			once.Do(func() { lg.Info("snapshot held (test)", zap.String("table", table), zap.Int("after", n)) })
			pollPause(ctx)
			return true
		}
		snapshotChunkHook.Store(&hook)
	}
	errc := make(chan error, 2)
	tasks := 1
	go func() {
		opts := connectors.SourceOptions{Topic: "unused-" + cc.Config.Name, ExactlyOnce: cc.ExactlyOnce}
		if cc.ExactlyOnce {
			opts.CommitInterval = 300 * time.Millisecond
		}
		err := rt.RunSource(ctx, cc.Config.Name, New(cc.Config), opts)
		errc <- err
	}()
	if s := cc.Sink; s != nil {
		tasks++
		cfg := elasticsearch.Defaults()
		cfg.URLs, cfg.Index, cfg.CDC, cfg.SchemaRegistryURL = []string{s.URL}, s.Index, true, s.Registry
		cfg.FlushInterval = 200 * time.Millisecond
		go func() {
			errc <- rt.RunSink(ctx, "search", elasticsearch.NewSink(cfg), connectors.SinkOptions{Topics: []string{s.Topic},
				Group: s.Group, InstanceID: s.Instance, FlushInterval: 500 * time.Millisecond})
		}()
	}
	for ; tasks > 0; tasks-- {
		if err := <-errc; err != nil {
			fmt.Fprintln(os.Stderr, "task:", err)
			os.Exit(1)
		}
	}
	os.Exit(0)
}

// child is a source task (and maybe a sink task) in a child process.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startChild(t *testing.T, cc childConfig, logName string) *child {
	t.Helper()
	b, _ := json.Marshal(cc)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	logPath := filepath.Join(t.TempDir(), logName)
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(c.done) }()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 6000 {
				b = b[len(b)-6000:]
			}
			t.Logf("%s (tail):\n%s", logName, b)
		}
	})
	return c
}

func (c *child) kill() {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// keyState replays a table topic: per key, records in offset order of
// its partition. It checks the chain of every key: the before image of
// each update or delete equals the key's state before it (no change
// missed), creates and snapshot reads find the key absent (nothing sent
// twice), and versions never go down. It returns the final state (key →
// after image rendered as strings) and the number of change records.
func (e *env) replay(topic string) (map[string]map[string]string, int, int) {
	e.t.Helper()
	images, n, tombs := e.replayImages(topic)
	state := make(map[string]map[string]string, len(images))
	for k, m := range images {
		state[k] = flat(m)
	}
	return state, n, tombs
}

// replayImages is replay with the final after images as decoded.
func (e *env) replayImages(topic string) (map[string]map[string]any, int, int) {
	e.t.Helper()
	rs := e.readAll(topic)
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Partition != rs[j].Partition {
			return rs[i].Partition < rs[j].Partition
		}
		return rs[i].Offset < rs[j].Offset
	})
	state := map[string]map[string]any{}
	lastVer := map[string]int64{}
	partOf := map[string]int32{}
	errs := 0
	fail := func(r *kgo.Record, format string, args ...any) {
		errs++
		if errs <= 10 {
			e.t.Errorf("%s/%d@%d: %s", r.Topic, r.Partition, r.Offset, fmt.Sprintf(format, args...))
		}
	}
	n, tombs := 0, 0
	for _, r := range rs {
		d := e.decode(r)
		k := fmt.Sprint(d.key)
		if p, ok := partOf[k]; ok && p != r.Partition {
			fail(r, "key %s in partitions %d and %d", k, p, r.Partition)
		}
		partOf[k] = r.Partition
		var ver int64
		fmt.Sscan(d.ver, &ver)
		if ver < lastVer[k] {
			fail(r, "key %s: version %d after %d", k, ver, lastVer[k])
		}
		lastVer[k] = ver
		if d.tomb {
			tombs++
			if _, ok := state[k]; ok {
				fail(r, "tombstone of key %s, which has a row", k)
			}
			continue
		}
		n++
		cur, exists := state[k]
		switch d.op {
		case "r", "c":
			if exists {
				fail(r, "op %s for key %s, which already has row %v (duplicate)", d.op, k, cur)
			}
			state[k] = d.after
		case "u", "d":
			if !exists {
				fail(r, "op %s for key %s, which has no row (a change was missed)", d.op, k)
			} else if diff := diffCommon(flat(cur), flat(d.before)); diff != "" {
				fail(r, "op %s for key %s: before image differs from the key's state: %s", d.op, k, diff)
			}
			if d.op == "u" {
				state[k] = d.after
			} else {
				delete(state, k)
			}
		default:
			fail(r, "unknown op %q", d.op)
		}
	}
	if errs > 10 {
		e.t.Errorf("... %d errors in all", errs)
	}
	return state, n, tombs
}

func flat(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = plain(v)
	}
	return out
}

// diffCommon compares the columns two images share (a DDL may add or
// drop columns between them).
func diffCommon(a, b map[string]string) string {
	var d []string
	for k, va := range a {
		if vb, ok := b[k]; ok && va != vb {
			d = append(d, fmt.Sprintf("%s: %q vs %q", k, va, vb))
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

// tableState reads the table as key → column → text.
func (e *env) tableRows(table, keyCol string) map[string]map[string]string {
	e.t.Helper()
	c, err := client.Connect(e.db.Addr(), mysqltest.AdminUser, mysqltest.AdminPassword, e.name)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	c.Execute("SET time_zone = '+00:00'")
	r, err := c.Execute("SELECT * FROM " + quoteIdent(table))
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Close()
	out := map[string]map[string]string{}
	for _, row := range r.Values {
		m := map[string]string{}
		var key string
		for i, f := range r.Fields {
			// Only a string-typed value may be read with AsString: go-mysql
			// reuses pooled result sets, and a numeric value keeps the
			// string bytes of whatever query used the slot before.
			v := "NULL"
			switch row[i].Type {
			case gmysql.FieldValueTypeNull:
			case gmysql.FieldValueTypeString:
				v = string(row[i].AsString())
			default:
				v = strings.Trim(row[i].String(), "'")
			}
			m[string(f.Name)] = v
			if string(f.Name) == keyCol {
				key = fmt.Sprintf("map[%s:%s]", keyCol, v)
			}
		}
		out[key] = m
	}
	return out
}

func compareState(_ testing.TB, topicState, table map[string]map[string]string) error {
	if len(topicState) != len(table) {
		return fmt.Errorf("topic has %d keys, table %d rows", len(topicState), len(table))
	}
	bad := 0
	var first string
	for k, row := range table {
		got, ok := topicState[k]
		if !ok {
			bad++
			if first == "" {
				first = fmt.Sprintf("row %s missing from the topic", k)
			}
			continue
		}
		for col, v := range row {
			g, ok := got[col]
			if !ok {
				g = "NULL" // written before the column was added: the reader default
			}
			if g != v {
				bad++
				if first == "" {
					first = fmt.Sprintf("row %s column %s: topic %q, table %q", k, col, g, v)
				}
				break
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d rows differ; first: %s", bad, first)
	}
	return nil
}

// workload runs random inserts, updates (some changing the primary key)
// and deletes on table t in transactions of 1–20 statements, and the
// given DDL statements at the given fractions of ops. It returns the
// number of change records the changes must produce.
type workload struct {
	ops      int
	ddl      map[int]string // op index → statement
	progress atomic.Int64
	records  atomic.Int64 // change records (tombstones not counted)
	tombs    atomic.Int64
	nextID   int
	live     []int
	hasG     bool
}

func (w *workload) run(e *env, seed int64) error {
	c, err := client.Connect(e.db.Addr(), mysqltest.AdminUser, mysqltest.AdminPassword, e.name)
	if err != nil {
		return err
	}
	defer c.Close()
	rng := rand.New(rand.NewSource(seed))
	pos := map[int]int{} // id → index in live
	for i, id := range w.live {
		pos[id] = i
	}
	remove := func(id int) {
		i := pos[id]
		last := w.live[len(w.live)-1]
		w.live[i] = last
		pos[last] = i
		w.live = w.live[:len(w.live)-1]
		delete(pos, id)
	}
	add := func(id int) { pos[id] = len(w.live); w.live = append(w.live, id) }
	done := 0
	for done < w.ops {
		if q, ok := w.ddl[done]; ok {
			if _, err := c.Execute(q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			if strings.Contains(q, "ADD COLUMN g") {
				w.hasG = true
			}
			delete(w.ddl, done)
		}
		n := 1 + rng.Intn(20)
		if _, err := c.Execute("BEGIN"); err != nil {
			return err
		}
		var recs, tombs int64
		for i := 0; i < n && done < w.ops; i++ {
			if _, ok := w.ddl[done]; ok && i > 0 {
				break
			}
			var q string
			switch p := rng.Intn(100); {
			case p < 30 || len(w.live) < 10:
				id := w.nextID
				w.nextID++
				q = fmt.Sprintf("INSERT INTO t (id, a, b, c, d, e, f) VALUES (%d, %d, 'ins-%d', %d.%02d, '2024-05-06 07:08:%02d', %d, 'x%d')",
					id, rng.Intn(1000), id, rng.Intn(10000), rng.Intn(100), rng.Intn(60), rng.Int63n(1<<40), rng.Intn(100))
				if strings.Contains(w.colsAfterDrop(), "nof") {
					q = fmt.Sprintf("INSERT INTO t (id, a, b, c, d, e) VALUES (%d, %d, 'ins-%d', %d.%02d, '2024-05-06 07:08:%02d', %d)",
						id, rng.Intn(1000), id, rng.Intn(10000), rng.Intn(100), rng.Intn(60), rng.Int63n(1<<40))
				}
				add(id)
				recs++
			case p < 75:
				id := w.live[rng.Intn(len(w.live))]
				set := fmt.Sprintf("a = a + 1, b = 'upd-%d'", rng.Intn(1e6))
				if w.hasG {
					set += fmt.Sprintf(", g = %d", rng.Intn(100))
				}
				q = fmt.Sprintf("UPDATE t SET %s WHERE id = %d", set, id)
				recs++
			case p < 85:
				id := w.live[rng.Intn(len(w.live))]
				nid := w.nextID
				w.nextID++
				q = fmt.Sprintf("UPDATE t SET id = %d, a = a + 1 WHERE id = %d", nid, id)
				remove(id)
				add(nid)
				recs += 2
				tombs++
			default:
				id := w.live[rng.Intn(len(w.live))]
				q = fmt.Sprintf("DELETE FROM t WHERE id = %d", id)
				remove(id)
				recs++
				tombs++
			}
			if _, err := c.Execute(q); err != nil {
				c.Execute("ROLLBACK")
				return fmt.Errorf("%s: %w", q, err)
			}
			done++
		}
		if _, err := c.Execute("COMMIT"); err != nil {
			return err
		}
		w.records.Add(recs)
		w.tombs.Add(tombs)
		w.progress.Store(int64(done))
	}
	return nil
}

var dropped atomic.Bool

func (w *workload) colsAfterDrop() string {
	if dropped.Load() {
		return "nof"
	}
	return ""
}

// TestSnapshotHandOff proves the snapshot → binlog hand-off has no gap
// and no duplicate: writers update and insert rows while the snapshot
// runs (small chunks, so it takes a while), and every key's chain of
// before images must match its previous state exactly.
func TestSnapshotHandOff(t *testing.T) {
	e := newEnv(t)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(100))",
		"INSERT INTO t SELECT seq, 0, REPEAT('x', 100) FROM seq_1_to_20000")
	cfg := e.config("handoff")
	cfg.ChunkRows = 200
	stop := make(chan struct{})
	werr := make(chan error, 1)
	var writes atomic.Int64
	go func() {
		c, err := client.Connect(e.db.Addr(), mysqltest.AdminUser, mysqltest.AdminPassword, e.name)
		if err != nil {
			werr <- err
			return
		}
		defer c.Close()
		rng := rand.New(rand.NewSource(1))
		next := 20001
		for {
			select {
			case <-stop:
				werr <- nil
				return
			default:
			}
			q := fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id = %d", 1+rng.Intn(20000))
			if rng.Intn(4) == 0 {
				q = fmt.Sprintf("INSERT INTO t VALUES (%d, 0, 'new')", next)
				next++
			}
			if _, err := c.Execute(q); err != nil {
				werr <- err
				return
			}
			writes.Add(1)
		}
	}()
	r := e.run(cfg)
	// Keep writing until the snapshot is over (the last "r" is there).
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if r.src.snapDone() {
			return nil
		}
		return fmt.Errorf("snapshot still running after %d concurrent writes", writes.Load())
	})
	time.Sleep(200 * time.Millisecond) // some writes after the hand-off too
	close(stop)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes ran during and after the snapshot", writes.Load())
	table := e.tableRows("t", "id")
	var state map[string]map[string]string
	testbroker.CheckFor(t, 60*time.Second, func() error {
		state, _, _ = e.replay(e.topic("t"))
		if t.Failed() {
			t.FailNow()
		}
		return compareState(t, state, table)
	})
}

// TestEndToEnd: a 200,000-row table is snapshotted by a source task in a
// child process while a workload runs 100,000 random inserts, updates
// (some changing the primary key) and deletes plus ADD COLUMN, DROP
// COLUMN and MODIFY COLUMN. The same child runs the Elasticsearch sink
// (cdc = true) from the table's topic into an index, as a static group
// member. The child is killed with SIGKILL twice and restarted, so the
// source and the sink both die mid-flight. At the end the topic replays
// to exactly the table, holds every change exactly once (record count),
// and each key's changes in order in one partition; and the index equals
// the table: the same ids, the same column values, deleted rows absent.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("slow end-to-end test")
	}
	es := searchtest.Shared(t, searchtest.Elasticsearch7)
	e := newEnv(t)
	rows, ops := 200000, 100000
	e.exec(`CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40), c DECIMAL(10,2), d DATETIME,
		e BIGINT, f VARCHAR(20), h TINYINT NOT NULL DEFAULT 1, i DOUBLE, j TEXT)`,
		fmt.Sprintf(`INSERT INTO t (id, a, b, c, d, e, f, i, j) SELECT seq, seq %% 1000, CONCAT('row-', seq), seq / 100,
		'2024-01-01 00:00:00' + INTERVAL seq SECOND, seq * 1000, 'f', seq / 7, 'text' FROM seq_1_to_%d`, rows))
	e.b.CreateTopic(e.topic("t"), 3, nil)
	// The index: one shard, no replica; delete versions kept for an hour
	// (a restarted sink replays from its last commit, see
	// connectors/elasticsearch/cdc.go). For the 2-core CI: documents kept
	// as _source only (dynamic: false; the check reads documents back),
	// no periodic refresh (the check refreshes) and no fsync per bulk.
	index := fmt.Sprintf("weir-mysql-e2e-%d", time.Now().UnixNano())
	es.MustDo(t, "PUT", "/"+index, []byte(`{"settings":{"number_of_shards":1,"number_of_replicas":0,"index.gc_deletes":"1h",
		"refresh_interval":"-1","translog.durability":"async"},"mappings":{"dynamic":false}}`))
	sg := &sinkGroup{t: t, adm: kadm.NewClient(e.b.Client()), group: "e2e-search", instance: "e2e-search-1", topic: e.topic("t")}
	cc := childConfig{Broker: e.b.Addr, Config: e.config("e2e"), Sink: &childSink{URL: es.URL, Index: index, Topic: sg.topic,
		Registry: e.reg, Group: sg.group, Instance: sg.instance}}
	start := time.Now()
	c1 := startChild(t, cc, "child1.log")
	w := &workload{ops: ops, nextID: rows + 1, ddl: map[int]string{
		ops / 4:     "ALTER TABLE t ADD COLUMN g INT NULL",
		ops / 2:     "ALTER TABLE t DROP COLUMN f",
		3 * ops / 4: "ALTER TABLE t MODIFY COLUMN a BIGINT NOT NULL",
	}}
	for i := 1; i <= rows; i++ {
		w.live = append(w.live, i)
	}
	// The workload starts once the snapshot transaction exists (its
	// first row is in the topic), so every change it makes is streamed
	// and the exact record count below holds.
	e.waitRecords(e.topic("t"), 1, 60*time.Second)
	werr := make(chan error, 1)
	go func() {
		// DROP COLUMN f: stop naming f in inserts from then on.
		werr <- w.runWithDrop(e, 7)
	}()
	waitProgress := func(n int) {
		testbroker.CheckFor(t, 120*time.Second, func() error {
			select {
			case err := <-werr:
				werr <- err
				if err != nil {
					t.Fatalf("workload: %v", err)
				}
				return nil
			default:
			}
			if p := w.progress.Load(); p < int64(n) {
				return fmt.Errorf("workload at %d of %d ops", p, n)
			}
			return nil
		})
	}
	// restart kills c with SIGKILL mid-flight and starts the next child;
	// the sink, a static member, must get its partitions back at once,
	// not after the dead member's 45 s session timeout.
	restart := func(c *child, n int) *child {
		old := sg.member()
		c.kill()
		done, end := sg.progress()
		t.Logf("killed child %d (-9) at op %d, %v in; the sink had committed %d of %d topic records", n, w.progress.Load(), time.Since(start), done, end)
		restarted := time.Now()
		next := startChild(t, cc, fmt.Sprintf("child%d.log", n+1))
		sg.waitReplaced(old, 30*time.Second)
		t.Logf("child %d's sink took the static member's place (member %s, was %q) with the partitions %v after its start",
			n+1, sg.member(), old, time.Since(restarted).Round(time.Millisecond))
		return next
	}
	waitProgress(ops * 3 / 10)
	c2 := restart(c1, 1)
	waitProgress(ops * 65 / 100)
	restart(c2, 2)
	if err := <-werr; err != nil {
		t.Fatalf("workload: %v", err)
	}
	t.Logf("workload done (%d ops, %d change records expected) %v in", ops, w.records.Load(), time.Since(start))
	table := e.tableRows("t", "id")
	want := rows + int(w.records.Load())
	var state map[string]map[string]string
	var n, tombs int
	testbroker.CheckFor(t, 120*time.Second, func() error {
		state, n, tombs = e.replay(e.topic("t"))
		if t.Failed() {
			t.FailNow()
		}
		if err := compareState(t, state, table); err != nil {
			return fmt.Errorf("%d change records so far (want %d): %w", n, want, err)
		}
		return nil
	})
	if n != want || tombs != int(w.tombs.Load()) {
		t.Errorf("topic holds %d change records and %d tombstones, want exactly %d and %d (snapshot rows + workload changes)", n, tombs, want, w.tombs.Load())
	}
	t.Logf("topic equals the table (%d rows) with %d change records, %v in all", len(table), n, time.Since(start))
	ddl := e.b.ReadAll("srv.schema-changes")
	if len(ddl) != 3 {
		t.Errorf("schema-change topic has %d records, want 3", len(ddl))
	}

	// The index: the sink commits only what the server has stored, so
	// once it has committed the whole topic the index is complete.
	testbroker.CheckFor(t, 120*time.Second, func() error {
		if done, end := sg.progress(); done < end {
			return fmt.Errorf("sink group %s committed %d of %d topic records", sg.group, done, end)
		}
		return nil
	})
	testbroker.CheckFor(t, 60*time.Second, func() error {
		docs, err := searchDocs(es.URL, index)
		if err != nil {
			return err
		}
		return equalIndex(docs, table, "id", "f")
	})
	t.Logf("index equals the table (%d rows), %v in all", len(table), time.Since(start))
	if dl := e.b.ReadAll(deadletter.Topic("search")); len(dl) != 0 {
		t.Errorf("%d records in the sink's dead-letter topic, want none", len(dl))
	}
}

func (w *workload) runWithDrop(e *env, seed int64) error {
	// Split the run at the DROP COLUMN so inserts stop naming f.
	dropAt := -1
	for k, q := range w.ddl {
		if strings.Contains(q, "DROP COLUMN f") {
			dropAt = k
		}
	}
	total := w.ops
	w.ops = dropAt
	if err := w.run(e, seed); err != nil {
		return err
	}
	dropped.Store(true)
	w.ops = total
	rest := &workload{ops: total - dropAt, nextID: w.nextID, live: w.live, hasG: w.hasG, ddl: map[int]string{}}
	for k, q := range w.ddl {
		rest.ddl[k-dropAt] = q
	}
	base := w.progress.Load()
	baseRecs, baseTombs := w.records.Load(), w.tombs.Load()
	errc := make(chan error, 1)
	go func() { errc <- rest.run(e, seed+1) }()
	for {
		select {
		case err := <-errc:
			w.progress.Store(base + rest.progress.Load())
			w.records.Store(baseRecs + rest.records.Load())
			w.tombs.Store(baseTombs + rest.tombs.Load())
			return err
		case <-time.After(20 * time.Millisecond):
			w.progress.Store(base + rest.progress.Load())
			w.records.Store(baseRecs + rest.records.Load())
			w.tombs.Store(baseTombs + rest.tombs.Load())
		}
	}
}
