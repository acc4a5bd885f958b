package mysql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/elasticsearch"
	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/schemas"
)

// gatedSource holds Poll once the source is deep inside a large
// transaction (a record whose position has emitted at least gateSkip of
// its records), until the test opens the gate: the test kills the
// primary while the source is mid-transaction and mid-stream.
type gatedSource struct {
	*Source
	gateSkip int
	reached  chan struct{}
	open     chan struct{}
	once     sync.Once
}

func (g *gatedSource) Poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	n := len(buf)
	buf, err := g.Source.Poll(ctx, buf)
	for _, r := range buf[n:] {
		p, perr := decodePosition(r.Position)
		if perr == nil && p.Skip >= g.gateSkip {
			g.once.Do(func() { close(g.reached) })
			select {
			case <-g.open:
			case <-ctx.Done():
			}
			break
		}
	}
	return buf, err
}

// TestFailover: a source configured with a MariaDB primary and its GTID
// replica (hosts) streams from the primary; the primary is killed (-9)
// while the source is in the middle of a 20,000-row transaction; the
// source continues from the replica (promoted, taking writes) at the last
// record it delivered. The topic must replay to the replica's table with
// every change exactly once (exact record count, each key's chain of
// before images, no (transaction, tx_seq) twice, versions never going
// down), and the search index fed by the Elasticsearch CDC sink, which
// uses weir.cdc.version as an external version, must equal the table.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("slow end-to-end test")
	}
	start := time.Now()
	es := searchtest.Shared(t, searchtest.Elasticsearch7)
	t.Logf("search server up %v in", time.Since(start).Round(time.Millisecond))
	pair := mysqltest.StartPair(t)
	t.Logf("primary and replica up %v in", time.Since(start).Round(time.Millisecond))
	// The primary's binlog file numbers run ahead of the replica's, as on
	// real servers: versions from file numbers would go down at the
	// failover.
	pair.Primary.Exec(t, "", "FLUSH BINARY LOGS", "FLUSH BINARY LOGS")
	b := testbroker.Start(t)
	reg := b.Registry(t)
	cl, err := sr.NewClient(sr.URLs(reg))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: pair.Primary, name: pair.Primary.NewDatabase(t), b: b, reg: reg, serde: schemas.NewSerde(srclient.Source(cl))}
	const rows, bigRows = 20000, 20000
	e.exec(`CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40), c DECIMAL(10,2), d DATETIME,
		e BIGINT, f VARCHAR(20), pad VARCHAR(2000) NOT NULL DEFAULT '')`,
		fmt.Sprintf(`INSERT INTO t (id, a, b, c, d, e, f) SELECT seq, seq %% 1000, CONCAT('row-', seq), seq / 100,
		'2024-01-01 00:00:00' + INTERVAL seq SECOND, seq * 1000, 'f' FROM seq_1_to_%d`, rows))
	e.b.CreateTopic(e.topic("t"), 3, nil)
	index := fmt.Sprintf("weir-mysql-failover-%d", time.Now().UnixNano())
	es.MustDo(t, "PUT", "/"+index, []byte(`{"settings":{"number_of_shards":1,"number_of_replicas":0,"index.gc_deletes":"1h",
		"refresh_interval":"-1","translog.durability":"async"},"mappings":{"dynamic":false}}`))

	cfg := e.config("failover")
	cfg.Hosts = []string{pair.Primary.Addr(), pair.Replica.Addr()}
	cfg.ConnectTimeout = 2 * time.Second
	src := &gatedSource{Source: New(cfg), gateSkip: 1000, reached: make(chan struct{}), open: make(chan struct{})}
	core, logs := observer.New(zap.InfoLevel)
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, Logger: zap.New(core)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	errc := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		errc <- rt.RunSource(ctx, cfg.Name, src, connectors.SourceOptions{Topic: "unused-" + cfg.Name})
	}()
	scfg := elasticsearch.Defaults()
	scfg.URLs, scfg.Index, scfg.CDC, scfg.SchemaRegistryURL = []string{es.URL}, index, true, e.reg
	scfg.FlushInterval = 200 * time.Millisecond
	go func() {
		defer wg.Done()
		errc <- rt.RunSink(ctx, "failover-search", elasticsearch.NewSink(scfg), connectors.SinkOptions{Topics: []string{e.topic("t")},
			Group: "failover-search", FlushInterval: 500 * time.Millisecond})
	}()
	taskFailed := func() error {
		select {
		case err := <-errc:
			errc <- err
			return fmt.Errorf("a task stopped: %v", err)
		default:
			return nil
		}
	}
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if err := taskFailed(); err != nil {
			t.Fatal(err)
		}
		if !src.snapDone() {
			return fmt.Errorf("snapshot not finished")
		}
		return nil
	})

	t.Logf("snapshot done %v in", time.Since(start).Round(time.Millisecond))
	// On the primary: random changes, then one transaction rewriting
	// every row with a 1,500-byte pad (about 30 MB of binlog, more than
	// the source and the sockets buffer).
	w := &workload{ops: 1500, nextID: rows + 1}
	for i := 1; i <= rows; i++ {
		w.live = append(w.live, i)
	}
	if err := w.run(e, 11); err != nil {
		t.Fatalf("workload on the primary: %v", err)
	}
	t.Logf("workload on the primary done %v in", time.Since(start).Round(time.Millisecond))
	e.exec("UPDATE t SET pad = REPEAT(CHAR(65 + id % 26), 1500)")
	t.Logf("large transaction committed %v in", time.Since(start).Round(time.Millisecond))
	big := len(w.live)
	select {
	case <-src.reached:
	case <-time.After(120 * time.Second):
		t.Fatalf("the source did not reach record %d of the large transaction within 120s", src.gateSkip)
	}
	// Every transaction the source will deliver is on the replica (with
	// asynchronous replication, what the replica never received is lost
	// with the primary, for every reader); then the primary dies.
	pair.CaughtUp(t, 60*time.Second)
	pair.Primary.Kill()
	pair.Promote(t)
	killed := time.Now()
	t.Logf("primary killed (-9) %v in, with the source held inside the %d-row transaction", time.Since(start).Round(time.Millisecond), big)
	close(src.open)

	// On the promoted replica: more changes while the source fails over.
	e.db = pair.Replica
	w.ops = 1500
	if err := w.run(e, 12); err != nil {
		t.Fatalf("workload on the replica: %v", err)
	}
	t.Logf("workload on the replica done %v after the kill", time.Since(killed).Round(time.Millisecond))
	table := e.tableRows("t", "id")
	want := rows + int(w.records.Load()) + big
	var state map[string]map[string]string
	var n, tombs int
	testbroker.CheckFor(t, 180*time.Second, func() error {
		if err := taskFailed(); err != nil {
			t.Fatal(err)
		}
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
		t.Errorf("topic holds %d change records and %d tombstones, want exactly %d and %d", n, tombs, want, w.tombs.Load())
	}
	e.checkOnce(e.topic("t"))
	t.Logf("topic equals the replica's table (%d rows, %d change records) %v after the kill", len(table), n, time.Since(killed).Round(time.Millisecond))

	// The source moved to the replica and resumed inside the large
	// transaction, by GTID.
	var resumed string
	for _, l := range logs.FilterMessage("binlog streaming started").All() {
		ctx := l.ContextMap()
		if ctx["server"] == pair.Replica.Addr() {
			resumed = fmt.Sprint(ctx["position"])
		}
	}
	if resumed == "" {
		t.Fatalf("the source never streamed from the replica %s", pair.Replica.Addr())
	}
	if !strings.Contains(resumed, " records") || !strings.Contains(resumed, "gtid") {
		t.Errorf("the source resumed on the replica at %s, want a GTID position inside the large transaction", resumed)
	}
	if got := logs.FilterMessage("server unreachable; failing over to the next server in hosts").Len(); got != 1 {
		t.Errorf("%d failovers logged, want 1", got)
	}
	t.Logf("resumed on the replica at %s", resumed)

	g := &sinkGroup{t: t, adm: kadm.NewClient(e.b.Client()), group: "failover-search", topic: e.topic("t")}
	testbroker.CheckFor(t, 120*time.Second, func() error {
		if err := taskFailed(); err != nil {
			t.Fatal(err)
		}
		if done, end := g.progress(); done < end {
			return fmt.Errorf("sink group committed %d of %d topic records", done, end)
		}
		return nil
	})
	testbroker.CheckFor(t, 60*time.Second, func() error {
		docs, err := searchDocs(es.URL, index)
		if err != nil {
			return err
		}
		return equalIndex(docs, table, "id")
	})
	if dl := e.b.ReadAll(deadletter.Topic("failover-search")); len(dl) != 0 {
		t.Errorf("%d records in the sink's dead-letter topic, want none", len(dl))
	}
	t.Logf("index equals the replica's table (%d rows), %v in all", len(table), time.Since(start).Round(time.Millisecond))
}

// checkOnce fails the test when two change records of topic name the
// same transaction and record index (source.txid, source.tx_seq): a
// change delivered twice.
func (e *env) checkOnce(topic string) {
	e.t.Helper()
	seen := map[string]int64{}
	first := map[string]rec{}
	dups := 0
	for _, r := range e.b.ReadAll(topic) {
		if r.Value == nil {
			continue
		}
		d := e.decode(r)
		if d.op == "r" {
			continue // snapshot reads: no transaction
		}
		k := fmt.Sprintf("%v#%v", d.source["txid"], d.source["tx_seq"])
		if off, ok := seen[k]; ok {
			if dups++; dups <= 5 {
				e.t.Errorf("%s: record %s at offsets %d and %d of partition %d: %v %v %v / %v %v %v", topic, k, off, r.Offset, r.Partition,
					first[k].op, first[k].key, first[k].source, d.op, d.key, d.source)
			}
		}
		seen[k] = r.Offset
		first[k] = d
	}
	if dups > 0 {
		e.t.Errorf("%d changes delivered twice", dups)
	}
}
