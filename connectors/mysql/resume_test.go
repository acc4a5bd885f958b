package mysql

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"weir/broker/brokertest/testbroker"
	"weir/connectors/mysql/mysqltest"
)

// holdSnapshot makes the snapshot of table (db.table) wait, before the
// chunk after a key for which at(key) is true, until its task stops (its
// polls return nothing); it returns a channel receiving once the
// snapshot waits there.
func holdSnapshot(t *testing.T, table string, at func(key string) bool) <-chan struct{} {
	held := make(chan struct{}, 1)
	hook := func(ctx context.Context, tbl string, after [][]byte) bool {
		if tbl != table || len(after) == 0 || !at(string(after[0])) {
			return false
		}
		select {
		case held <- struct{}{}:
		default:
		}
		pollPause(ctx)
		return true
	}
	snapshotChunkHook.Store(&hook)
	t.Cleanup(func() { snapshotChunkHook.Store(nil) })
	return held
}

// pollPause paces the polls of a held snapshot (which return nothing,
// so the runtime commits between them) instead of a busy loop.
func pollPause(ctx context.Context) {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// mutator runs random inserts, updates, primary key changes (to keys
// before the first and after the last) and deletes on tables of
// (id, v, note).
type mutator struct {
	c    *client.Conn
	rng  *rand.Rand
	live map[string][]string // table → id literals
	str  map[string]bool     // tables with a VARCHAR id
	next int
}

func (m *mutator) newID(table string, before bool) string {
	m.next++
	if m.str[table] {
		b := []byte{byte('a' + m.rng.Intn(26)), byte('a' + m.rng.Intn(26))}
		for i := range b {
			if m.rng.Intn(2) == 0 {
				b[i] -= 'a' - 'A'
			}
		}
		p := ""
		if before {
			p = "0" // before every letter
		} else if m.rng.Intn(3) == 0 {
			p = "z" // after every key of the table
		}
		return fmt.Sprintf("'%s%s%06d'", p, b, m.next)
	}
	if before {
		return strconv.Itoa(-m.next)
	}
	return strconv.Itoa(100000 + m.next)
}

// run does n statements in transactions of 1–5.
func (m *mutator) run(t *testing.T, n int) {
	t.Helper()
	tables := []string{"a", "s", "t", "z"}
	for done := 0; done < n; {
		if _, err := m.c.Execute("BEGIN"); err != nil {
			t.Fatal(err)
		}
		for k := 1 + m.rng.Intn(5); k > 0 && done < n; k-- {
			tb := tables[(done*7+m.rng.Intn(len(tables)))%len(tables)]
			ids := m.live[tb]
			i := m.rng.Intn(len(ids))
			var q string
			switch p := m.rng.Intn(100); {
			case p < 25:
				id := m.newID(tb, false)
				q = fmt.Sprintf("INSERT INTO %s (id, v, note) VALUES (%s, 0, 'ins')", tb, id)
				m.live[tb] = append(ids, id)
			case p < 65:
				q = fmt.Sprintf("UPDATE %s SET v = v + 1, note = 'upd-%d' WHERE id = %s", tb, m.rng.Intn(1e6), ids[i])
			case p < 80:
				id := m.newID(tb, m.rng.Intn(2) == 0)
				q = fmt.Sprintf("UPDATE %s SET id = %s, v = v + 1 WHERE id = %s", tb, id, ids[i])
				ids[i] = id
			default:
				q = fmt.Sprintf("DELETE FROM %s WHERE id = %s", tb, ids[i])
				m.live[tb] = append(ids[:i], ids[i+1:]...)
			}
			if _, err := m.c.Execute(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			done++
		}
		if _, err := m.c.Execute("COMMIT"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnapshotResumeExact: a snapshot stopped twice in the middle — once
// inside a table keyed by a case-insensitive VARCHAR (so keys are
// compared in the column's collation), once inside an INT-keyed one —
// while inserts, updates, primary key changes across the resume key
// (to keys before the first and after the last) and deletes run on
// every table (before, at and after the resume point) and an ADD COLUMN
// runs in the window. Each resume reads the remaining rows as of a newer
// binlog position; the changes up to it to those rows must be dropped
// and all others emitted: every topic replays to its table with no
// change missed or duplicated (the chain of every key checked).
func TestSnapshotResumeExact(t *testing.T) {
	e := newEnv(t)
	ddl := "(id %s PRIMARY KEY, v INT NOT NULL, note VARCHAR(20))"
	e.exec(fmt.Sprintf("CREATE TABLE a "+ddl, "INT"),
		fmt.Sprintf("CREATE TABLE s "+ddl, "VARCHAR(20) COLLATE utf8mb4_general_ci"),
		fmt.Sprintf("CREATE TABLE t "+ddl, "INT"),
		fmt.Sprintf("CREATE TABLE z "+ddl, "INT"),
		"INSERT INTO a SELECT seq, 0, 'a' FROM seq_1_to_300",
		"INSERT INTO t SELECT seq, 0, 't' FROM seq_1_to_2000",
		"INSERT INTO z SELECT seq, 0, 'z' FROM seq_1_to_300",
		// mixed case: the collation's order is not the bytes' order
		"INSERT INTO s SELECT CONCAT(IF(seq % 2, CHAR(96 + seq % 26 + 1), CHAR(64 + (seq * 7) % 26 + 1)), LPAD(seq, 5, '0')), 0, 's' FROM seq_1_to_1000")
	c, err := client.Connect(e.db.Addr(), mysqltest.AdminUser, mysqltest.AdminPassword, e.name)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := &mutator{c: c, rng: rand.New(rand.NewSource(7)), live: map[string][]string{}, str: map[string]bool{"s": true}}
	for _, tb := range []string{"a", "s", "t", "z"} {
		for _, row := range e.db.Query(t, e.name, "SELECT id FROM "+tb) {
			if tb == "s" {
				row[0] = "'" + row[0] + "'"
			}
			m.live[tb] = append(m.live[tb], row[0])
		}
	}
	cfg := e.config("resume")
	cfg.ChunkRows = 50

	// Run 1 stops inside s, after the keys up to "m" (collation order).
	held := holdSnapshot(t, e.name+".s", func(k string) bool { return strings.ToLower(k[:1]) >= "m" })
	r := e.run(cfg)
	waitHeld := func() {
		select {
		case <-held:
		case <-time.After(120 * time.Second):
			t.Fatal("the snapshot did not reach the point to hold at")
		}
	}
	waitHeld()
	m.run(t, 300)
	e.exec("ALTER TABLE t ADD COLUMN w INT NULL")
	m.run(t, 100)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if r.src.snapDone() {
		t.Fatal("the snapshot finished before the stop")
	}
	m.run(t, 200) // still before the resumed snapshot's position

	// Run 2 resumes in s and stops inside t, after key 1000.
	held = holdSnapshot(t, e.name+".t", func(k string) bool { n, _ := strconv.Atoi(k); return n >= 1000 })
	r = e.run(cfg)
	waitHeld()
	m.run(t, 300)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if r.src.snapDone() {
		t.Fatal("the resumed snapshot finished before the stop")
	}
	e.exec("ALTER TABLE z ADD COLUMN w INT NULL")
	m.run(t, 200)

	// Run 3 resumes in t and finishes; changes go on meanwhile.
	snapshotChunkHook.Store(nil)
	r = e.run(cfg)
	m.run(t, 200)
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if !r.src.snapDone() {
			return fmt.Errorf("snapshot still running")
		}
		return nil
	})
	m.run(t, 100)

	for _, tb := range []string{"a", "s", "t", "z"} {
		table := e.tableRows(tb, "id")
		testbroker.CheckFor(t, 60*time.Second, func() error {
			state, _, _ := e.replay(e.topic(tb))
			if t.Failed() {
				t.FailNow()
			}
			if err := compareState(t, state, table); err != nil {
				return fmt.Errorf("table %s: %w", tb, err)
			}
			return nil
		})
	}
}
