package mysql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/kafkaclient"
)

// waitStopped waits for a task to fail and returns its error.
func waitStopped(t *testing.T, r *running, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.once.Do(func() { r.err = err })
		return err
	case <-time.After(timeout):
		t.Fatalf("source task still running after %v", timeout)
	}
	return nil
}

func TestNoPrimaryKey(t *testing.T) {
	e := newEnv(t)
	e.exec("CREATE TABLE nopk (a INT, b VARCHAR(10))", "INSERT INTO nopk VALUES (1,'x'),(2,'y')",
		"CREATE TABLE pk (id INT PRIMARY KEY)", "INSERT INTO pk VALUES (1)")

	t.Run("fail", func(t *testing.T) {
		r := e.run(e.config("nopk-fail"))
		err := waitStopped(t, r, 30*time.Second)
		if !errors.Is(err, ErrNoPrimaryKey) || !strings.Contains(err.Error(), e.name+".nopk") || !strings.Contains(err.Error(), "no_primary_key") {
			t.Fatalf("error %v: want ErrNoPrimaryKey naming the table and the setting", err)
		}
	})
	t.Run("skip", func(t *testing.T) {
		cfg := e.config("nopk-skip")
		cfg.NoPrimaryKey = "skip"
		e.run(cfg)
		e.waitRecords(e.topic("pk"), 1, 30*time.Second)
		e.exec("INSERT INTO nopk VALUES (3,'z')", "INSERT INTO pk VALUES (2)")
		e.waitRecords(e.topic("pk"), 2, 30*time.Second)
		if rs := e.b.ReadAll(e.topic("nopk")); len(rs) != 0 {
			t.Fatalf("skipped table has %d records", len(rs))
		}
	})
	t.Run("all_columns", func(t *testing.T) {
		cfg := e.config("nopk-all")
		cfg.NoPrimaryKey = "all_columns"
		e.run(cfg)
		e.waitRecords(e.topic("nopk"), 3, 30*time.Second)
		e.exec("UPDATE nopk SET b = 'w' WHERE a = 1", "DELETE FROM nopk WHERE a = 2")
		// update = delete + tombstone + create of the new all-column key;
		// delete = delete + tombstone
		rs := e.waitRecords(e.topic("nopk"), 3+3+2, 30*time.Second)
		var ops []string
		for _, r := range rs[3:] {
			d := e.decode(r)
			if d.tomb {
				ops = append(ops, "t")
			} else {
				ops = append(ops, d.op)
			}
		}
		if got := strings.Join(ops, ","); got != "d,t,c,d,t" {
			t.Fatalf("ops after update and delete: %s", got)
		}
		if k := e.decode(rs[5]).key; plain(k["b"]) != "w" || plain(k["a"]) != "1" {
			t.Fatalf("key of the created row: %v", k)
		}
	})
}

func TestUnsupportedColumn(t *testing.T) {
	e := newEnv(t)
	// A character set weir does not decode (in both paths).
	e.exec("CREATE TABLE geo (id INT PRIMARY KEY, p VARCHAR(10) CHARACTER SET gbk, n VARCHAR(10))", "INSERT INTO geo VALUES (1, '中', 'a')")
	r := e.run(e.config("geo-fail"))
	err := waitStopped(t, r, 30*time.Second)
	if !errors.Is(err, ErrUnsupportedColumn) || !strings.Contains(err.Error(), ".geo.p") || !strings.Contains(err.Error(), "unsupported_columns") ||
		!strings.Contains(err.Error(), "character set gbk") {
		t.Fatalf("error %v: want ErrUnsupportedColumn naming the column and the setting", err)
	}
	cfg := e.config("geo-skip")
	cfg.UnsupportedCols = "skip"
	e.run(cfg)
	e.waitRecords(e.topic("geo"), 1, 30*time.Second)
	e.exec("INSERT INTO geo VALUES (2, '文', 'b')")
	rs := e.waitRecords(e.topic("geo"), 2, 30*time.Second)
	for _, rec := range rs {
		d := e.decode(rec)
		if _, ok := d.after["p"]; ok || plain(d.after["n"]) == "NULL" {
			t.Fatalf("record %v: want column p left out and n present", d.after)
		}
	}
}

// TestLostConnection kills the binlog dump connection on the server
// (KILL) repeatedly while changes run; the source reconnects from the
// last record it returned and the topic replays to the table with every
// change exactly once.
func TestLostConnection(t *testing.T) {
	e := newEnv(t)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO t SELECT seq, 0 FROM seq_1_to_1000")
	r := e.run(e.config("lost"))
	e.waitRecords(e.topic("t"), 1000, 30*time.Second)
	var updates atomic.Int64
	stop := make(chan struct{})
	werr := make(chan error, 1)
	go func() {
		c, err := client.Connect(e.db.Addr(), mysqltest.AdminUser, mysqltest.AdminPassword, e.name)
		if err != nil {
			werr <- err
			return
		}
		defer c.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				werr <- nil
				return
			default:
			}
			// multi-row transactions, so kills land inside them too
			if _, err := c.Execute(fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id BETWEEN %d AND %d", i%995+1, i%995+5)); err != nil {
				werr <- err
				return
			}
			updates.Add(1)
		}
	}()
	killed := 0
	for i := 0; i < 5; i++ {
		testbroker.CheckFor(t, 30*time.Second, func() error {
			if n := e.db.KillConnections(t, func(user, cmd string) bool {
				return user == mysqltest.CDCUser && strings.Contains(cmd, "Binlog Dump")
			}); n == 0 {
				return fmt.Errorf("no binlog dump connection to kill yet")
			}
			return nil
		})
		killed++
		time.Sleep(150 * time.Millisecond)
	}
	close(stop)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	table := e.tableRows("t", "id")
	testbroker.CheckFor(t, 60*time.Second, func() error {
		state, n, _ := e.replay(e.topic("t"))
		if t.Failed() {
			t.FailNow()
		}
		if err := compareState(t, state, table); err != nil {
			return err
		}
		if want := 1000 + 5*int(updates.Load()); n != want {
			return fmt.Errorf("%d change records, want exactly %d", n, want)
		}
		return nil
	})
	if c := r.src.sc.Metrics().ErrorCounter("poll"); c == nil {
		t.Fatal("no poll error counter")
	}
	t.Logf("killed the binlog dump %d times during %d update transactions", killed, updates.Load())
}

