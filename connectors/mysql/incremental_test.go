package mysql

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/elasticsearch"
	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/kafkaclient"
)

func TestIncPositionEncoding(t *testing.T) {
	for _, p := range []Position{
		{File: "mysql-bin.000003", Pos: 77, GTID: "0-1-5", Inc: &IncPos{Tables: []string{"d.t", "d.ü\"x"}}},
		{File: "mysql-bin.000003", Pos: 77, Skip: 2, Inc: &IncPos{Tables: []string{"d.t"}, Key: [][]byte{[]byte("42"), {0, 0xfe}}}},
	} {
		want := marshalNoHTML(t, p)
		if got := p.encode(); string(got) != string(want) {
			t.Errorf("encode = %s\nwant     %s", got, want)
		}
		back, err := decodePosition(p.encode())
		if err != nil || back.String() != p.String() || fmt.Sprint(back.Inc.Key) != fmt.Sprint(p.Inc.Key) {
			t.Errorf("round trip of %s: %v %v", p, back, err)
		}
	}
}

func TestParseSignal(t *testing.T) {
	for _, tc := range []struct{ data, err string }{
		{`{"data-collections": ["db.t", "db.p*"], "type": "incremental"}`, ""},
		{`{"data-collections": ["db.t"], "type": "INCREMENTAL", "source": "shop"}`, ""},
		{`{"data-collections": ["db.t"]}`, ""},
		{`{"data-collections": ["db.t"], "type": "blocking"}`, `snapshot type "blocking": only incremental`},
		{`{"data-collections": ["db.["]}`, `bad table pattern "db.["`},
		{`db.t`, `data "db.t" is not a JSON object`},
		{`{"data-collections": "db.t"}`, `is not a JSON object`},
	} {
		_, err := parseSignal(tc.data)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("parseSignal(%s) = %v, want error containing %q", tc.data, err, tc.err)
		}
	}
}

func FuzzParseSignal(f *testing.F) {
	f.Add(`{"data-collections": ["db.t", "db.p*"], "type": "incremental"}`)
	f.Add(`{"data-collections": ["db.["], "source": "x"}`)
	f.Fuzz(func(t *testing.T, data string) {
		d, err := parseSignal(data)
		if err != nil {
			return
		}
		for _, p := range d.Collections {
			matchAny([]string{p}, "db.t") // patterns that parse must match without error
		}
	})
}

