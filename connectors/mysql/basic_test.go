package mysql

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSnapshotThenStream(t *testing.T) {
	e := newEnv(t)
	e.exec("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(10,2), qty INT NOT NULL)")
	e.exec("INSERT INTO items VALUES (1,'a',1.50,3),(2,'b',NULL,4),(3,'c',9.99,5)")
	r := e.run(e.config("basic"))
	t0 := time.Now()
	rs := e.waitRecords(e.topic("items"), 3, 30*time.Second)
	t.Logf("snapshot visible after %v", time.Since(t0))
	for _, x := range rs {
		d := e.decode(x)
		t.Logf("%s key=%v after=%v src=%v", d.op, d.key, d.after, d.source)
	}
	e.exec("INSERT INTO items VALUES (4,'d',2.00,1)", "UPDATE items SET qty=qty+1 WHERE id=1", "UPDATE items SET id=10 WHERE id=2", "DELETE FROM items WHERE id=3")
	t0 = time.Now()
	rs = e.waitRecords(e.topic("items"), 3+1+1+3+2, 30*time.Second)
	t.Logf("stream visible after %v", time.Since(t0))
	for _, x := range rs[3:] {
		d := e.decode(x)
		t.Logf("%s tomb=%v key=%v before=%v after=%v ver=%s src=%v", d.op, d.tomb, d.key, d.before, d.after, d.ver, d.source)
	}
	t0 = time.Now()
	r.stop()
	t.Logf("stop took %v", time.Since(t0))
}

// TestCanalJSONAndTopics: canal FlatMessage output, DDL events on the
// schema-change topic, heartbeats while only uncaptured tables change.
func TestCanalJSONAndTopics(t *testing.T) {
	e := newEnv(t)
	e.exec("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(10,2))", "INSERT INTO items VALUES (1,'a',1.50)",
		"CREATE TABLE other (id INT PRIMARY KEY)")
	cfg := e.config("canal")
	cfg.Format = "canal_json"
	cfg.ExcludeTables = []string{e.name + ".other"}
	e.run(cfg)
	e.waitRecords(e.topic("items"), 1, 30*time.Second)
	e.exec("UPDATE items SET price = 2.25 WHERE id = 1", "ALTER TABLE items ADD COLUMN note VARCHAR(10) NULL")
	rs := e.waitRecords(e.topic("items"), 2, 30*time.Second)
	var fm flatMessage
	if err := json.Unmarshal(rs[1].Value, &fm); err != nil {
		t.Fatal(err)
	}
	if fm.Type != "UPDATE" || fm.Table != "items" || fm.Database != e.name || fm.Data[0]["price"] != "2.25" ||
		fm.Old[0]["price"] != "1.50" || len(fm.Old[0]) != 1 || fm.PkNames[0] != "id" || string(rs[1].Key) != `{"id":"1"}` {
		t.Fatalf("flat message %+v key %s", fm, rs[1].Key)
	}
	ddl := e.waitRecords("srv.schema-changes", 1, 30*time.Second)
	var d map[string]any
	json.Unmarshal(ddl[len(ddl)-1].Value, &d)
	if d["table"] != "items" || !strings.Contains(d["ddl"].(string), "ADD COLUMN note") {
		t.Fatalf("DDL event %s", ddl[len(ddl)-1].Value)
	}
	// Only an excluded table changes: heartbeats carry the position on.
	e.exec("INSERT INTO other VALUES (1)")
	hb := e.waitRecords("__weir-heartbeat.srv", 1, 30*time.Second)
	var h map[string]any
	json.Unmarshal(hb[len(hb)-1].Value, &h)
	if h["file"] == "" || h["pos"] == nil {
		t.Fatalf("heartbeat %s", hb[len(hb)-1].Value)
	}
	if n := len(e.b.ReadAll(e.topic("other"))); n != 0 {
		t.Fatalf("excluded table has %d records", n)
	}
}
