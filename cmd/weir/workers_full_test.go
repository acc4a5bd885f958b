package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/kafkaclient"
	"weir/internal/kafkapeer"
	"weir/internal/testkit"
	"weir/internal/txntest"
	"weir/internal/weirbin"
	"weir/internal/weircluster"
	"weir/pipelines/workgroup"
)

// fullPipeline is issue 19's Done-means pipeline: a mysql source (a
// singleton), a file source on every worker (its own app.log, in the
// worker's folder), an aggregating stream counting lines per worker, and
// elasticsearch sinks keeping an index equal to the table and one equal
// to the log lines. Everything exactly-once, so that counts are exact.
// Topics have 3 replicas (a topic block's default is 1, which takes no
// acks=all write on a cluster with min.insync.replicas=2).
const fullPipeline = `
variable "brokers" { type = string }
variable "prefix" { type = string }
variable "mysql_host" { type = string }
variable "mysql_port" { type = number }
variable "mysql_user" { type = string }
variable "mysql_password" { type = string }
variable "db" { type = string }
variable "server_id" { type = number }
variable "es_url" { type = string }

broker {
  brokers = split(",", var.brokers)
}

topic "ddl" {
  name               = "${var.prefix}.schema-changes"
  replication_factor = 3
}

topic "lines" {
  name               = "${var.prefix}.lines"
  partitions         = 3
  replication_factor = 3
}

topic "counts" {
  name               = "${var.prefix}.counts"
  partitions         = 3
  replication_factor = 3
}

source "mysql" "shop" {
  topic              = topic.ddl
  host               = var.mysql_host
  port               = var.mysql_port
  user               = var.mysql_user
  password           = var.mysql_password
  server_name        = var.prefix
  server_id          = var.server_id
  format             = "canal_json"
  heartbeat_interval = "1s"
  table "t" {
    name = "${var.db}.t"
    topic {
      partitions         = 3
      replication_factor = 3
    }
  }
}

source "file" "logs" {
  topic        = topic.lines
  include      = ["app.log"] # in each worker's own folder
  encoding     = "json"
  exactly_once = true
  parse_json {
    field = "message"
  }
}

stream "count" {
  group        = "${var.prefix}-count"
  from         = [topic.lines]
  to           = topic.counts
  exactly_once = true
  group_by     = record.w
  count {
    field = "n"
  }
}

sink "elasticsearch" "rows" {
  group          = "${var.prefix}-rows"
  from           = [source.shop.table["t"].topic]
  urls           = [var.es_url]
  index          = "${var.prefix}-rows"
  id_from        = "key"
  flush_interval = "200ms"
}

sink "elasticsearch" "lines" {
  group          = "${var.prefix}-lines"
  from           = [topic.lines]
  urls           = [var.es_url]
  index          = "${var.prefix}-lines"
  id_from        = "field"
  id_field       = "id"
  flush_interval = "200ms"
}
`

// brokerCluster is a 3-broker cluster whose brokers 2 and 3 can be
// killed with -9 and started again (broker 1, the test's own seed, is
// left alone).
type brokerCluster struct {
	name, seed, bootstrap string
	kill, start           func(id int)
}

