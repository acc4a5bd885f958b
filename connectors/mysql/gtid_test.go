package mysql

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
)

func TestGTIDCountAndVersion(t *testing.T) {
	for _, c := range []struct {
		flavor, set string
		count       uint64
		norm        string
	}{
		{gmysql.MariaDBFlavor, "", 0, ""},
		{gmysql.MariaDBFlavor, "0-1-100", 100, "0-1-100"},
		{gmysql.MariaDBFlavor, "0-1-100,1-2-7", 107, "0-1-100,1-2-7"},
		// Two servers in one domain (a set tracked across a failover):
		// the domain's last GTID counts and stays.
		{gmysql.MariaDBFlavor, "0-1-100,0-2-120,5-3-1", 121, "0-2-120,5-3-1"},
		{gmysql.MySQLFlavor, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:8-10,4e11fa47-71ca-11e1-9e33-c80aa9429562:1-2", 10, ""},
	} {
		g, err := parseGTIDSet(c.flavor, c.set)
		if err != nil {
			t.Fatalf("%s: %v", c.set, err)
		}
		if n := gtidCount(g); n != c.count {
			t.Errorf("gtidCount(%s) = %d, want %d", c.set, n, c.count)
		}
		if c.flavor == gmysql.MariaDBFlavor && g.String() != c.norm {
			t.Errorf("parseGTIDSet(%s) = %s, want %s", c.set, g, c.norm)
		}
	}
	// A MariaDB GTID replaces its domain's GTID, whichever server wrote it.
	g, _ := parseGTIDSet(gmysql.MariaDBFlavor, "0-1-100,1-1-5")
	for _, id := range []string{"0-2-101", "1-1-6", "0-1-102"} {
		before := gtidCount(g)
		if err := addGTID(g, id); err != nil {
			t.Fatal(err)
		}
		if gtidCount(g) <= before {
			t.Errorf("after %s the count went from %d to %d", id, before, gtidCount(g))
		}
	}
	if g.String() != "0-1-102,1-1-6" {
		t.Errorf("set = %s, want 0-1-102,1-1-6", g)
	}
	// Versions: the next transaction's first change is above the
	// previous transaction's last, even past the change bits.
	if !(GTIDVersion(7, 0) < GTIDVersion(7, 1) && GTIDVersion(7, 1_000_000) < GTIDVersion(8, 0)) {
		t.Error("versions out of order")
	}
	if GTIDVersion(7, maxVersionChange+5) != GTIDVersion(7, maxVersionChange) || GTIDVersion(7, maxVersionChange) >= GTIDVersion(8, 0) {
		t.Error("changes past maxVersionChange must share the last version below the next transaction")
	}
	if v := GTIDVersion(maxVersionCount, maxVersionChange); v <= 0 {
		t.Errorf("largest version %d is not a positive int64", v)
	}
}

// TestGTIDLabels streams 200 two-row transactions of a server id the
// start position does not name, all in the binlog before the source
// starts by GTID, so the syncer reads far ahead of Poll: every record
// must name its own transaction's GTID (go-mysql keeps the first GTID
// event of a new server in its set and advances it in place), the versions must grow
// with every change and carry the GTID count, and the position stored
// after each transaction must be its GTID.
func TestGTIDLabels(t *testing.T) {
	e := newEnv(t)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	ms := e.db.Query(t, "", "SHOW MASTER STATUS")[0]
	pos, _ := strconv.ParseUint(ms[1], 10, 32)
	from := Position{File: ms[0], Pos: uint32(pos)}
	from.GTID = e.db.Query(t, "", fmt.Sprintf("SELECT BINLOG_GTID_POS('%s', %d)", from.File, from.Pos))[0][0]
	const txs = 200
	// Written as another server id, new to the start position's GTID
	// set, as after a failover to a replica that then took writes.
	c := e.db.Conn(t, e.name)
	if _, err := c.Execute("SET SESSION server_id = 77"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < txs; i++ {
		for _, q := range []string{"BEGIN", fmt.Sprintf("INSERT INTO t VALUES (%d, 0), (%d, 1)", 2*i, 2*i+1), "COMMIT"} {
			if _, err := c.Execute(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := e.config("labels")
	src := New(cfg)
	if err := src.Open(context.Background(), &testContext{name: cfg.Name}, map[string][]byte{SourcePartition: from.encode()}); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var recs []connectors.SourceRecord
	deadline := time.Now().Add(60 * time.Second)
	for n := 0; n < 2*txs; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records after 60s", n, 2*txs)
		}
		var err error
		before := len(recs)
		if recs, err = src.Poll(context.Background(), recs); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[before:] {
			if r.Topic == e.topic("t") {
				n++
			}
		}
	}
	start, _ := parseGTIDSet(gmysql.MariaDBFlavor, from.GTID)
	base := gtidCount(start)
	var lastVer int64
	i := 0
	for _, r := range recs {
		if r.Topic != e.topic("t") {
			continue
		}
		d := e.decode(&kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Headers: r.Headers})
		tx := i / 2
		want := fmt.Sprintf("0-77-%d", base+uint64(tx)+1)
		if got := plain(d.source["gtid"]); got != want {
			t.Fatalf("record %d (id %v): gtid %s, want %s", i, d.key["id"], got, want)
		}
		ver, _ := strconv.ParseInt(d.ver, 10, 64)
		if ver <= lastVer {
			t.Fatalf("record %d: version %d after %d", i, ver, lastVer)
		}
		if ver != GTIDVersion(base+uint64(tx)+1, i%2) {
			t.Fatalf("record %d: version %d, want %d", i, ver, GTIDVersion(base+uint64(tx)+1, i%2))
		}
		lastVer = ver
		p, err := decodePosition(r.Position)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 && p.GTID != want {
			t.Fatalf("record %d ends transaction %s but stores position %s", i, want, p)
		}
		i++
	}
}

func TestHostsSetting(t *testing.T) {
	base := map[string]any{"user": "cdc", "server_name": "s", "schema_registry_url": "http://r", "port": 3307}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cfg, err := Kind.Spec.Decode(with("hosts", []any{"db1:3306", "db2", "[::1]:3308"}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := configFrom("x", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(c.servers()); got != "[db1:3306 db2:3307 [::1]:3308]" {
		t.Errorf("servers = %s", got)
	}
	if got := fmt.Sprint(New(Config{Host: "h", Port: 1}).servers); got != "[h:1]" {
		t.Errorf("without hosts: servers = %s, want [h:1]", got)
	}
	for _, bad := range []struct {
		raw  map[string]any
		want string
	}{
		{with("hosts", []any{"db1:x"}), `entry 1 "db1:x"`},
		{with("hosts", []any{"db1:3306", "db1:3306"}), "listed twice"},
		{with("hosts", []any{":3306"}), `entry 1 ":3306"`},
		{with("hosts", []any{"db1", "db2"}, "position_mode", "file"), `position_mode = "gtid"`},
	} {
		_, err := Kind.Spec.Decode(bad.raw)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "hosts") {
			t.Errorf("%v: error %v, want one naming hosts and %q", bad.raw["hosts"], err, bad.want)
		}
	}
}
