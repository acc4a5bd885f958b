// Package cdces_test checks the mysql-cdc-to-es example: the pipeline
// validates, and it runs end to end against a real MariaDB (started by
// connectors/mysql/mysqltest) and a real Elasticsearch 7.17 (started by
// connectors/elasticsearch/searchtest) with an in-process weir broker.
package cdces_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	_ "weir/connectors/elasticsearch"
	"weir/connectors/elasticsearch/searchtest"
	_ "weir/connectors/mysql"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/kafkaclient"
	"weir/pipelines"
)

func TestMain(m *testing.M) {
	code := m.Run()
	searchtest.StopShared()
	mysqltest.Stop()
	os.Exit(code)
}

func TestPipelineValidates(t *testing.T) {
	cfg, diags := pipelines.Load([]string{"."}, pipelines.Options{})
	if diags.HasErrors() {
		for _, d := range diags {
			t.Error(pipelines.DiagLine(d))
		}
		t.FailNow()
	}
	if len(cfg.Sources) != 1 || cfg.Sources[0].Kind != "mysql" || len(cfg.Sinks) != 2 || cfg.Sinks[0].Kind != "elasticsearch" {
		t.Fatalf("unexpected pipeline: %d sources, %d sinks", len(cfg.Sources), len(cfg.Sinks))
	}
}

type env struct {
	t      testing.TB
	db     *mysqltest.Server
	dbName string
	esURL  string
	index  string
	broker *testbroker.Broker
	reg    string
	dir    string
}

func (e *env) run(group string) *pipelines.Runner {
	e.t.Helper()
	cfg, diags := pipelines.Load([]string{e.dir}, pipelines.Options{
		Vars: []string{"elasticsearch_url=" + e.esURL, "index_prefix=" + e.index, "database=" + e.dbName,
			"mysql_host=" + e.db.Host, "mysql_port=" + strconv.Itoa(e.db.Port),
			"mysql_user=" + mysqltest.CDCUser, "mysql_password=" + mysqltest.CDCPassword, "sink_group=" + group},
		SchemaRegistryURL: e.reg, Brokers: []string{e.broker.Addr}})
	if diags.HasErrors() {
		e.t.Fatal(diags)
	}
	r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{e.broker.Addr}}, SchemaRegistry: e.reg, Logger: zap.NewNop()})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := r.Apply(context.Background(), cfg); err != nil {
		r.Stop()
		e.t.Fatal(err)
	}
	return r
}

// table returns the rows of a table as _id → column → text; the id is
// the primary key's columns joined with "|".
func (e *env) table(table string) map[string]map[string]string {
	cols, pk := []string{"id", "email", "name", "qty", "balance"}, 1
	if table == "order_lines" {
		cols, pk = []string{"order_id", "line", "sku", "qty"}, 2
	}
	rows := e.db.Query(e.t, e.dbName, "SELECT "+strings.Join(cols, ", ")+" FROM "+table)
	out := map[string]map[string]string{}
	for _, r := range rows {
		m := map[string]string{}
		for i, c := range cols {
			m[c] = r[i]
		}
		out[strings.Join(r[:pk], "|")] = m
	}
	return out
}

type hit struct {
	ID      string         `json:"_id"`
	Version int64          `json:"_version"`
	Source  map[string]any `json:"_source"`
}

// search returns every document of the index (refreshed first).
func (e *env) search(index string) (map[string]hit, error) {
	url := e.esURL + "/" + e.index + "-" + index
	if resp, err := http.Post(url+"/_refresh", "application/json", nil); err == nil {
		resp.Body.Close()
	}
	resp, err := http.Post(url+"/_search?size=10000&version=true", "application/json", strings.NewReader(`{"query":{"match_all":{}}}`))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("search: %s: %s", resp.Status, body)
	}
	var res struct{ Hits struct{ Hits []hit } }
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&res); err != nil {
		return nil, err
	}
	out := map[string]hit{}
	for _, h := range res.Hits.Hits {
		out[h.ID] = h
	}
	return out, nil
}

