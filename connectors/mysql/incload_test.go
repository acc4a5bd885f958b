package mysql

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/kafkaclient"
)

// loadConns is how many connections a loadWriter writes from.
const loadConns = 4

// loadWriter changes table t (id INT PRIMARY KEY, v INT, pad) at a
// target rate of row changes per second (0: as fast as it can) from
// loadConns connections. Each writes transactions of 300 row changes in
// four multi-row statements — an update of 200 rows, an insert of 60, a
// delete of 30 and a primary key change of 10 — on keys it alone owns
// (the rows of the table when the writer started, split by id, and new
// ids of its own), so the connections do not wait for each other's
// locks. A transaction the server rolls back (deadlock, lock wait
// timeout) is retried.
type loadWriter struct {
	rate    int
	conns   int
	start   time.Time
	changes atomic.Int64
	stop    chan struct{}
	err     chan error
}

// startLoad starts writing to e's table t from loadConns connections.
func startLoad(e *env, rate int) *loadWriter { return startLoadConns(e, rate, loadConns) }

func startLoadConns(e *env, rate, conns int) *loadWriter {
	w := &loadWriter{rate: rate, conns: conns, start: time.Now(), stop: make(chan struct{}), err: make(chan error, conns)}
	live := make([][]int, conns)
	maxID := 0
	for _, r := range e.db.Query(e.t, e.name, "SELECT id FROM t") {
		id, _ := strconv.Atoi(r[0])
		live[id%conns] = append(live[id%conns], id)
		maxID = max(maxID, id)
	}
	for k := range conns {
		go func() { w.err <- w.run(e, k, live[k], maxID+1+k) }()
	}
	return w
}

func (w *loadWriter) run(e *env, k int, live []int, next int) error {
	c, err := client.Connect(e.db.Addr(), mysqltest.AdminUser, mysqltest.AdminPassword, e.name)
	if err != nil {
		return err
	}
	defer c.Close()
	rng := rand.New(rand.NewSource(int64(3 + k)))
	// ids picks n distinct live ids (removing them when remove).
	ids := func(n int, remove bool) []int {
		out := make([]int, 0, n)
		seen := map[int]bool{}
		for len(out) < n && len(out) < len(live) {
			i := rng.Intn(len(live))
			id := live[i]
			if seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, id)
			if remove {
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
			}
		}
		return out
	}
	list := func(ids []int) string {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(id)
		}
		return strings.Join(s, ",")
	}
	for {
		select {
		case <-w.stop:
			return nil
		default:
		}
		if due := int64(time.Since(w.start).Seconds() * float64(w.rate)); w.rate > 0 && w.changes.Load() >= due {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		saved, savedNext := append([]int(nil), live...), next
		upd := ids(200, false)
		var ins strings.Builder
		for i := 0; i < 60; i++ {
			if i > 0 {
				ins.WriteByte(',')
			}
			fmt.Fprintf(&ins, "(%d, %d, 'ins')", next, rng.Intn(1000))
			live = append(live, next)
			next += w.conns
		}
		del := ids(30, true)
		var pk strings.Builder
		moved := ids(10, true)
		for _, id := range moved {
			fmt.Fprintf(&pk, " WHEN %d THEN %d", id, next)
			live = append(live, next)
			next += w.conns
		}
		stmts := []string{"BEGIN",
			fmt.Sprintf("UPDATE t SET v = v + 1, pad = 'u%d' WHERE id IN (%s)", rng.Intn(1e6), list(upd)),
			"INSERT INTO t (id, v, pad) VALUES " + ins.String(),
			"DELETE FROM t WHERE id IN (" + list(del) + ")",
			fmt.Sprintf("UPDATE t SET id = CASE id%s END, v = v + 1 WHERE id IN (%s)", pk.String(), list(moved)),
			"COMMIT"}
		n := len(upd) + 60 + len(del) + len(moved)
		for _, q := range stmts {
			if _, err = c.Execute(q); err != nil {
				break
			}
		}
		var me *gmysql.MyError
		if errors.As(err, &me) && (me.Code == gmysql.ER_LOCK_DEADLOCK || me.Code == gmysql.ER_LOCK_WAIT_TIMEOUT) {
			c.Execute("ROLLBACK") //nolint:errcheck // the retry reports a broken connection
			live, next = saved, savedNext
			continue
		}
		if err != nil {
			return fmt.Errorf("load connection %d: %w", k, err)
		}
		w.changes.Add(int64(n))
	}
}

