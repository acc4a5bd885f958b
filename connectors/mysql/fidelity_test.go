package mysql

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"
)

// fidelityCol is one column of the fidelity table: its DDL, the values of
// the snapshot row, the inserted row and the update, and how to compare
// a delivered value with what the server returns for expr.
type fidelityCol struct {
	name, ddl string
	snap, ins string // SQL values
	upd       string // SQL value of the update ("" keeps it)
	expr      string // what the server returns to compare with ("": the column)
	cmp       string // "text" (default), "float32", "float64", "decimal", "bit", "utc", "wkt", "bytes"
}

var fidelityCols = []fidelityCol{
	{name: "ti", ddl: "TINYINT", snap: "-128", ins: "127", upd: "0"},
	{name: "tiu", ddl: "TINYINT UNSIGNED", snap: "255", ins: "0", upd: "1"},
	{name: "si", ddl: "SMALLINT", snap: "-32768", ins: "32767"},
	{name: "siu", ddl: "SMALLINT UNSIGNED", snap: "65535", ins: "0"},
	{name: "mi", ddl: "MEDIUMINT", snap: "-8388608", ins: "8388607"},
	{name: "miu", ddl: "MEDIUMINT UNSIGNED", snap: "16777215", ins: "0"},
	{name: "i", ddl: "INT", snap: "-2147483648", ins: "2147483647"},
	{name: "iu", ddl: "INT UNSIGNED", snap: "4294967295", ins: "0"},
	{name: "bi", ddl: "BIGINT", snap: "-9223372036854775808", ins: "9223372036854775807"},
	{name: "biu", ddl: "BIGINT UNSIGNED", snap: "18446744073709551615", ins: "0", upd: "9223372036854775808", cmp: "decimal"},
	{name: "f", ddl: "FLOAT", snap: "3.1415927", ins: "-3.4028235e38", upd: "1.17549435e-38", expr: "CAST(f AS DOUBLE)", cmp: "float32"},
	{name: "f2", ddl: "FLOAT", snap: "16777217", ins: "0.1", expr: "CAST(f2 AS DOUBLE)", cmp: "float32"},
	{name: "d", ddl: "DOUBLE", snap: "0.1e0 + 0.2e0", ins: "1.7976931348623157e308", upd: "-4.9e-324", cmp: "float64"},
	{name: "d2", ddl: "DOUBLE", snap: "3.141592653589793", ins: "2.2250738585072014e-308", cmp: "float64"},
	{name: "de", ddl: "DECIMAL(65,30)", snap: "'-99999999999999999999999999999999999.999999999999999999999999999999'",
		ins: "'12345678901234567890123456789012345.123456789012345678901234567890'", upd: "'0.000000000000000000000000000001'", cmp: "decimal"},
	{name: "de0", ddl: "DECIMAL(5,0)", snap: "-99999", ins: "0", cmp: "decimal"},
	{name: "b1", ddl: "BIT(1)", snap: "b'1'", ins: "b'0'", expr: "CAST(b1 AS UNSIGNED)", cmp: "bit"},
	{name: "b17", ddl: "BIT(17)", snap: "b'10000000000000001'", ins: "b'1'", expr: "CAST(b17 AS UNSIGNED)", cmp: "bit"},
	{name: "b64", ddl: "BIT(64)", snap: "X'FFFFFFFFFFFFFFFF'", ins: "X'8000000000000001'", upd: "X'7FFFFFFFFFFFFFFF'", expr: "CAST(b64 AS UNSIGNED)", cmp: "bit"},
	{name: "y", ddl: "YEAR", snap: "1901", ins: "2155", upd: "0"},
	{name: "dt", ddl: "DATE", snap: "'1000-01-01'", ins: "'9999-12-31'", upd: "'0000-00-00'"},
	{name: "dtz", ddl: "DATE", snap: "'0000-00-00'", ins: "'2024-00-00'", upd: "'2024-02-29'"},
	{name: "tm0", ddl: "TIME", snap: "'-838:59:59'", ins: "'838:59:59'", upd: "'25:00:00'"},
	{name: "tm6", ddl: "TIME(6)", snap: "'-00:00:00.000001'", ins: "'100:00:00.5'", upd: "'-838:59:59.000000'"},
	{name: "tm3", ddl: "TIME(3)", snap: "'12:34:56.789'", ins: "'-1:00:00.001'"},
	{name: "dtm0", ddl: "DATETIME", snap: "'1000-01-01 00:00:00'", ins: "'9999-12-31 23:59:59'", upd: "'0000-00-00 00:00:00'"},
	{name: "dtm1", ddl: "DATETIME(1)", snap: "'2024-03-10 02:30:00.1'", ins: "'2024-11-03 01:30:00.9'"},
	{name: "dtm6", ddl: "DATETIME(6)", snap: "'2024-01-02 03:04:05.123456'", ins: "'1970-01-01 00:00:00.000001'"},
	{name: "ts0", ddl: "TIMESTAMP NULL", snap: "'2024-11-03 01:30:00'", ins: "'1970-01-01 05:00:01'", upd: "'2038-01-18 22:14:07'", cmp: "utc"},
	{name: "ts3", ddl: "TIMESTAMP(3) NULL", snap: "'2024-07-01 12:00:00.123'", ins: "'2024-03-10 03:00:00.999'", cmp: "utc"},
	{name: "ts6", ddl: "TIMESTAMP(6) NULL", snap: "'2024-07-01 12:00:00.000001'", ins: "'0000-00-00 00:00:00'", cmp: "utc"},
	{name: "e", ddl: "ENUM('a','Zoë','李雷','')", snap: "'李雷'", ins: "''", upd: "'Zoë'"},
	{name: "s", ddl: "SET('x','ü','😀')", snap: "'x,😀'", ins: "''", upd: "'ü'"},
	{name: "j", ddl: "JSON", snap: `'{"a": [1, 2.50, "李 😀"], "b": null}'`, ins: "'[]'", upd: `'"ü"'`},
	{name: "g", ddl: "GEOMETRY", snap: "ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0),(1 1,2 1,2 2,1 1))')",
		ins: "ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 2),LINESTRING(0 0,1.5 -2.25))', 4326)", upd: "ST_GeomFromText('MULTIPOINT(1 1,-2 3.5)')", cmp: "wkt"},
	{name: "gp", ddl: "POINT", snap: "POINT(-122.4194, 37.7749)", ins: "ST_GeomFromText('POINT(0.1 1e-7)', 3857)", cmp: "wkt"},
	{name: "gm", ddl: "GEOMETRY", snap: "ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))')",
		ins: "ST_GeomFromText('MULTILINESTRING((0 0,1 1),(2 2,3 3))')", cmp: "wkt"},
	{name: "gen", ddl: "VARCHAR(80) AS (CONCAT(e, '/', i)) STORED"},
	{name: "inv", ddl: "VARCHAR(20) INVISIBLE", snap: "'hidden ü'", ins: "'también'"},
	{name: "u", ddl: "UUID", snap: "'123e4567-e89b-12d3-a456-426655440000'", ins: "'00000000-0000-0000-0000-000000000001'",
		upd: "'01890b3c-4d5e-7f00-8abc-0123456789ab'", expr: "CAST(u AS CHAR)"},
	{name: "ip", ddl: "INET6", snap: "'::ffff:192.0.2.1'", ins: "'2001:db8::ff00:42:8329'", upd: "'1:0:2:3:4:5:6:7'", expr: "CAST(ip AS CHAR)"},
}