// TestWorkerGroupFullProcess is issue 19's first Done-means line: three
// `weir run` workers (processes) in one worker group against a 3-broker
// weir cluster and against a 3-broker Apache Kafka 4.4 cluster, running
// fullPipeline while rows are inserted and updated in MariaDB and lines
// appended to every worker's log; workers (the mysql source's owner
// among them) and brokers are killed with -9 and started again
// meanwhile. At the end: the rows index equals the table, the lines
// index equals the lines written, the stream's count per worker equals
// its lines, the rows topic holds every binlog change once
// (read_committed), and the mysql source never ran on two workers at
// once: the status topic's reports of it from different workers never
// overlap in time, and its records' weir.worker headers, in binlog
// order, change worker only from one owner to the next.
func TestWorkerGroupFullProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 3-broker clusters, worker processes, MariaDB, Elasticsearch")
	}
	bin := weirbin.Build(t)
	srv := mysqltest.Shared(t)
	es := searchtest.Shared(t, searchtest.Elasticsearch7)
	clusters := []func(t *testing.T) brokerCluster{
		func(t *testing.T) brokerCluster {
			c := weircluster.Start(t, bin, 3, "--config", "default.replication.factor=3", "--config", "min.insync.replicas=2")
			s := c.Seeds()
			return brokerCluster{name: "weir", seed: s[0], bootstrap: strings.Join(s, ","), kill: c.Kill, start: c.Start}
		},
		func(t *testing.T) brokerCluster {
			if why := kafkapeer.Available(); why != "" {
				t.Fatal(why) // scripts/test installs Java and Maven: never a skip
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			k, err := kafkapeer.StartCluster(ctx, kafkapeer.ClusterOptions{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(k.Stop)
			start := func(id int) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				if err := k.Start(ctx, id); err != nil {
					t.Error(err)
				}
			}
			return brokerCluster{name: "kafka", seed: k.Nodes[0].Plaintext, bootstrap: k.Bootstrap(), kill: k.Kill, start: start}
		},
	}
	// The two halves run at once: most of each is waiting for the
	// pipeline to move between faults (restarts, group sessions, leader
	// moves). They share the MariaDB server and the Elasticsearch node
	// with their own database, indices, topic prefix and binlog replica
	// server id (MariaDB drops a binlog dump when another replica
	// connects with its id).
	for i, mk := range clusters {
		t.Run([]string{"weir", "kafka"}[i], func(t *testing.T) {
			t.Parallel()
			runFullProcess(t, bin, srv, es, mk(t), 4200+i)
		})
	}
}

func runFullProcess(t *testing.T, bin string, srv *mysqltest.Server, es *searchtest.Server, bc brokerCluster, serverID int) {
	db := srv.NewDatabase(t)
	srv.Exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(64))")
	g := newGroupWorkers(t, bin, bc.bootstrap, fullPipeline,
		"--var", "mysql_host="+srv.Host, "--var", fmt.Sprintf("mysql_port=%d", srv.Port),
		"--var", "mysql_user="+mysqltest.CDCUser, "--var", "mysql_password="+mysqltest.CDCPassword,
		"--var", "db="+db, "--var", "es_url="+es.URL, "--var", fmt.Sprintf("server_id=%d", serverID))
	rowsTopic := g.prefix + "." + db + ".t"
	t.Cleanup(func() {
		es.Do(t, "DELETE", "/"+g.prefix+"-rows", nil)
		es.Do(t, "DELETE", "/"+g.prefix+"-lines", nil)
	})
	workers := []string{"w1", "w2", "w3"}
	for _, w := range workers {
		g.start(w, "")
	}

	// The sources produce throughout: a row inserted every 60 ms and
	// every third tick an earlier row updated; a line every 100 ms on
	// every worker.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	lines := map[string]int{} // worker → lines written
	rows := 0
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(60 * time.Millisecond):
			}
			srv.Exec(t, db, fmt.Sprintf("INSERT INTO t VALUES (%d, 'row %d')", i, i))
			if i%3 == 0 {
				srv.Exec(t, db, fmt.Sprintf("UPDATE t SET v = 'row %d updated at %d' WHERE id = %d", i/2, i, i/2))
			}
			mu.Lock()
			rows = i
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			mu.Lock()
			for _, w := range workers {
				lines[w]++
				appendLine(t, filepath.Join(g.dir, w, "app.log"), fmt.Sprintf(`{"id":"%s-%06d","w":"%s"}`, w, lines[w], w))
			}
			mu.Unlock()
		}
	}()
	// progress waits until the rows topic has grown by n records since
	// the last call: the pipeline moves between two faults.
	seen := 0
	progress := func(what string, n int) {
		t.Helper()
		testkit.CheckFor(t, 90*time.Second, func() error {
			recs, err := txntest.ReadCommittedErr(bc.seed, rowsTopic)
			if err != nil {
				return err
			}
			if len(recs) < seen+n {
				return fmt.Errorf("%s: %d records in %s, want %d", what, len(recs), rowsTopic, seen+n)
			}
			seen = len(recs)
			return nil
		})
	}
	owner := func() string {
		var o string
		testkit.CheckFor(t, 30*time.Second, func() error {
			var owners []string
			for _, w := range workers {
				if runs(g.logPath(w), "source.shop") {
					owners = append(owners, w)
				}
			}
			if len(owners) != 1 {
				return fmt.Errorf("source.shop runs on %v, want one worker", owners)
			}
			o = owners[0]
			// The status topic says so too (the checks at the end read
			// its history).
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := workgroup.ReadStatus(ctx, kafkaclient.Options{Brokers: []string{bc.seed}}, g.group)
			if err != nil {
				return err
			}
			for _, c := range st.Components {
				if c.Component == "source.shop" && c.Worker == o && c.State == "running" {
					return nil
				}
			}
			return fmt.Errorf("the status topic does not report source.shop running on %s yet", o)
		})
		return o
	}
	progress("start", 20)
	// kill -9 the mysql source's owner, start it again.
	o := owner()
	t.Logf("%s: kill -9 worker %s (mysql owner)", bc.name, o)
	g.procs[o].Kill()
	progress("after the owner's kill -9", 10)
	g.start(o, "")
	// kill -9 a broker, start it again.
	t.Logf("%s: kill -9 broker 2", bc.name)
	bc.kill(2)
	progress("broker 2 down", 10)
	bc.start(2)
	// kill -9 a broker and a worker at once (the owner again).
	o = owner()
	t.Logf("%s: kill -9 broker 3 and worker %s (mysql owner)", bc.name, o)
	bc.kill(3)
	g.procs[o].Kill()
	progress("broker 3 and the owner down", 10)
	bc.start(3)
	g.start(o, "")
	// kill -9 a worker that does not own the mysql source.
	o = owner()
	other := workers[0]
	if other == o {
		other = workers[1]
	}
	t.Logf("%s: kill -9 worker %s", bc.name, other)
	g.procs[other].Kill()
	progress("after a non-owner's kill -9", 10)
	g.start(other, "")
	progress("all up again", 10)
	close(stop)
	wg.Wait()
	t.Logf("%s: %d rows inserted, lines written %v", bc.name, rows, lines)

	// The index equals the table.
	table := map[string]string{}
	for _, r := range srv.Query(t, db, "SELECT id, v FROM t") {
		table[fmt.Sprintf(`{"id":"%s"}`, r[0])] = r[1]
	}
	testkit.CheckFor(t, 2*time.Minute, func() error {
		docs, err := searchDocs(t, es, g.prefix+"-rows")
		if err != nil {
			return err
		}
		var diff []string
		for id, v := range table {
			var d struct {
				Data []map[string]string `json:"data"`
			}
			json.Unmarshal(docs[id], &d)
			if len(d.Data) != 1 || d.Data[0]["v"] != v {
				diff = append(diff, fmt.Sprintf("%s: table %q, index %s", id, v, docs[id]))
			}
		}
		if len(docs) != len(table) || len(diff) > 0 {
			return fmt.Errorf("rows index: %d documents, table %d rows; %d differ, e.g. %v", len(docs), len(table), len(diff), diff[:min(3, len(diff))])
		}
		return nil
	})
	// The lines index equals the lines written.
	testkit.CheckFor(t, 2*time.Minute, func() error {
		docs, err := searchDocs(t, es, g.prefix+"-lines")
		if err != nil {
			return err
		}
		var missing []string
		total := 0
		for w, n := range lines {
			total += n
			for i := 1; i <= n; i++ {
				if id := fmt.Sprintf("%s-%06d", w, i); docs[id] == nil {
					missing = append(missing, id)
				}
			}
		}
		if len(docs) != total || len(missing) > 0 {
			return fmt.Errorf("lines index: %d documents, %d lines written; missing %d, e.g. %v", len(docs), total, len(missing), missing[:min(3, len(missing))])
		}
		return nil
	})
	// The lines topic holds every line once (read_committed): the file
	// sources are exactly-once, and the stream's counts below can only be
	// exact if their input is.
	testkit.CheckFor(t, 2*time.Minute, func() error {
		recs, err := txntest.ReadCommittedErr(bc.seed, g.prefix+".lines")
		if err != nil {
			return err
		}
		return linesOnce(recs, lines)
	})
	// The stream's counts are exact.
	testkit.CheckFor(t, 2*time.Minute, func() error {
		recs, err := txntest.ReadCommittedErr(bc.seed, g.prefix+".counts")
		if err != nil {
			return err
		}
		last := map[string]int{}
		for _, r := range recs {
			var v struct{ N int }
			if err := json.Unmarshal(r.Value, &v); err != nil {
				return fmt.Errorf("count record %q: %v", r.Value, err)
			}
			last[string(r.Key)] = v.N
		}
		for _, w := range workers {
			if last[w] != lines[w] {
				return fmt.Errorf("count of %s is %d, want %d (counts %v)", w, last[w], lines[w], last)
			}
		}
		return nil
	})
	// weir status, from this process (it runs no worker): every
	// component with its placement, its worker(s), state and lag.
	testkit.CheckFor(t, 30*time.Second, func() error {
		out, e, err := runWeir(t, "", "status", "--group", g.group, "--brokers", bc.seed)
		if err != nil {
			return fmt.Errorf("%v: %s", err, e)
		}
		want := map[string]string{"source.shop": "singleton", "source.logs": "per-worker", "stream.count": "partitions",
			"sink.rows": "partitions", "sink.lines": "partitions"}
		got := map[string]int{}
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			// COMPONENT PLACEMENT WORKER STATE IN/S OUT/S LAG ...
			if len(f) >= 7 && want[f[0]] != "" && f[1] == want[f[0]] && f[3] == "running" && regexpLine(f[6], `[0-9][0-9.]*[kM]?`) {
				got[f[0]]++
			}
		}
		for c := range want {
			n := map[bool]int{true: 1, false: 3}[c == "source.shop"]
			if got[c] != n {
				return fmt.Errorf("weir status shows %s running with a lag on %d workers, want %d:\n%s", c, got[c], n, out)
			}
		}
		return nil
	})
	// Every binlog change once (read_committed), and one owner at a time.
	recs := txntest.ReadCommitted(t, bc.seed, rowsTopic)
	changes := map[string]int{}
	for _, r := range recs {
		var m struct {
			Type string            `json:"type"`
			Data []json.RawMessage `json:"data"`
		}
		json.Unmarshal(r.Value, &m)
		changes[fmt.Sprintf("%s %s %s", r.Key, m.Type, m.Data)]++
	}
	for c, n := range changes {
		if n != 1 {
			t.Errorf("%s: change %s is in the topic %d times, want once", rowsTopic, c, n)
		}
	}
	statusOwners := singletonFromStatus(t, bc.seed, g.group, "source.shop")
	headerOwners := singletonFromHeaders(t, recs)
	t.Logf("%s: source.shop ran on %v (status topic); its records were written by %v (headers, binlog order)", bc.name, statusOwners, headerOwners)
	if !subsequence(headerOwners, statusOwners) {
		t.Errorf("the workers of the records (%v) are not the owners in turn reported by the status topic (%v)", headerOwners, statusOwners)
	}
}