func (w *loadWriter) finish(t testing.TB) {
	t.Helper()
	close(w.stop)
	for range w.conns {
		if err := <-w.err; err != nil {
			t.Fatalf("load: %v", err)
		}
	}
}

// cpuSeconds is the CPU time (user + system) process pid has used.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100 // USER_HZ
}

// BenchmarkIncrementalSnapshotUnderLoad: a 20,000-row table captured by
// a source (in this process, into the broker) is changed by a
// loadWriter at WEIR_INC_RATE row changes per second (default 10,000; 0:
// as fast as it can) from WEIR_INC_CONNS connections (default
// loadConns). Each iteration measures, on the same table and
// source: the writer's rate over 5 s with no snapshot (base-changes/s),
// then, with the writer still running, an incremental snapshot of the
// table (chunks of 500 rows) from the signal to the source's
// incremental_snapshot_table_finished event: the writer's rate during
// that window (changes/s) and its duration (snapshot-s); then, with the
// writer stopped, the same snapshot with no load (idle-snapshot-s).
// mariadb-cores is the MariaDB server's CPU use (cores) during the
// snapshot under load.
func BenchmarkIncrementalSnapshotUnderLoad(b *testing.B) {
	rate, conns := 10000, loadConns
	if s := os.Getenv("WEIR_INC_RATE"); s != "" {
		rate, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("WEIR_INC_CONNS"); s != "" {
		conns, _ = strconv.Atoi(s)
	}
	const rows = 20000
	e := incEnv(b)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(40))",
		fmt.Sprintf("INSERT INTO t SELECT seq, 0, 'init' FROM seq_1_to_%d", rows))
	pidText, err := os.ReadFile(filepath.Join(e.db.Dir, "mysqld.pid"))
	if err != nil {
		b.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	cfg := e.incConfig("incbench")
	cfg.IncrementalChunkRows = 500
	ms := connectors.NewMetricSet(nil)
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, Logger: zap.NewNop(), Metrics: ms}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- rt.RunSource(ctx, cfg.Name, New(cfg), connectors.SourceOptions{Topic: "unused-" + cfg.Name})
	}()
	defer func() { cancel(); <-done }()
	e.waitRecords(e.topic("t"), rows, 60*time.Second)
	finished := ms.For(cfg.Name).EventCounter("incremental_snapshot_table_finished")
	src := New(cfg)
	snapshot := func() time.Duration {
		n0, start := counterValue(finished), time.Now()
		if _, err := src.RequestSnapshot(context.Background(), []string{e.name + ".t"}, false); err != nil {
			b.Fatal(err)
		}
		testbroker.CheckFor(b, 5*time.Minute, func() error {
			select {
			case err := <-done:
				b.Fatalf("source stopped: %v", err)
			default:
			}
			if counterValue(finished) <= n0 {
				return fmt.Errorf("incremental snapshot not finished after %v", time.Since(start))
			}
			return nil
		})
		return time.Since(start)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := startLoadConns(e, rate, conns)
		time.Sleep(time.Second) // warm-up
		c0, t0 := w.changes.Load(), time.Now()
		time.Sleep(5 * time.Second) // the measurement window of the baseline
		base := float64(w.changes.Load()-c0) / time.Since(t0).Seconds()
		c1, cpu1, t1 := w.changes.Load(), cpuSeconds(pid), time.Now()
		el := snapshot()
		under := float64(w.changes.Load()-c1) / el.Seconds()
		cores := (cpuSeconds(pid) - cpu1) / time.Since(t1).Seconds()
		w.finish(b)
		idle := snapshot()
		b.ReportMetric(under, "changes/s")
		b.ReportMetric(base, "base-changes/s")
		b.ReportMetric(el.Seconds(), "snapshot-s")
		b.ReportMetric(idle.Seconds(), "idle-snapshot-s")
		b.ReportMetric(cores, "mariadb-cores")
	}
}