// TestFidelity puts every type weir supports through the snapshot, an
// insert and an update, on the latin1-default server and on the utf8mb4
// server whose time_zone is America/New_York, and compares every
// delivered value with what the server returns.
func TestFidelity(t *testing.T) {
	onBothServers(t, func(t *testing.T, e *env) {
		f := fidelitySQL("fid")
		e.exec("SET SESSION sql_mode = ''", f.create) // zero dates
		e.db.Exec(t, e.name, "SET SESSION sql_mode = ''", f.insert(1, f.snap))
		want1 := fidelityWant(t, e, "fid", 1)
		e.run(e.config("fid"))
		e.waitRecords(e.topic("fid"), 1, 60*time.Second)
		e.db.Exec(t, e.name, "SET SESSION sql_mode = ''", f.insert(2, f.ins), f.update(1, f.upd))
		rs := e.waitRecords(e.topic("fid"), 3, 60*time.Second)
		want := []map[string]string{want1, fidelityWant(t, e, "fid", 2), fidelityWant(t, e, "fid", 1)}
		for i, r := range rs[:3] {
			d := e.decode(r)
			if i == 2 {
				checkFidelity(t, "update(before)", d.before, want1)
			}
			checkFidelity(t, []string{"snapshot", "insert", "update"}[i], d.after, want[i])
		}
	})
}

