package mysql

import (
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
