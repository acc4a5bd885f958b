package mysql

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"
	"time"
)

// native unwraps a nullable field's union value.
func native(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, x := range m {
			return x
		}
	}
	return v
}

func sameNative(a, b any) bool {
	switch x := a.(type) {
	case *big.Rat:
		y, ok := b.(*big.Rat)
		return ok && x.Cmp(y) == 0
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return a == b
}

func rat(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }

const typesTable = `CREATE TABLE types (
	id INT PRIMARY KEY, ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT UNSIGNED, mi MEDIUMINT UNSIGNED,
	iu INT UNSIGNED NOT NULL, bi BIGINT, bu BIGINT UNSIGNED, f FLOAT, d DOUBLE, de DECIMAL(12,4), b BIT(10),
	y YEAR, dt DATE, tm TIME(3), dtm DATETIME(6), ts TIMESTAMP(3) NULL, c CHAR(5), vc VARCHAR(20),
	tx TEXT, bn BINARY(4), vb VARBINARY(8), bl BLOB, e ENUM('x','y','z'), st SET('a','b','c'), j JSON,
	n INT NULL, u UUID, ip INET6, b16 BINARY(16))`

const typesValues = `-5, 250, 65000, 16000000, 4000000000, -9000000000000000000, 18446744073709551615, 1.5, 2.25,
	-1234.5678, b'1010101010', 2024, '2024-02-29', '-12:34:56.789', '2024-01-02 03:04:05.123456',
	'2024-01-02 03:04:05.678', 'ab', 'héllo', 'long text', X'0102', X'00ff', X'deadbeef', 'y', 'a,c',
	'{"k": 1}', NULL, '6ccd780c-baba-1026-9564-5b8c656024db', '::ffff:10.0.0.1', X'0102030405060708090a0b0c0d0e0f00'`

var typesWant = map[string]any{
	"ti": int32(-5), "tiu": int32(250), "si": int32(65000), "mi": int32(16000000), "iu": int64(4000000000),
	"bi": int64(-9000000000000000000), "bu": rat("18446744073709551615"), "f": float32(1.5), "d": 2.25,
	"de": rat("-1234.5678"), "b": int64(682), "y": int32(2024), "dt": "2024-02-29", "tm": "-12:34:56.789",
	"dtm": "2024-01-02 03:04:05.123456", "ts": "2024-01-02 03:04:05.678", "c": "ab", "vc": "héllo",
	"tx": "long text", "bn": []byte{1, 2, 0, 0}, "vb": []byte{0, 0xff}, "bl": []byte{0xde, 0xad, 0xbe, 0xef},
	"e": "y", "st": "a,c", "j": `{"k": 1}`, "n": nil,
	"u": "6ccd780c-baba-1026-9564-5b8c656024db", "ip": "::ffff:10.0.0.1",
	"b16": []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0},
}

// TestTypes checks every supported column type through both paths (a
// snapshot row and a binlog row) against hand-written expectations, and
// that both paths register the same Avro schema.
func TestTypes(t *testing.T) {
	e := newEnv(t)
	e.exec("SET time_zone = '+00:00'", typesTable, "INSERT INTO types VALUES (1, "+typesValues+")")
	e.run(e.config("types"))
	e.waitRecords(e.topic("types"), 1, 30*time.Second)
	e.db.Exec(t, e.name, "SET time_zone = '+00:00'", "INSERT INTO types VALUES (2, "+typesValues+")")
	rs := e.waitRecords(e.topic("types"), 2, 30*time.Second)
	for i, r := range rs[:2] {
		d := e.decode(r)
		wantOp := []string{"r", "c"}[i]
		if d.op != wantOp {
			t.Fatalf("record %d: op %q, want %q", i, d.op, wantOp)
		}
		for col, want := range typesWant {
			got := native(d.after[col])
			if !sameNative(got, want) {
				t.Errorf("%s record: column %s = %#v (%T), want %#v (%T)", wantOp, col, got, got, want, want)
			}
		}
	}
	if e.decodeID(rs[0].Value) != e.decodeID(rs[1].Value) {
		t.Errorf("snapshot and binlog rows were written with different schema ids %d and %d:\n%s\n%s", e.decodeID(rs[0].Value), e.decodeID(rs[1].Value), e.schemaText(e.decodeID(rs[0].Value)), e.schemaText(e.decodeID(rs[1].Value)))
	}
}