// fidelityStmts is the SQL of a table of fidelityCols: its CREATE TABLE,
// and the columns given values with their snapshot, insert and update
// values (upd holds only the columns the update changes).
type fidelityStmts struct {
	table, create  string
	cols           []string
	snap, ins, upd []string // values, in cols order
	updCols        []string // the columns of upd
}

func fidelitySQL(table string) fidelityStmts {
	f := fidelityStmts{table: table}
	var ddl []string
	for _, c := range fidelityCols {
		ddl = append(ddl, c.name+" "+c.ddl)
		if c.snap == "" {
			continue
		}
		f.cols = append(f.cols, c.name)
		f.snap = append(f.snap, c.snap)
		f.ins = append(f.ins, c.ins)
		if c.upd != "" {
			f.updCols = append(f.updCols, c.name)
			f.upd = append(f.upd, c.upd)
		}
	}
	f.create = "CREATE TABLE " + table + " (id INT PRIMARY KEY, " + strings.Join(ddl, ", ") + ")"
	return f
}

// insert is the INSERT of row id with vals (f.snap or f.ins).
func (f fidelityStmts) insert(id int, vals []string) string {
	return fmt.Sprintf("INSERT INTO %s (id, %s) VALUES (%d, %s)", f.table, strings.Join(f.cols, ","), id, strings.Join(vals, ","))
}

// update sets row id's columns to vals: f.upd (the update's columns), or
// f.snap or f.ins (every column).
func (f fidelityStmts) update(id int, vals []string) string {
	cols := f.cols
	if len(vals) == len(f.upd) {
		cols = f.updCols
	}
	set := make([]string, len(vals))
	for i, v := range vals {
		set[i] = cols[i] + " = " + v
	}
	return fmt.Sprintf("UPDATE %s SET %s WHERE id = %d", f.table, strings.Join(set, ", "), id)
}

// fidelityWant returns what the server says row id of table holds, column
// by column, read through a utf8mb4 session in UTC.
func fidelityWant(t *testing.T, e *env, table string, id int) map[string]string {
	t.Helper()
	var exprs []string
	for _, c := range fidelityCols {
		x := c.name
		if c.expr != "" {
			x = c.expr
		}
		switch c.cmp {
		case "utc":
			x = fmt.Sprintf("CONCAT(%s, '|', COALESCE(UNIX_TIMESTAMP(%[1]s), 'zero'))", c.name)
		case "wkt":
			x = fmt.Sprintf("CONCAT(IF(ST_SRID(%s) = 0, '', CONCAT('SRID=', ST_SRID(%[1]s), ';')), ST_AsText(%[1]s))", c.name)
		}
		exprs = append(exprs, x)
	}
	conn := e.db.Conn(t, e.name)
	if _, err := conn.Execute("SET time_zone = '+00:00'"); err != nil {
		t.Fatal(err)
	}
	r, err := conn.Execute(fmt.Sprintf("SELECT %s FROM %s WHERE id = %d", strings.Join(exprs, ", "), table, id))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, c := range fidelityCols {
		switch fv := &r.Values[0][i]; fv.Type {
		case gmysql.FieldValueTypeNull:
			out[c.name] = "NULL"
		case gmysql.FieldValueTypeString:
			out[c.name] = string(fv.AsString())
		default:
			out[c.name] = fv.String()
		}
	}
	return out
}

