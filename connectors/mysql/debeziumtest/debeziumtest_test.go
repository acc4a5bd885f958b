package debeziumtest

import (
	"fmt"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/connectors/mysql/mysqltest"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// TestEngine: a snapshot row and a streamed insert, update and delete
// arrive as events with Debezium's envelope.
func TestEngine(t *testing.T) {
	srv := mysqltest.Shared(t)
	db := srv.NewDatabase(t)
	srv.Exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10), d DECIMAL(5,2))", "INSERT INTO t VALUES (1, 'a', 1.50)")
	t0 := time.Now()
	e := Start(t, Config{Host: srv.Host, Port: srv.Port, User: mysqltest.CDCUser, Password: mysqltest.CDCPassword,
		Databases: []string{db}, ServerID: 5401})
	t.Logf("engine started in %v", time.Since(t0))
	e.WaitSnapshot(t, 120*time.Second)
	t.Logf("snapshot done after %v", time.Since(t0))
	srv.Exec(t, db, "INSERT INTO t VALUES (2, 'b', 2.25)", "UPDATE t SET s = 'c' WHERE id = 1", "DELETE FROM t WHERE id = 2")
	var evs []Event
	testbroker.CheckFor(t, 120*time.Second, func() error {
		var err error
		evs, err = e.Events()
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) < 4 {
			return fmt.Errorf("%d events, want 4; engine log:\n%s", len(evs), e.Log())
		}
		return nil
	})
	t.Logf("4 events after %v", time.Since(t0))
	want := []struct {
		op, key string
		before  bool
		after   string
	}{{"r", "1", false, "a"}, {"c", "2", false, "b"}, {"u", "1", true, "c"}, {"d", "2", true, ""}}
	for i, w := range want {
		ev := evs[i]
		if ev.DB != db || ev.Table != "t" || ev.Op != w.op || fmt.Sprint(ev.Key["id"]) != w.key || (ev.Before != nil) != w.before {
			t.Errorf("event %d: %+v, want op %s key %s", i, ev, w.op, w.key)
		}
		if w.after != "" && (ev.After == nil || ev.After["s"] != w.after) {
			t.Errorf("event %d: after %v, want s=%s", i, ev.After, w.after)
		}
	}
	if evs[0].After["d"] != "1.50" || evs[0].Types["d"] != "STRING" {
		t.Errorf("decimal: %v (%s), want \"1.50\" as a STRING (decimal.handling.mode=string)", evs[0].After["d"], evs[0].Types["d"])
	}
	if len(evs) > 4 {
		t.Errorf("%d extra events: %+v", len(evs)-4, evs[4:])
	}
}