// equal reports how the index differs from the table (nil: same ids, same
// column values).
func (e *env) equal() error {
	if err := e.equalTable("customers", "customers"); err != nil {
		return err
	}
	return e.equalTable("order_lines", "order-lines")
}

func (e *env) equalTable(table, index string) error {
	want := e.table(table)
	got, err := e.search(index)
	if err != nil {
		return err
	}
	var diffs []string
	for id, row := range want {
		h, ok := got[id]
		if !ok {
			diffs = append(diffs, "row "+id+" has no document")
			continue
		}
		for col, v := range row {
			if s := fmt.Sprint(h.Source[col]); s != v {
				diffs = append(diffs, fmt.Sprintf("document %s: %s = %q, table has %q", id, col, s, v))
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			diffs = append(diffs, "document "+id+" has no row (deleted rows must be absent)")
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		if len(diffs) > 10 {
			diffs = append(diffs[:10], fmt.Sprintf("... %d differences", len(diffs)))
		}
		return fmt.Errorf("index %s (%d docs) != table %s (%d rows):\n%s", index, len(got), table, len(want), strings.Join(diffs, "\n"))
	}
	return nil
}

// TestEndToEnd: a table with rows is snapshotted into the index; inserts,
// updates, primary-key updates and deletes follow through the binlog; the
// index equals the table. Then a second sink group replays the topic from
// the beginning: the index stays equal to the table and no document's
// version moves (external versions from the binlog position).
func TestEndToEnd(t *testing.T) {
	db := mysqltest.Shared(t)
	es := searchtest.Shared(t, searchtest.Elasticsearch7)
	b := testbroker.Start(t)
	e := &env{t: t, db: db, dbName: db.NewDatabase(t), esURL: es.URL, broker: b, reg: b.Registry(t), dir: t.TempDir(),
		index: fmt.Sprintf("weir-cdc-example-%d", time.Now().UnixNano())}
	src, err := os.ReadFile("pipeline.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "pipeline.hcl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	// The index keeps delete versions for an hour (default 60s), as the
	// README advises for CDC indices.
	es.MustDo(t, "PUT", "/"+e.index+"-customers", []byte(`{"settings":{"index.gc_deletes":"1h","number_of_replicas":0},
		"mappings":{"properties":{"balance":{"type":"keyword"}}}}`))
	es.MustDo(t, "PUT", "/"+e.index+"-order-lines", []byte(`{"settings":{"index.gc_deletes":"1h","number_of_replicas":0}}`))

	e.db.Exec(t, e.dbName, `CREATE TABLE customers (id INT PRIMARY KEY, email VARCHAR(100) NOT NULL,
		name VARCHAR(100), qty INT NOT NULL, balance DECIMAL(10,2) NOT NULL)`)
	var ins []string
	for i := 1; i <= 300; i++ {
		ins = append(ins, fmt.Sprintf("(%d,'c%d@example.com','name %d',%d,%d.%02d)", i, i, i, i%7, i*3, i%100))
	}
	e.db.Exec(t, e.dbName, "INSERT INTO customers VALUES "+strings.Join(ins, ","))
	e.db.Exec(t, e.dbName, `CREATE TABLE order_lines (order_id INT, line INT, sku VARCHAR(20) NOT NULL, qty INT NOT NULL,
		PRIMARY KEY (order_id, line))`)
	ins = ins[:0]
	for o := 1; o <= 40; o++ {
		for l := 1; l <= 3; l++ {
			ins = append(ins, fmt.Sprintf("(%d,%d,'sku-%d|%d',%d)", o, l, o, l, o*l))
		}
	}
	e.db.Exec(t, e.dbName, "INSERT INTO order_lines VALUES "+strings.Join(ins, ","))

	r := e.run("weir-sink-search")
	testbroker.CheckFor(t, 90*time.Second, func() error {
		if err := e.equal(); err != nil {
			return fmt.Errorf("after the snapshot: %w (status %v)", err, r.Status())
		}
		return nil
	})

	// Changes through the binlog: inserts, updates, PK updates, deletes,
	// some of them on the same rows in one transaction.
	e.db.Exec(t, e.dbName,
		"INSERT INTO customers VALUES (1001,'new1@example.com','new one',1,1.00),(1002,'new2@example.com',NULL,2,2.50)",
		"UPDATE customers SET qty = qty + 10, name = CONCAT(name, ' (updated)') WHERE id % 10 = 0",
		"UPDATE customers SET id = id + 5000 WHERE id IN (5, 6, 7)", // primary-key change: delete old id, create new
		"DELETE FROM customers WHERE id % 25 = 0",
		"BEGIN",
		"INSERT INTO customers VALUES (2000,'tx@example.com','in tx',3,3.30)",
		"UPDATE customers SET balance = 99.99 WHERE id = 2000",
		"DELETE FROM customers WHERE id = 1002",
		"UPDATE customers SET id = 2001 WHERE id = 2000",
		"COMMIT",
		"DELETE FROM customers WHERE id = 1001",
		"INSERT INTO customers VALUES (1001,'again@example.com','re-created',4,4.00)",
		"INSERT INTO order_lines VALUES (41,1,'new',1),(41,2,'new',2)",
		"UPDATE order_lines SET qty = qty * 2 WHERE order_id % 3 = 0",
		"UPDATE order_lines SET line = line + 10 WHERE order_id = 2", // composite key change
		"DELETE FROM order_lines WHERE order_id % 5 = 0 OR (order_id = 41 AND line = 2)",
	)
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if err := e.equal(); err != nil {
			return fmt.Errorf("after the changes: %w (status %v)", err, r.Status())
		}
		return nil
	})
	for _, id := range []string{"5", "25", "1002", "2000"} {
		if got, _ := e.search("customers"); got[id].ID != "" {
			t.Errorf("document %s exists after its row was deleted or re-keyed", id)
		}
	}
	before, err := e.search("customers")
	if err != nil {
		t.Fatal(err)
	}
	beforeLines, err := e.search("order-lines")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := beforeLines["2|11"]; !ok || len(beforeLines) == 0 {
		t.Errorf("order line 2|11 (re-keyed from 2|1) is missing")
	}
	r.Stop()

	// Replay: a new sink group reads the topic from the beginning (the
	// snapshot rows, every change, the deletes and tombstones). The
	// index must not change: every older version is refused by the server.
	r2 := e.run("replay")
	defer r2.Stop()
	adm := kadm.NewClient(b.Client())
	testbroker.CheckFor(t, 60*time.Second, func() error {
		var lag int64
		for group, table := range map[string]string{"replay": "customers", "replay-order-lines": "order_lines"} {
			if err := addLag(adm, group, "shop."+e.dbName+"."+table, &lag); err != nil {
				return err
			}
		}
		if lag != 0 {
			return fmt.Errorf("replay group lags %d records", lag)
		}
		return nil
	})
	if err := e.equal(); err != nil {
		t.Fatalf("after the replay: %v", err)
	}
	for index, before := range map[string]map[string]hit{"customers": before, "order-lines": beforeLines} {
		after, err := e.search(index)
		if err != nil {
			t.Fatal(err)
		}
		for id, h := range before {
			if after[id].Version != h.Version {
				t.Errorf("%s document %s: version %d before the replay, %d after", index, id, h.Version, after[id].Version)
			}
		}
	}
}

// addLag adds group's lag on topic to *lag.
func addLag(adm *kadm.Client, group, topic string, lag *int64) error {
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		return err
	}
	committed, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		return err
	}
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := committed.Lookup(o.Topic, o.Partition)
		*lag += o.Offset - max(c.At, 0)
	})
	return nil
}