var numRE = regexp.MustCompile(`-?[0-9.]+(e[-+]?[0-9]+)?`)

func checkFidelity(t *testing.T, what string, got map[string]any, want map[string]string) {
	t.Helper()
	for _, d := range fidelityDiffs(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

// fidelityDiffs compares a row's delivered values (decoded Avro, or
// index fields as fidelityNative reads them) with what the server says
// (fidelityWant); it returns one line per column that differs.
func fidelityDiffs(got map[string]any, want map[string]string) []string {
	var diffs []string
	for _, c := range fidelityCols {
		g, w := native(got[c.name]), want[c.name]
		ok := false
		switch c.cmp {
		case "float32":
			f, err := strconv.ParseFloat(w, 32)
			ok = err == nil && g == float32(f)
		case "float64":
			f, err := strconv.ParseFloat(w, 64)
			ok = err == nil && g == f
		case "decimal":
			r, _ := g.(*big.Rat)
			wr, okw := new(big.Rat).SetString(w)
			ok = r != nil && okw && r.Cmp(wr) == 0
		case "bit":
			u, err := strconv.ParseUint(w, 10, 64)
			n, _ := g.(int64)
			ok = err == nil && uint64(n) == u
		case "utc":
			s, _ := g.(string)
			text, unix, _ := strings.Cut(w, "|")
			ok = s == text
			if u, _ := strconv.ParseFloat(unix, 64); u != 0 && ok { // the instant too
				tm, err := time.Parse("2006-01-02 15:04:05.999999", s)
				wu, _ := new(big.Rat).SetString(unix)
				gu := new(big.Rat).SetFrac64(tm.UnixMicro(), 1e6)
				ok = err == nil && gu.Cmp(wu) == 0
			}
		case "wkt":
			s, _ := g.(string)
			ok = sameWKT(s, w)
		default:
			ok = plain(g) == w
		}
		if !ok {
			diffs = append(diffs, fmt.Sprintf("column %s (%s) = %#v, server says %q", c.name, c.ddl, g, w))
		}
	}
	return diffs
}

// fidelityNative turns a document's JSON fields (numbers as json.Number)
// into the Go types fidelityDiffs compares for each column: the index
// must hold the same value the topic does.
func fidelityNative(doc map[string]any) map[string]any {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = v
	}
	for _, c := range fidelityCols {
		if s, ok := doc[c.name].(string); ok && c.cmp == "decimal" { // exact digits
			if r, ok := new(big.Rat).SetString(s); ok {
				out[c.name] = r
			}
			continue
		}
		n, ok := doc[c.name].(json.Number)
		if !ok {
			continue
		}
		switch c.cmp {
		case "float32":
			if f, err := strconv.ParseFloat(n.String(), 32); err == nil {
				out[c.name] = float32(f)
			}
		case "float64":
			if f, err := n.Float64(); err == nil {
				out[c.name] = f
			}
		case "decimal":
			if r, ok := new(big.Rat).SetString(n.String()); ok {
				out[c.name] = r
			}
		case "bit":
			if i, err := n.Int64(); err == nil {
				out[c.name] = i
			}
		}
	}
	return out
}

// sameWKT compares two WKT texts: same structure, numbers equal as
// float64 (the server and Go may print a coordinate differently).
func sameWKT(a, b string) bool {
	if numRE.ReplaceAllString(a, "#") != numRE.ReplaceAllString(b, "#") {
		return false
	}
	na, nb := numRE.FindAllString(a, -1), numRE.FindAllString(b, -1)
	for i := range na {
		x, err1 := strconv.ParseFloat(na[i], 64)
		y, err2 := strconv.ParseFloat(nb[i], 64)
		if err1 != nil || err2 != nil || (x != y && !(math.IsNaN(x) && math.IsNaN(y))) {
			return false
		}
	}
	return true
}