func (e *env) decodeID(b []byte) int32 {
	if len(b) < 5 {
		return -1
	}
	return int32(b[1])<<24 | int32(b[2])<<16 | int32(b[3])<<8 | int32(b[4])
}

func TestParseDDL(t *testing.T) {
	for _, c := range []struct{ q, db, table string }{
		{"ALTER TABLE t ADD COLUMN x INT", "d", "t"},
		{"alter table `x`.`y z` drop column a", "x", "y z"},
		{"CREATE TABLE IF NOT EXISTS o.t (id int)", "o", "t"},
		{"DROP TABLE `t`", "d", "t"},
		{"CREATE DATABASE foo", "foo", ""},
		{"/* c */ RENAME TABLE a TO b", "d", "a"},
		{"CREATE INDEX i ON t (a)", "d", ""},
		{"TRUNCATE TABLE q.r", "q", "r"},
		{"TRUNCATE r", "d", ""},
	} {
		db, table := parseDDL("d", c.q)
		if db != c.db || table != c.table {
			t.Errorf("parseDDL(%q) = %q, %q; want %q, %q", c.q, db, table, c.db, c.table)
		}
	}
}

func TestDecimalBytes(t *testing.T) {
	for _, s := range []string{"0", "1.5", "-1.5", "123456789012345678901234.5678", "-0.0001", "99999999.9999", "-128", "127", "128", "-129"} {
		b, err := decimalBytes(s, 4)
		if err != nil {
			t.Fatal(err)
		}
		got := decimalString(b, 4)
		if rat(got).Cmp(rat(s)) != 0 {
			t.Errorf("decimal %s → %x → %s", s, b, got)
		}
	}
	if v := Version("mysql-bin.000042", 1234); v != 42<<32|1234 {
		t.Errorf("Version = %d", v)
	}
	_ = fmt.Sprint()
}

func (e *env) schemaText(id int32) string {
	c, err := e.serde.Codec(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Schema.Text()
}

func TestPositionEncoding(t *testing.T) {
	for _, p := range []Position{
		{File: "mysql-bin.000001", Pos: 4},
		{File: "mysql-bin.000002", Pos: 1234, GTID: "0-1-99,1-2-3", Skip: 7},
		{File: "b\"in\\x.1", Pos: 5, GTID: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", Snap: &SnapPos{Table: "db.tä`b", Key: [][]byte{{0, 1, 0xff}, []byte("k")}, Done: true}},
		{File: "f.3", Pos: 9, Snap: &SnapPos{Table: "d.t", Rows: 42}},
		{File: "a&b<c>.4", Pos: 10, Snap: &SnapPos{Table: "d.x\u2028y\x01"}},
	} {
		want := marshalNoHTML(t, p)
		if got := p.encode(); string(got) != string(want) {
			t.Errorf("encode = %s\nwant     %s", got, want)
		}
		back, err := decodePosition(p.encode())
		if err != nil || back.String() != p.String() {
			t.Errorf("round trip of %s: %v %v", p, back, err)
		}
	}
	// Positions stored before internal/jsonw (json.Marshal's HTML escapes)
	// still decode.
	old := []byte(`{"f":"a\u0026b\u003cc\u003e.4","p":10}`)
	if back, err := decodePosition(old); err != nil || back.File != "a&b<c>.4" || back.Pos != 10 {
		t.Errorf("stored position %s: %v %v", old, back, err)
	}
}

// marshalNoHTML is json.Marshal without the HTML escapes of <, > and &
// (what Position.encode writes, see internal/jsonw).
func marshalNoHTML(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