func FuzzDecodePosition(f *testing.F) {
	f.Add([]byte(`{"f":"mysql-bin.000003","p":77,"g":"0-1-5","i":{"t":["d.t"],"k":["NDI="]}}`))
	f.Add([]byte(`{"f":"b.1","p":5,"s":{"t":"d.t","k":["AAH/"],"d":true}}`))
	f.Add([]byte(`{"f":"mysql-bin.000003","p":4,"g":"0-1-7","s":{"t":"d.u","k":["MTA="]},"w":[{"f":"mysql-bin.000003","p":900,"g":"0-1-9","t":"d.s","k":["bTE="]},{"f":"mysql-bin.000004","p":4,"t":"d.t","d":true}]}`))
	f.Add([]byte(`{"f":"b.1","p":5,"n":2,"w":[{"f":"b.2","p":7,"t":"d.k"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePosition(b)
		if err != nil {
			return
		}
		back, err := decodePosition(p.encode())
		if err != nil {
			t.Fatalf("%s decodes, its encoding %s does not: %v", b, p.encode(), err)
		}
		if string(back.encode()) != string(p.encode()) {
			t.Fatalf("round trip of %s: %s then %s", b, p.encode(), back.encode())
		}
	})
}

// incEnv prepares e's database for incremental snapshots: the cdc user
// may create and write the signal table there.
func incEnv(t testing.TB) *env {
	e := newEnv(t)
	e.exec(fmt.Sprintf("GRANT CREATE, INSERT, UPDATE ON `%s`.* TO '%s'@'%%'", e.name, mysqltest.CDCUser))
	return e
}

func (e *env) incConfig(name string) Config {
	cfg := e.config(name)
	cfg.SignalTable = e.name + ".weir_signal"
	cfg.IncrementalChunkRows = 1000
	cfg.SnapshotAddedTables = true
	return cfg
}

// opCounter counts the records of a topic by their weir.cdc.op header
// and keeps the highest id (key column) of an "r".
type opCounter struct {
	cl     *kgo.Client
	counts [256]atomic.Int64
	maxR   atomic.Int64
	cancel context.CancelFunc
}

func countOps(t testing.TB, e *env, topic string) *opCounter {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.b.Addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	oc := &opCounter{cl: cl, cancel: cancel}
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key == HeaderOp && len(h.Value) == 1 && r.Value != nil {
						oc.counts[h.Value[0]].Add(1)
						if h.Value[0] != 'r' {
							continue
						}
						if _, k, err := e.serde.Decode(ctx, r.Key); err == nil {
							if id, ok := k.(map[string]any)["id"].(int32); ok && int64(id) > oc.maxR.Load() {
								oc.maxR.Store(int64(id))
							}
						}
					}
				}
			})
		}
	}()
	t.Cleanup(func() { cancel(); cl.Close() })
	return oc
}

func (oc *opCounter) n(op byte) int64 { return oc.counts[op].Load() }

// passed waits until an "r" of a key above id arrived: the incremental
// snapshot read every row up to id (chunks go in key order).
func (oc *opCounter) passed(t *testing.T, id int64, timeout time.Duration) {
	t.Helper()
	testbroker.CheckFor(t, timeout, func() error {
		if m := oc.maxR.Load(); m <= id {
			return fmt.Errorf("the highest key read is %d, want one above %d", m, id)
		}
		return nil
	})
}

// replayInc replays a table topic in which incremental snapshots wrote
// "r" records over keys already there. It checks what replay checks,
// and that an "r" of a key that has a row equals that row (the snapshot
// read no older or newer state than the changes around it). lenient:
// updates and deletes of keys without a row are taken as they come (a
// table added to capture: its changes stream before the snapshot
// reaches their keys). It returns the final state and the number of
// records with source.snapshot "incremental".
func (e *env) replayInc(topic string, lenient bool) (map[string]map[string]string, int) {
	e.t.Helper()
	rs := e.b.ReadAll(topic)
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Partition != rs[j].Partition {
			return rs[i].Partition < rs[j].Partition
		}
		return rs[i].Offset < rs[j].Offset
	})
	state := map[string]map[string]string{}
	lastVer := map[string]int64{}
	errs, inc := 0, 0
	fail := func(r *kgo.Record, format string, args ...any) {
		errs++
		if errs <= 10 {
			e.t.Errorf("%s/%d@%d: %s", r.Topic, r.Partition, r.Offset, fmt.Sprintf(format, args...))
		}
	}
	for _, r := range rs {
		d := e.decode(r)
		k := fmt.Sprint(d.key)
		var ver int64
		fmt.Sscan(d.ver, &ver)
		if ver < lastVer[k] {
			fail(r, "key %s: version %d after %d", k, ver, lastVer[k])
		}
		lastVer[k] = ver
		if d.tomb {
			continue
		}
		cur, exists := state[k]
		switch d.op {
		case "r":
			if d.source["snapshot"] == "incremental" {
				inc++
			}
			if exists {
				if diff := diffCommon(cur, flat(d.after)); diff != "" {
					fail(r, "snapshot read of key %s differs from the key's state (out of order): %s", k, diff)
				}
			}
			state[k] = flat(d.after)
		case "c":
			if exists {
				fail(r, "create of key %s, which already has row %v (duplicate)", k, cur)
			}
			state[k] = flat(d.after)
		case "u", "d":
			if !exists && !lenient {
				fail(r, "op %s for key %s, which has no row (a change was missed)", d.op, k)
			} else if exists {
				if diff := diffCommon(cur, flat(d.before)); diff != "" {
					fail(r, "op %s for key %s: before image differs from the key's state: %s", d.op, k, diff)
				}
			}
			if d.op == "u" {
				state[k] = flat(d.after)
			} else {
				delete(state, k)
			}
		}
	}
	return state, inc
}

// incSearch is a source in a child process (killable) capturing table t
// and an Elasticsearch CDC sink (in the test process) from its topic.
type incSearch struct {
	e     *env
	es    *searchtest.Server
	index string
	sg    *sinkGroup
	cc    childConfig
}

func newIncSearch(t *testing.T, e *env, name string) *incSearch {
	es := searchtest.Shared(t, searchtest.Elasticsearch7)
	e.b.CreateTopic(e.topic("t"), 3, nil)
	index := fmt.Sprintf("weir-mysql-inc-%s-%d", name, time.Now().UnixNano())
	es.MustDo(t, "PUT", "/"+index, []byte(`{"settings":{"number_of_shards":1,"number_of_replicas":0,"index.gc_deletes":"1h",
		"refresh_interval":"-1","translog.durability":"async"},"mappings":{"dynamic":false}}`))
	sg := &sinkGroup{t: t, adm: kadm.NewClient(e.b.Client()), group: "inc-" + name, instance: "inc-" + name + "-1", topic: e.topic("t")}
	return &incSearch{e: e, es: es, index: index, sg: sg, cc: childConfig{Broker: e.b.Addr, Config: e.incConfig(name)}}
}

// startSink starts the sink at the end of the topic: the index gets
// only what the source writes from now on, so it can equal the table
// only if a re-snapshot delivers every row the changes do not.
func (is *incSearch) startSink(t *testing.T) {
	cfg := elasticsearch.Defaults()
	cfg.URLs, cfg.Index, cfg.CDC, cfg.SchemaRegistryURL = []string{is.es.URL}, is.index, true, is.e.reg
	cfg.FlushInterval = 200 * time.Millisecond
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{is.e.b.Addr}}, Logger: zap.NewNop()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- rt.RunSink(ctx, "search-"+is.sg.group, elasticsearch.NewSink(cfg), connectors.SinkOptions{Topics: []string{is.sg.topic},
			Group: is.sg.group, InstanceID: is.sg.instance, FlushInterval: 300 * time.Millisecond, StartAtEnd: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sink: %v", err)
		}
	})
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if state, id, n, err := is.sg.describe(); err != nil || state != "Stable" || id == "" || n != 3 {
			return fmt.Errorf("sink group %s: %s, member %q with %d of 3 partitions (%v)", is.sg.group, state, id, n, err)
		}
		return nil
	})
}

// equal waits until the topic replays to the table and the index equals
// it, and returns the number of incremental snapshot records.
func (is *incSearch) equal(t *testing.T, timeout time.Duration) int {
	e := is.e
	table := e.tableRows("t", "id")
	var inc int
	start := time.Now()
	testbroker.CheckFor(t, timeout, func() error {
		var state map[string]map[string]string
		state, inc = e.replayInc(e.topic("t"), false)
		if t.Failed() {
			t.FailNow()
		}
		return compareState(t, state, table)
	})
	t.Logf("topic replays to the table after %v", time.Since(start).Round(time.Millisecond))
	testbroker.CheckFor(t, timeout, func() error {
		if done, end := is.sg.progress(); done < end {
			return fmt.Errorf("sink group %s committed %d of %d topic records", is.sg.group, done, end)
		}
		return nil
	})
	t.Logf("sink caught up after %v", time.Since(start).Round(time.Millisecond))
	testbroker.CheckFor(t, timeout, func() error {
		docs, err := searchDocs(is.es.URL, is.index)
		if err != nil {
			return err
		}
		return equalIndex(docs, table, "id")
	})
	return inc
}

// TestIncrementalSnapshotUnderLoad: a 20,000-row table is captured
// (initial snapshot, then streaming) by a source in a child process. An
// Elasticsearch sink starts at the end of the topic (an empty index, as
// after losing it); with a writer changing the table at 10,000 row
// changes per second (updates, inserts, deletes, primary key changes),
// `weir connector snapshot`'s signal re-snapshots the table
// incrementally (chunks of 500 rows between watermarks). At the end the
// index equals the table, and the topic replays to it with every
// snapshot read in order with the changes of its key. The writer
// (loadWriter: four connections, multi-row statements) reaches 10,000
// changes/s on a quiet machine; the rate sustained while the snapshot
// runs is BenchmarkIncrementalSnapshotUnderLoad's figure.
func TestIncrementalSnapshotUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("slow end-to-end test")
	}
	e := incEnv(t)
	const rows = 20000
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40))",
		fmt.Sprintf("INSERT INTO t SELECT seq, 0, 'init' FROM seq_1_to_%d", rows))
	is := newIncSearch(t, e, "load")
	is.cc.Config.IncrementalChunkRows = 500
	startChild(t, is.cc, "child.log")
	ops := countOps(t, e, e.topic("t"))
	e.waitRecords(e.topic("t"), rows, 60*time.Second)
	is.startSink(t)
	w := startLoad(e, 10000)
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if n := w.changes.Load(); n < 10000 {
			return fmt.Errorf("load at %d changes", n)
		}
		return nil
	})
	start, before := time.Now(), w.changes.Load()
	id, err := New(is.cc.Config).RequestSnapshot(context.Background(), []string{e.name + ".t"}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("signal %s written; %d r records before it", id, ops.n('r'))
	// Keep the load on until the snapshot read every original row (the
	// rest are rows the load inserted), for at most 20 s (200,000
	// changes): on a machine too loaded for the source to keep up, the
	// rest of the snapshot runs after the load, and the backlog stays
	// bounded (the rate belongs to BenchmarkIncrementalSnapshotUnderLoad,
	// not to this test). A quiet machine passes within a few seconds.
	for deadline := time.Now().Add(20 * time.Second); ops.maxR.Load() <= rows && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // polling the condition
	}
	passed := ops.maxR.Load() > rows
	el, n := time.Since(start), w.changes.Load()-before
	w.finish(t)
	if passed {
		t.Logf("load: %d row changes in the %v the snapshot took to pass the original rows (%.0f/s)", n, el.Round(time.Millisecond),
			float64(n)/el.Seconds())
	} else {
		t.Logf("load: %d row changes in %v (%.0f/s); the snapshot had not passed the original rows then (machine too loaded), it goes on without load",
			n, el.Round(time.Millisecond), float64(n)/el.Seconds())
		ops.passed(t, rows, 5*time.Minute)
	}
	inc := is.equal(t, 5*time.Minute)
	t.Logf("index and topic equal the table; %d incremental snapshot records; %v after the signal", inc, time.Since(start).Round(time.Millisecond))
	if inc == 0 {
		t.Error("no incremental snapshot records")
	}
}

// TestIncrementalSnapshotRestart: the child running the source is killed
// with SIGKILL in the middle of an incremental snapshot (changes keep
// coming) and restarted; the snapshot resumes from the last acknowledged
// chunk (not from the start) and finishes: the index, fed from the end
// of the topic, equals the table.
func TestIncrementalSnapshotRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("slow end-to-end test")
	}
	e := incEnv(t)
	const rows = 20000
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40))",
		fmt.Sprintf("INSERT INTO t SELECT seq, 0, 'init' FROM seq_1_to_%d", rows))
	is := newIncSearch(t, e, "restart")
	is.cc.Config.IncrementalChunkRows = 200
	c1 := startChild(t, is.cc, "child1.log")
	ops := countOps(t, e, e.topic("t"))
	e.waitRecords(e.topic("t"), rows, 60*time.Second)
	is.startSink(t)
	w := startLoad(e, 2000)
	if _, err := New(is.cc.Config).RequestSnapshot(context.Background(), []string{e.name + ".t"}, false); err != nil {
		t.Fatal(err)
	}
	base := ops.n('r')
	testbroker.CheckFor(t, 120*time.Second, func() error {
		if n := ops.n('r') - base; n < rows*4/10 {
			return fmt.Errorf("%d incremental snapshot records of %d rows", n, rows)
		}
		return nil
	})
	c1.kill()
	before := ops.n('r') - base
	t.Logf("killed (-9) after %d incremental snapshot records", before)
	startChild(t, is.cc, "child2.log")
	ops.passed(t, rows, 120*time.Second)
	w.finish(t)
	inc := is.equal(t, 120*time.Second)
	t.Logf("index and topic equal the table; %d incremental snapshot records (%d before the kill)", inc, before)
	// Resumed, not started over: a restart from the first key would read
	// at least the `before` rows twice.
	if inc >= rows+int(before)*3/4 {
		t.Errorf("%d incremental snapshot records for %d rows with %d before the kill: the snapshot started over", inc, rows, before)
	}
}

// TestIncrementalSnapshotAddedTable: a source capturing t1 is stopped,
// t2 is added to include_tables, and the restarted source snapshots t2
// incrementally (snapshot_added_tables) while t2 is being changed; its
// topic replays to the table.
func TestIncrementalSnapshotAddedTable(t *testing.T) {
	if testing.Short() {
		t.Skip("slow end-to-end test")
	}
	e := incEnv(t)
	const rows = 20000
	e.exec("CREATE TABLE t1 (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO t1 SELECT seq, 0 FROM seq_1_to_100",
		"CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40))",
		fmt.Sprintf("INSERT INTO t SELECT seq, 0, 'init' FROM seq_1_to_%d", rows))
	cfg := e.incConfig("added")
	cfg.IncludeTables = []string{e.name + ".t1"}
	r := e.run(cfg)
	e.waitRecords(e.topic("t1"), 100, 60*time.Second)
	w := startLoad(e, 3000)
	e.exec("UPDATE t1 SET v = 1 WHERE id = 1")
	e.waitRecords(e.topic("t1"), 101, 60*time.Second)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	cfg.IncludeTables = append(cfg.IncludeTables, e.name+".t")
	e.run(cfg)
	// A malformed signal is logged and ignored; the stream goes on.
	e.exec(`INSERT INTO weir_signal VALUES ('bad-1', 'execute-snapshot', 'not json'), ('bad-2', 'execute-snapshot', '{"data-collections": ["["]}')`)
	testbroker.CheckFor(t, 120*time.Second, func() error {
		if n := len(e.b.ReadAll(e.topic("t"))); n < rows {
			return fmt.Errorf("%s has %d records", e.topic("t"), n)
		}
		return nil
	})
	w.finish(t)
	table := e.tableRows("t", "id")
	var inc int
	testbroker.CheckFor(t, 120*time.Second, func() error {
		var state map[string]map[string]string
		state, inc = e.replayInc(e.topic("t"), true)
		if t.Failed() {
			t.FailNow()
		}
		return compareState(t, state, table)
	})
	t.Logf("topic of the added table equals it (%d rows); %d incremental snapshot records", len(table), inc)
	if inc == 0 {
		t.Error("no incremental snapshot records")
	}
	sig := e.db.Query(t, e.name, "SELECT COUNT(*) FROM weir_signal WHERE type = 'execute-snapshot' AND id LIKE 'weir-%'")
	if sig[0][0] != "1" {
		t.Errorf("%s execute-snapshot signals written by the source, want 1", sig[0][0])
	}
}