// searchDocs returns every document of index by _id (refreshed first).
func searchDocs(t *testing.T, es *searchtest.Server, index string) (map[string]json.RawMessage, error) {
	es.Do(t, "POST", "/"+index+"/_refresh", nil)
	st, b := es.Do(t, "GET", "/"+index+"/_search?size=10000", nil)
	if st != 200 {
		return nil, fmt.Errorf("search %s: %d %s", index, st, b)
	}
	var res struct {
		Hits struct {
			Hits []struct {
				ID     string          `json:"_id"`
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	for _, h := range res.Hits.Hits {
		out[h.ID] = h.Source
	}
	return out, nil
}

// singletonFromStatus reads every report of component in the status
// topic (its whole history, not only the compacted view) and returns the
// workers that ran it, in order: a worker's run is its consecutive
// "running" reports; two workers' runs must not overlap in time (a gap
// of one report interval is allowed: a report is written every
// pipelines.StatusInterval, so a run ends up to one interval after its
// last report).
func singletonFromStatus(t *testing.T, addr, group, component string) []string {
	t.Helper()
	type run struct {
		worker      string
		first, last time.Time
	}
	var runsOf []run
	open := map[string]int{} // worker → index of its open run
	for _, r := range txntest.ReadCommitted(t, addr, workgroup.StatusTopic) {
		if !strings.HasPrefix(string(r.Key), group+"/component/"+component+"/") || r.Value == nil {
			continue
		}
		c, err := workgroup.DecodeComponentStatus(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("WEIR_TEST_WORKER_LOGS") != "" {
			t.Logf("status: %s %s %s", c.At.Format("15:04:05.000"), c.Worker, c.State)
		}
		i, ok := open[c.Worker]
		switch {
		case c.State == "running" && ok && c.At.Sub(runsOf[i].last) < 3*time.Second+2*time.Second:
			runsOf[i].last = c.At
		case c.State == "running":
			open[c.Worker] = len(runsOf)
			runsOf = append(runsOf, run{c.Worker, c.At, c.At})
		default:
			delete(open, c.Worker)
		}
	}
	sort.Slice(runsOf, func(i, j int) bool { return runsOf[i].first.Before(runsOf[j].first) })
	var order []string
	for i, a := range runsOf {
		for _, b := range runsOf[i+1:] {
			if a.worker != b.worker && b.first.Before(a.last) {
				t.Errorf("status topic: %s reported running on %s from %s to %s and on %s from %s: two workers at once",
					component, a.worker, a.first.Format("15:04:05.000"), a.last.Format("15:04:05.000"), b.worker, b.first.Format("15:04:05.000"))
			}
		}
		if len(order) == 0 || order[len(order)-1] != a.worker {
			order = append(order, a.worker)
		}
	}
	return order
}

// singletonFromHeaders returns the workers (connectors.WorkerHeader) of
// a mysql source's INSERT records in the order of the inserts (row ids,
// inserted one after the other), each run of one worker's records once,
// checking that every partition holds its records in binlog order
// (weir.cdc.version never decreasing).
func singletonFromHeaders(t *testing.T, recs []*kgo.Record) []string {
	t.Helper()
	type rec struct {
		id     int
		worker string
	}
	var all []rec
	lastVer := map[int32]int64{}
	for _, r := range recs {
		var ver int64 = -1
		for _, h := range r.Headers {
			if h.Key == mysql.HeaderVersion {
				fmt.Sscan(string(h.Value), &ver)
			}
		}
		w := workerOf(r)
		if ver < 0 || w == "" || strings.HasPrefix(w, "<") {
			t.Errorf("%s/%d@%d: version %d, %s %q: want one of each", r.Topic, r.Partition, r.Offset, ver, connectors.WorkerHeader, w)
		}
		if ver < lastVer[r.Partition] {
			t.Errorf("%s/%d@%d: version %d after %d: not in binlog order", r.Topic, r.Partition, r.Offset, ver, lastVer[r.Partition])
		}
		lastVer[r.Partition] = ver
		var m struct {
			Type string              `json:"type"`
			Data []map[string]string `json:"data"`
		}
		if json.Unmarshal(r.Value, &m) == nil && m.Type == "INSERT" && len(m.Data) == 1 {
			var id int
			fmt.Sscan(m.Data[0]["id"], &id)
			all = append(all, rec{id, w})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].id < all[j].id })
	var order []string
	for _, r := range all {
		if len(order) == 0 || order[len(order)-1] != r.worker {
			order = append(order, r.worker)
		}
	}
	return order
}

// subsequence reports whether a is b with elements left out.
func subsequence(a, b []string) bool {
	i := 0
	for _, x := range b {
		if i < len(a) && a[i] == x {
			i++
		}
	}
	return i == len(a)
}

// lineID finds a line's id (fullPipeline's "w1-000001") in a lines
// topic record.
var lineID = regexp.MustCompile(`w[0-9]+-[0-9]{6}`)

// linesOnce checks that recs, the lines topic read_committed, hold every
// line of written (worker → lines written) exactly once. A copy is
// reported with where each of its records is, to tell a source replay
// from a stream's double count.
func linesOnce(recs []*kgo.Record, written map[string]int) error {
	at := map[string][]string{}
	for _, r := range recs {
		id := lineID.Find(r.Value)
		if id == nil {
			return fmt.Errorf("lines topic record %d/%d has no line id: %q", r.Partition, r.Offset, r.Value)
		}
		at[string(id)] = append(at[string(id)], fmt.Sprintf("%d/%d", r.Partition, r.Offset))
	}
	var dups, missing []string
	total := 0
	for w, n := range written {
		total += n
		for i := 1; i <= n; i++ {
			id := fmt.Sprintf("%s-%06d", w, i)
			switch len(at[id]) {
			case 0:
				missing = append(missing, id)
			case 1:
			default:
				dups = append(dups, fmt.Sprintf("%s at %v", id, at[id]))
			}
		}
	}
	if len(dups) > 0 || len(missing) > 0 || len(recs) != total {
		sort.Strings(dups)
		return fmt.Errorf("lines topic: %d records, %d lines written; %d lines more than once (%v), %d missing (%v)",
			len(recs), total, len(dups), dups[:min(5, len(dups))], len(missing), missing[:min(5, len(missing))])
	}
	return nil
}