// TestWrongCredentials: the server refuses the password; the error names
// the user and server and is retriable, and once the account accepts the
// password the source proceeds by itself.
func TestWrongCredentials(t *testing.T) {
	e := newEnv(t)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)",
		"CREATE USER IF NOT EXISTS 'late'@'%' IDENTIFIED BY 'right'",
		"GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* TO 'late'@'%'")
	t.Cleanup(func() { e.db.Exec(t, "", "DROP USER IF EXISTS 'late'@'%'") })
	cfg := e.config("creds")
	cfg.User, cfg.Password = "late", "wrong"

	src := New(cfg)
	if err := src.Open(context.Background(), &testContext{name: "creds"}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := src.Poll(context.Background(), nil)
	if !errors.Is(err, ErrAuth) || !errors.Is(err, connectors.ErrRetriable) || !strings.Contains(err.Error(), `"late"`) || !strings.Contains(err.Error(), e.db.Addr()) {
		t.Fatalf("Poll error %v: want ErrAuth, retriable, naming the user and server", err)
	}
	src.Close()

	// Through the runtime: retried until the account is fixed.
	fast := connectors.Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond, Factor: 2}
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, Metrics: connectors.NewMetricSet(nil)}
	src = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- rt.RunSource(ctx, "creds", src, connectors.SourceOptions{Topic: "unused", Backoff: &fast})
	}()
	defer func() { cancel(); <-done }()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if v := counterValue(rt.Metrics.For("creds").ErrorCounter("poll")); v < 2 {
			return fmt.Errorf("%v poll errors so far", v)
		}
		return nil
	})
	if rs := e.b.ReadAll(e.topic("t")); len(rs) != 0 {
		t.Fatalf("%d records before the credentials work", len(rs))
	}
	e.db.Exec(t, "", "ALTER USER 'late'@'%' IDENTIFIED BY 'wrong'")
	e.waitRecords(e.topic("t"), 1, 30*time.Second)
}

// TestPurgedBinlog: the binlog the stored position needs is purged while
// the source is stopped; restarting fails with ErrBinlogPurged naming the
// file and the remedy, and with on_purged_binlog = snapshot it takes a
// new snapshot and the topic again replays to the table.
func TestPurgedBinlog(t *testing.T) {
	e := newEnv(t)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1,1),(2,2)")
	cfg := e.config("purged")
	r := e.run(cfg)
	e.waitRecords(e.topic("t"), 2, 30*time.Second)
	e.exec("UPDATE t SET v = 10 WHERE id = 1")
	e.waitRecords(e.topic("t"), 3, 30*time.Second)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	// Changes while stopped, then the binlogs holding them are purged.
	e.exec("FLUSH BINARY LOGS", "UPDATE t SET v = 20 WHERE id = 2", "DELETE FROM t WHERE id = 1",
		"INSERT INTO t VALUES (3,3)", "FLUSH BINARY LOGS")
	cur := e.db.Query(t, "", "SHOW MASTER STATUS")[0][0]
	// The server keeps files a dump thread still reads or InnoDB has not
	// checkpointed yet: end lingering dumps and retry until purged.
	e.db.KillConnections(t, func(_, cmd string) bool { return strings.Contains(cmd, "Binlog Dump") })
	testbroker.CheckFor(t, 30*time.Second, func() error {
		e.exec("FLUSH ENGINE LOGS", "PURGE BINARY LOGS TO '"+cur+"'")
		if first := e.db.Query(t, "", "SHOW BINARY LOGS")[0][0]; first != cur {
			return fmt.Errorf("oldest binlog still %s", first)
		}
		return nil
	})

	r = e.run(cfg)
	err := waitStopped(t, r, 30*time.Second)
	if !errors.Is(err, ErrBinlogPurged) || !strings.Contains(err.Error(), "on_purged_binlog") || !strings.Contains(err.Error(), "mysql-bin.") {
		t.Fatalf("error %v: want ErrBinlogPurged naming the file and on_purged_binlog", err)
	}
	cfg.OnPurgedBinlog = "snapshot"
	e.run(cfg)
	table := e.tableRows("t", "id")
	testbroker.CheckFor(t, 30*time.Second, func() error {
		// Replaying a re-snapshot over old state: 'r' rows replace what
		// the key had (the chain check does not apply), so rebuild by key.
		rs := e.b.ReadAll(e.topic("t"))
		state := map[string]map[string]string{}
		for _, rec := range rs {
			d := e.decode(rec)
			k := fmt.Sprint(d.key)
			switch {
			case d.tomb || d.op == "d":
				delete(state, k)
			default:
				state[k] = flat(d.after)
			}
		}
		// A row deleted while the binlog was lost cannot be deleted
		// downstream (documented): id 1 remains with its old value.
		delete(state, "map[id:1]")
		return compareState(t, state, table)
	})
}
