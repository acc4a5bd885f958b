package mysql

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/txntest"
)

// TestExactlyOnceKillDashNine: an exactly-once MySQL source (change
// records and binlog positions in one transaction per commit) snapshots
// a 20,000-row table and streams a 20,000-op workload of inserts,
// updates (some changing the primary key), deletes and an ADD COLUMN,
// in a child process killed with SIGKILL twice: first during the
// snapshot (the child holds it after key 12,000 while the workload runs,
// so the kill falls there on any machine; the next child resumes it as
// of a newer binlog position, resume.go), then mid-stream. Read with
// read_committed, the topic replays to exactly the table and holds every
// change exactly once: replay fails on a repeated insert or snapshot
// read (the key has a row), an update or delete whose before image is
// not the key's state (every update changes a, so a repeated or missed
// one shows), or a version going back. (The record count is not fixed:
// the resumed snapshot's rows are as of its own position, so the changes
// before it to those rows are in their "r" records, not records of
// their own.) Against Apache Kafka 4.4 and weir.
func TestExactlyOnceKillDashNine(t *testing.T) {
	if testing.Short() {
		t.Skip("slow end-to-end test, starts Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			e := newEnv(t) // the database and the schema registry
			e.b, e.kafka, e.committed = nil, tb.Addr, true
			rows, ops := 20000, 20000
			e.exec(`CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40), c DECIMAL(10,2), d DATETIME,
				e BIGINT, f VARCHAR(20), h TINYINT NOT NULL DEFAULT 1, i DOUBLE, j TEXT)`,
				fmt.Sprintf(`INSERT INTO t (id, a, b, c, d, e, f, i, j) SELECT seq, seq %% 1000, CONCAT('row-', seq), seq / 100,
				'2024-01-01 00:00:00' + INTERVAL seq SECOND, seq * 1000, 'f', seq / 7, 'text' FROM seq_1_to_%d`, rows))
			cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{tb.Addr}})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), 3, 1, nil, e.topic("t")); err != nil || resp.Err != nil {
				t.Fatalf("creating %s: %v %v", e.topic("t"), err, resp.Err)
			}
			cc := childConfig{Broker: tb.Addr, Config: e.config("eos"), ExactlyOnce: true}
			cc.Config.ChunkRows = 1000
			held := cc
			held.HoldTable, held.HoldSnapshotAt = e.name+".t", 12000
			c := startChild(t, held, "child1.log")
			w := &workload{ops: ops, nextID: rows + 1, ddl: map[int]string{ops / 2: "ALTER TABLE t ADD COLUMN g INT NULL"}}
			for i := 1; i <= rows; i++ {
				w.live = append(w.live, i)
			}
			// The workload starts once the snapshot's first rows are
			// committed, so every change it makes is streamed.
			e.waitRecords(e.topic("t"), 1, 60*time.Second)
			werr := make(chan error, 1)
			go func() { werr <- w.run(e, 11) }()
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
			for kill, at := range []int{ops * 3 / 10, ops * 65 / 100} {
				waitProgress(at)
				if kill == 0 {
					// child1 holds its snapshot after key 12,000: the
					// rows before are committed, the rest is not read.
					e.waitRecords(e.topic("t"), 11000, 120*time.Second)
				}
				c.kill()
				t.Logf("killed the source (-9) at op %d", w.progress.Load())
				c = startChild(t, cc, fmt.Sprintf("child%d.log", kill+2))
			}
			if err := <-werr; err != nil {
				t.Fatalf("workload: %v", err)
			}
			table := e.tableRows("t", "id")
			var n, tombs int
			testbroker.CheckFor(t, 120*time.Second, func() error {
				var state map[string]map[string]string
				state, n, tombs = e.replay(e.topic("t"))
				if t.Failed() {
					t.FailNow()
				}
				if err := compareState(t, state, table); err != nil {
					return fmt.Errorf("%d change records committed so far: %w", n, err)
				}
				return nil
			})
			t.Logf("read_committed, the topic equals the table (%d rows) with %d change records and %d tombstones, none repeated or missed (workload: %d changes after a 20,000-row snapshot)",
				len(table), n, tombs, w.records.Load())
		})
	}
}
