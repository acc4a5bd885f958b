package mysql

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/connectors/mysql/debeziumtest"
	"weir/connectors/mysql/mysqltest"
)

// TestDebeziumDifferential runs weir's source and Debezium 3.5 (embedded
// engine, debeziumtest) on the same database: tables covering the column
// types of issue 13 with a snapshot's worth of rows, then inserts, updates
// and deletes streamed through the binlog. Every value of every event each
// tool delivers (before and after images) is compared with the table's
// value, read from the server itself at that moment (dzTruth). weir must
// equal the table everywhere (dzExcluded lists the checks not made yet and
// why); Debezium's differences from the table are reported in the log,
// column by column, as the evidence of what weir keeps that Debezium loses.
// Since weir's value must equal the table's, it equals Debezium's wherever
// Debezium's equals the table's; a cell where weir differs says which.
//
// Values are compared in one canonical text per column kind (dzKind), each
// tool's representation converted to it by dzWeir and dzDebezium; the
// normalisations are documented there.
func TestDebeziumDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	t0 := time.Now()
	e := newEnv(t)
	for _, tb := range dzTables {
		e.exec(tb.create)
	}
	// The statements are sent as UTF-8: SET NAMES, or a server whose
	// default character set is latin1 would store them double-encoded.
	// Zero dates need a permissive sql_mode; TIMESTAMP literals are read
	// in the session time zone, so they are written at +05:30 and read
	// back as instants (UNIX_TIMESTAMP).
	setup := []string{"SET NAMES utf8mb4", "SET SESSION sql_mode = ''", "SET SESSION time_zone = '+05:30'"}
	for _, tb := range dzTables {
		for i, row := range tb.rows {
			e.exec(append(setup, tb.insert(i+1, row))...)
		}
	}
	cols := map[string][]dzColumn{}
	want := map[string]map[string][]dzEvent{} // table → id → events
	for _, tb := range dzTables {
		cols[tb.name] = dzColumns(e, tb.name)
		want[tb.name] = map[string][]dzEvent{}
		for id, row := range dzTruth(e, tb.name, cols[tb.name], nil) {
			want[tb.name][id] = []dzEvent{{op: "r", after: row}}
		}
	}

	cfg := e.config("dz")
	e.run(cfg)
	dbz := debeziumtest.Start(t, debeziumtest.Config{Host: e.db.Host, Port: e.db.Port, User: mysqltest.CDCUser,
		Password: mysqltest.CDCPassword, Databases: []string{e.name}, ServerID: 5402})
	tStarted := time.Since(t0)
	dbz.WaitSnapshot(t, 180*time.Second)
	for _, tb := range dzTables {
		e.waitRecords(e.topic(tb.name), len(tb.rows), 60*time.Second)
	}
	tSnap := time.Since(t0)

	// Streamed changes, one statement at a time, each with the ids it
	// touches, so that the table's before and after images of every event
	// are read from the server around it.
	for _, tb := range dzTables {
		n := len(tb.rows)
		var steps []dzStep
		for i, row := range tb.rows { // inserts of every row again
			steps = append(steps, dzStep{tb.insert(100+i+1, row), []int{100 + i + 1}})
		}
		for i := range tb.rows { // row i+1 takes the values of row i+2, cyclically
			steps = append(steps, dzStep{tb.update(i+1, tb.rows[(i+1)%n]), []int{i + 1}})
		}
		steps = append(steps,
			dzStep{tb.update(101, tb.rows[n-1]), []int{101}},
			dzStep{fmt.Sprintf("DELETE FROM %s WHERE id IN (2, 102)", tb.name), []int{2, 102}},
			dzStep{fmt.Sprintf("UPDATE %s SET id = id WHERE id > 100", tb.name), nil}, // no-op: no event
		)
		for _, st := range steps {
			before := dzTruth(e, tb.name, cols[tb.name], st.ids)
			e.exec(append(setup, st.sql)...)
			after := dzTruth(e, tb.name, cols[tb.name], st.ids)
			for _, id := range st.ids {
				id := strconv.Itoa(id)
				b, a := before[id], after[id]
				op := "u"
				switch {
				case b == nil && a == nil:
					t.Fatalf("%s: row %s neither before nor after %s", tb.name, id, st.sql)
				case b == nil:
					op = "c"
				case a == nil:
					op = "d"
				}
				want[tb.name][id] = append(want[tb.name][id], dzEvent{op: op, before: b, after: a})
			}
		}
	}
	total := map[string]int{}
	for tb, ids := range want {
		for _, evs := range ids {
			total[tb] += len(evs)
		}
	}

	// Both tools' events, grouped by table and key.
	got := map[string]map[string]map[string][]dzEvent{"weir": {}, "debezium": {}}
	testbroker.CheckFor(t, 120*time.Second, func() error {
		evs, err := dbz.Events()
		if err != nil {
			t.Fatal(err)
		}
		g := map[string]map[string][]dzEvent{}
		for _, ev := range evs {
			if ev.DB != e.name {
				continue
			}
			if g[ev.Table] == nil {
				g[ev.Table] = map[string][]dzEvent{}
			}
			id := fmt.Sprint(ev.Key["id"])
			g[ev.Table][id] = append(g[ev.Table][id], dzEvent{op: ev.Op, before: ev.Before, after: ev.After, types: ev.Types})
		}
		got["debezium"] = g
		for _, tb := range dzTables {
			if n := count(g[tb.name]); n < total[tb.name] {
				return fmt.Errorf("debezium: %s has %d events, want %d", tb.name, n, total[tb.name])
			}
		}
		return nil
	})
	for _, tb := range dzTables {
		g := map[string][]dzEvent{}
		testbroker.CheckFor(t, 60*time.Second, func() error {
			g = map[string][]dzEvent{}
			for _, r := range e.b.ReadAll(e.topic(tb.name)) {
				d := e.decode(r)
				if d.tomb {
					continue
				}
				id := fmt.Sprint(native(d.key["id"]))
				g[id] = append(g[id], dzEvent{op: d.op, before: d.before, after: d.after})
			}
			if n := count(g); n < total[tb.name] {
				return fmt.Errorf("weir: %s has %d events, want %d", tb.name, n, total[tb.name])
			}
			return nil
		})
		got["weir"][tb.name] = g
	}
	tDone := time.Since(t0)

	// Compare.
	dbzDiff := map[string]*dzDiff{} // "table.column" → Debezium's differences
	excludedSeen := map[string]int{}
	for _, tb := range dzTables {
		ids := make([]string, 0, len(want[tb.name]))
		for id := range want[tb.name] {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { a, _ := strconv.Atoi(ids[i]); b, _ := strconv.Atoi(ids[j]); return a < b })
		for _, id := range ids {
			w := want[tb.name][id]
			for _, tool := range []string{"weir", "debezium"} {
				g := got[tool][tb.name][id]
				if len(g) != len(w) {
					t.Errorf("%s: %s id %s: %d events (%s), want %d (%s)", tool, tb.name, id, len(g), ops(g), len(w), ops(w))
					continue
				}
				for i := range w {
					if g[i].op != w[i].op {
						t.Errorf("%s: %s id %s event %d: op %s, want %s", tool, tb.name, id, i, g[i].op, w[i].op)
						continue
					}
					path := "binlog"
					if w[i].op == "r" {
						path = "snapshot"
					}
					for _, img := range []string{"before", "after"} {
						wr, gr := w[i].before, g[i].before
						if img == "after" {
							wr, gr = w[i].after, g[i].after
						}
						if wr == nil {
							continue
						}
						for _, c := range cols[tb.name] {
							truth, _ := wr[c.name].(string)
							var v string
							var err error
							if tool == "weir" {
								v, err = dzWeir(c, gr[c.name])
							} else {
								v, err = dzDebezium(c, g[i].types[c.name], gr[c.name])
							}
							if err == nil && v == truth {
								continue
							}
							if err != nil {
								v = "error: " + err.Error()
							}
							where := fmt.Sprintf("%s.%s (%s) id %s %s %s (%s)", tb.name, c.name, c.colType, id, w[i].op, img, path)
							if tool == "debezium" {
								k := tb.name + "." + c.name
								if dbzDiff[k] == nil {
									dbzDiff[k] = &dzDiff{}
								}
								dbzDiff[k].add(fmt.Sprintf("%s: table %q, debezium %q", where, truth, v))
								continue
							}
							if why := dzExcluded(c, path, truth); why != "" {
								excludedSeen[fmt.Sprintf("%s.%s %s: %s", tb.name, c.name, path, why)]++
								continue
							}
							dv, derr := dzDebezium(c, got["debezium"][tb.name][id][i].types[c.name], dzImage(got["debezium"][tb.name][id][i], img)[c.name])
							agree := "Debezium differs from the table too"
							if derr == nil && dv == truth {
								agree = "Debezium equals the table"
							}
							t.Errorf("weir: %s: %q, table %q (%s: %q)", where, v, truth, agree, dv)
						}
					}
				}
			}
		}
	}
	keys := make([]string, 0, len(dbzDiff))
	for k := range dbzDiff {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Logf("columns where Debezium 3.5 differs from the table (weir equals the table there unless reported above): %d", len(keys))
	for _, k := range keys {
		d := dbzDiff[k]
		t.Logf("  %s: %d values, e.g. %s", k, d.n, strings.Join(d.examples, "; "))
	}
	if len(excludedSeen) > 0 {
		ex := make([]string, 0, len(excludedSeen))
		for k, n := range excludedSeen {
			ex = append(ex, fmt.Sprintf("%s (%d values)", k, n))
		}
		sort.Strings(ex)
		t.Logf("weir values not checked yet (dzExcluded), %d columns:\n  %s", len(ex), strings.Join(ex, "\n  "))
	}
	t.Logf("timing: weir and Debezium started %v, both snapshots %v, all changes delivered %v", tStarted, tSnap, tDone)
}

// dzTable is one table of the differential test: its CREATE statement,
// its column names (after id) and rows of SQL literals.
type dzTable struct {
	name   string
	create string
	cols   []string
	rows   [][]string
}

func (tb dzTable) insert(id int, row []string) string {
	return fmt.Sprintf("INSERT INTO %s (id, %s) VALUES (%d, %s)", tb.name, strings.Join(tb.cols, ", "), id, strings.Join(row, ", "))
}

func (tb dzTable) update(id int, row []string) string {
	set := make([]string, len(tb.cols))
	for i, c := range tb.cols {
		set[i] = c + " = " + row[i]
	}
	return fmt.Sprintf("UPDATE %s SET %s WHERE id = %d", tb.name, strings.Join(set, ", "), id)
}

func nulls(n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = "NULL"
	}
	return r
}

var dzTables = []dzTable{
	{
		name: "dz_time",
		create: `CREATE TABLE dz_time (id INT PRIMARY KEY,
			ts0 TIMESTAMP NULL, ts3 TIMESTAMP(3) NULL, ts6 TIMESTAMP(6) NULL,
			dt0 DATETIME NULL, dt3 DATETIME(3) NULL, dt6 DATETIME(6) NULL, d DATE NULL,
			t0 TIME NULL, t3 TIME(3) NULL, t6 TIME(6) NULL, y YEAR NULL)`,
		cols: []string{"ts0", "ts3", "ts6", "dt0", "dt3", "dt6", "d", "t0", "t3", "t6", "y"},
		rows: [][]string{
			{"'2024-01-02 03:04:05'", "'2024-01-02 03:04:05.678'", "'2024-02-29 23:59:59.999999'",
				"'2024-01-02 03:04:05'", "'2024-01-02 03:04:05.678'", "'2024-02-29 23:59:59.999999'", "'2024-02-29'",
				"'838:59:59'", "'-12:34:56.789'", "'-838:59:59.000000'", "2024"},
			// zero dates and YEAR 0000 (sql_mode '')
			{"'0000-00-00 00:00:00'", "'0000-00-00 00:00:00.000'", "'0000-00-00 00:00:00'",
				"'0000-00-00 00:00:00'", "'0000-00-00 00:00:00.000'", "'0000-00-00 00:00:00.000000'", "'0000-00-00'",
				"'00:00:00'", "'00:00:00.000'", "'-00:00:00.000001'", "0"},
			// range limits (the TIMESTAMP literals are at +05:30)
			{"'1970-01-01 05:30:01'", "'2038-01-19 08:44:07.999'", "'2038-01-19 08:44:07.999999'",
				"'1000-01-01 00:00:00'", "'9999-12-31 23:59:59.999'", "'9999-12-31 23:59:59.999999'", "'9999-12-31'",
				"'-838:59:59'", "'838:59:59.999'", "'-838:59:59.999999'", "1901"},
			{"'2000-03-01 00:00:00'", "'1999-12-31 18:30:00.001'", "'2020-06-15 12:00:00.000001'",
				"'1000-01-01 00:00:00'", "'2020-06-15 12:00:00.001'", "'1970-01-01 00:00:00.000001'", "'1000-01-01'",
				"'24:00:00'", "'100:00:00.5'", "'00:00:00.999999'", "2155"},
			// dates with zero parts
			{"NULL", "NULL", "NULL", "'2024-00-00 00:00:00'", "'2024-02-00 10:11:12.123'", "NULL", "'2024-00-15'",
				"NULL", "NULL", "NULL", "NULL"},
			nulls(11),
		},
	},
	{
		name: "dz_num",
		create: `CREATE TABLE dz_num (id INT PRIMARY KEY,
			ti TINYINT NULL, tiu TINYINT UNSIGNED NULL, si SMALLINT NULL, siu SMALLINT UNSIGNED NULL,
			mi MEDIUMINT NULL, miu MEDIUMINT UNSIGNED NULL, i INT NULL, iu INT UNSIGNED NULL,
			bi BIGINT NULL, bu BIGINT UNSIGNED NULL,
			b1 BIT(1) NULL, b8 BIT(8) NULL, b17 BIT(17) NULL, b64 BIT(64) NULL,
			dec65 DECIMAL(65,30) NULL, dec10 DECIMAL(10,2) NULL, dec0 DECIMAL(20,0) NULL,
			f FLOAT NULL, d DOUBLE NULL)`,
		cols: []string{"ti", "tiu", "si", "siu", "mi", "miu", "i", "iu", "bi", "bu", "b1", "b8", "b17", "b64",
			"dec65", "dec10", "dec0", "f", "d"},
		rows: [][]string{
			{"-128", "0", "-32768", "0", "-8388608", "0", "-2147483648", "0", "-9223372036854775808", "0",
				"b'0'", "b'0'", "b'0'", "b'0'",
				"-99999999999999999999999999999999999.999999999999999999999999999999", "-99999999.99", "-99999999999999999999",
				"-3.4028235e38", "-1.7976931348623157e308"},
			{"127", "255", "32767", "65535", "8388607", "16777215", "2147483647", "4294967295", "9223372036854775807",
				"18446744073709551615", "b'1'", "b'11111111'", "b'11111111111111111'", "b'1111111111111111111111111111111111111111111111111111111111111111'",
				"99999999999999999999999999999999999.999999999999999999999999999999", "99999999.99", "99999999999999999999",
				"3.4028235e38", "1.7976931348623157e308"},
			{"-1", "1", "-1", "1", "-1", "1", "-1", "1", "-1", "1", "b'1'", "b'10000000'", "b'10000000000000001'",
				"b'1000000000000000000000000000000000000000000000000000000000000001'",
				"12345678901234567890123456789012345.123456789012345678901234567890", "0.01", "1",
				"3.1415927", "2.718281828459045"},
			{"0", "128", "0", "32768", "0", "8388608", "0", "2147483648", "0", "9223372036854775808", "b'0'", "b'1010101'",
				"b'1'", "b'1'", "0.000000000000000000000000000001", "0.00", "0",
				"0.1", "0.1"},
			{"5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "b'1'", "b'1'", "b'1'", "b'1'",
				"-0.000000000000000000000000000001", "-0.01", "-1",
				"1.1754944e-38", "2.2250738585072014e-308"},
			{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL",
				"NULL", "NULL", "NULL", "16777217", "-1.5e-300"},
			nulls(19),
		},
	},
	{
		name: "dz_text",
		create: `CREATE TABLE dz_text (id INT PRIMARY KEY,
			l1 VARCHAR(40) CHARACTER SET latin1 NULL, l1c CHAR(10) CHARACTER SET latin1 NULL,
			l1t TEXT CHARACTER SET latin1 NULL,
			u8 VARCHAR(40) CHARACTER SET utf8mb4 NULL, u8c CHAR(10) CHARACTER SET utf8mb4 NULL,
			u8t TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, u3 VARCHAR(40) CHARACTER SET utf8mb3 NULL,
			asc_ VARCHAR(20) CHARACTER SET ascii NULL,
			e ENUM('a','ü','李','😀') CHARACTER SET utf8mb4 NULL, s SET('x','é','雷') CHARACTER SET utf8mb4 NULL,
			j JSON NULL, bn BINARY(6) NULL, vb VARBINARY(20) NULL, bl BLOB NULL) DEFAULT CHARSET utf8mb4`,
		cols: []string{"l1", "l1c", "l1t", "u8", "u8c", "u8t", "u3", "asc_", "e", "s", "j", "bn", "vb", "bl"},
		rows: [][]string{
			// ASCII only
			{"'plain'", "'abc'", "'text'", "'plain'", "'abc'", "'text'", "'abc'", "'ascii'", "'a'", "'x'",
				`'{"k": 1, "a": [1, 2.5, "x"]}'`, "X'0102'", "X'00ff'", "X'deadbeef'"},
			// non-ASCII: accented Latin (and cp1252's € in latin1), CJK, emoji
			{"'Zoë café €'", "'Ünï'", "'naïve œ Š ÿ'", "'李雷 and 韩梅梅 😀'", "'日本語'", "'emoji 👩‍👩‍👧 ok'", "'ß…ü'", "'tab\\there'",
				"'😀'", "'x,雷'", `'{"name": "李雷", "e": "😀", "a": [1, 2.5, "ü"]}'`, "X'00ff10'", "X''", "X'00'"},
			{"'Ñandú'", "'ç'", "'Å'", "'Ζωή'", "'한국어'", "'🎉🎉'", "'кириллица'", "''",
				"'ü'", "'é,雷'", `'"ü"'`, "X'ffffffffffff'", "X'c3'", "X'f09f98'"},
			// trailing spaces (CHAR drops them, VARCHAR/TEXT keep them), quotes, backslash
			{"'x  '", "'y  '", "' z '", "'a''b\\\\c  '", "' '", "'\\n'", "'é '", "'q'", "'李'", "''",
				"'[]'", "X'20'", "X'2000'", "X''"},
			nulls(14),
		},
	},
}

type dzStep struct {
	sql string
	ids []int
}

// dzEvent is one change of one row: canonical table values (want) or a
// tool's raw values (got).
type dzEvent struct {
	op            string
	before, after map[string]any
	types         map[string]string // Debezium's column types
}

func dzImage(ev dzEvent, img string) map[string]any {
	if img == "before" {
		return ev.before
	}
	return ev.after
}

func count(m map[string][]dzEvent) int {
	n := 0
	for _, evs := range m {
		n += len(evs)
	}
	return n
}

func ops(evs []dzEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.op)
	}
	return b.String()
}

type dzDiff struct {
	n        int
	examples []string
}

func (d *dzDiff) add(s string) {
	d.n++
	if len(d.examples) < 2 {
		d.examples = append(d.examples, s)
	}
}

// dzKind is how a column's values are compared.
type dzKind int

const (
	dzInt       dzKind = iota // decimal integer text
	dzDecimal                 // exact decimal, trailing fraction zeros dropped ("-1.5", "0")
	dzFloat                   // float32, shortest text that round-trips (strconv 'g', -1, 32)
	dzDouble                  // float64, shortest round-trip text
	dzBit                     // unsigned decimal of the bits
	dzYear                    // decimal year, 0 for YEAR 0000
	dzDate                    // "YYYY-MM-DD" as the server prints it (zero parts kept)
	dzDatetime                // "YYYY-MM-DD hh:mm:ss.ffffff", always 6 fraction digits (wall clock)
	dzTime                    // signed microseconds
	dzTimestamp               // the instant: Unix microseconds, or "zero" for 0000-00-00 00:00:00
	dzText                    // the characters (Go string)
	dzBytes                   // lower-case hex
)

type dzColumn struct {
	name, colType string
	kind          dzKind
	charset       string
}

// dzColumns reads the columns (after id) from information_schema.
func dzColumns(e *env, table string) []dzColumn {
	e.t.Helper()
	rows := e.db.Query(e.t, e.name, fmt.Sprintf(`SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IFNULL(CHARACTER_SET_NAME, '')
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '%s' AND TABLE_NAME = '%s' AND COLUMN_NAME <> 'id'
		ORDER BY ORDINAL_POSITION`, e.name, table))
	var cols []dzColumn
	for _, r := range rows {
		c := dzColumn{name: r[0], colType: r[2], charset: r[3]}
		switch r[1] {
		case "tinyint", "smallint", "mediumint", "int", "bigint":
			c.kind = dzInt
		case "decimal":
			c.kind = dzDecimal
		case "float":
			c.kind = dzFloat
		case "double":
			c.kind = dzDouble
		case "bit":
			c.kind = dzBit
		case "year":
			c.kind = dzYear
		case "date":
			c.kind = dzDate
		case "datetime":
			c.kind = dzDatetime
		case "time":
			c.kind = dzTime
		case "timestamp":
			c.kind = dzTimestamp
		case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json":
			c.kind = dzText
		case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
			c.kind = dzBytes
		default:
			e.t.Fatalf("dzColumns: %s.%s has type %s, which the test does not handle", table, r[0], r[1])
		}
		cols = append(cols, c)
	}
	return cols
}

// dzTruth reads rows (all, or those of ids) from the server as canonical
// values: each column through an SQL expression whose text result is
// plain ASCII, so the reading connection's character set cannot alter it
// — character data as HEX(CONVERT(col USING utf8mb4)) (the server itself
// decodes the column's character set), binary data as HEX(col), BIT and
// YEAR as col+0, FLOAT as CAST(col AS DOUBLE) (the stored float32 widened
// exactly, not the 6 digits the text protocol prints), TIMESTAMP as
// UNIX_TIMESTAMP(col) (the instant, whatever the session time zone), the
// others as CAST(col AS CHAR).
func dzTruth(e *env, table string, cols []dzColumn, ids []int) map[string]map[string]any {
	e.t.Helper()
	exprs := []string{"id"}
	for _, c := range cols {
		q := "`" + c.name + "`"
		switch c.kind {
		case dzText:
			q = "HEX(CONVERT(" + q + " USING utf8mb4))"
		case dzBytes:
			q = "HEX(" + q + ")"
		case dzBit, dzYear:
			q = "CAST(" + q + "+0 AS CHAR)"
		case dzFloat:
			q = "CAST(CAST(" + q + " AS DOUBLE) AS CHAR)"
		case dzTimestamp:
			q = "CAST(UNIX_TIMESTAMP(" + q + ") AS CHAR)"
		default:
			q = "CAST(" + q + " AS CHAR)"
		}
		exprs = append(exprs, q)
	}
	where := ""
	if ids != nil {
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(id)
		}
		where = " WHERE id IN (" + strings.Join(s, ",") + ")"
	}
	out := map[string]map[string]any{}
	for _, r := range e.db.Query(e.t, e.name, "SELECT "+strings.Join(exprs, ", ")+" FROM "+table+where) {
		row := map[string]any{}
		for i, c := range cols {
			v, err := dzServer(c, r[i+1])
			if err != nil {
				e.t.Fatalf("reading %s.%s id %s from the server: %v", table, c.name, r[0], err)
			}
			row[c.name] = v
		}
		out[r[0]] = row
	}
	return out
}

// dzServer canonicalises a value read by dzTruth ("NULL" is SQL NULL:
// no expression above yields that text for a non-NULL value).
func dzServer(c dzColumn, s string) (string, error) {
	if s == "NULL" {
		return "NULL", nil
	}
	switch c.kind {
	case dzInt, dzBit, dzYear:
		return s, nil
	case dzDecimal:
		return canonDecimal(s)
	case dzFloat:
		f, err := strconv.ParseFloat(s, 64)
		return strconv.FormatFloat(float64(float32(f)), 'g', -1, 32), err
	case dzDouble:
		f, err := strconv.ParseFloat(s, 64)
		return strconv.FormatFloat(f, 'g', -1, 64), err
	case dzDate:
		return s, nil
	case dzDatetime:
		return canonDatetime(s)
	case dzTime:
		return canonTime(s)
	case dzTimestamp:
		// UNIX_TIMESTAMP: seconds with the column's fraction digits; 0
		// for the zero timestamp (1970-01-01 00:00:00 UTC itself is not
		// a valid TIMESTAMP).
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return "", fmt.Errorf("UNIX_TIMESTAMP %q", s)
		}
		if r.Sign() == 0 {
			return "zero", nil
		}
		us := new(big.Rat).Mul(r, big.NewRat(1e6, 1))
		if !us.IsInt() {
			return "", fmt.Errorf("UNIX_TIMESTAMP %q has sub-microsecond digits", s)
		}
		return "unix-us " + us.Num().String(), nil
	case dzText:
		b, err := hex.DecodeString(s)
		return string(b), err
	case dzBytes:
		return strings.ToLower(s), nil
	}
	return "", fmt.Errorf("kind %d", c.kind)
}

func canonDecimal(s string) (string, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", fmt.Errorf("decimal %q", s)
	}
	return ratText(r), nil
}

func ratText(r *big.Rat) string {
	t := r.FloatString(40)
	t = strings.TrimRight(t, "0")
	t = strings.TrimSuffix(t, ".")
	if t == "-0" {
		t = "0"
	}
	return t
}

// canonDatetime: "YYYY-MM-DD hh:mm:ss[.f...]" → 6 fraction digits. The
// date part is kept as it is (zero dates and zero parts included).
func canonDatetime(s string) (string, error) {
	if len(s) < 19 || s[10] != ' ' {
		return "", fmt.Errorf("datetime %q", s)
	}
	frac := ""
	if len(s) > 19 {
		if s[19] != '.' {
			return "", fmt.Errorf("datetime %q", s)
		}
		frac = s[20:]
	}
	if len(frac) > 6 {
		return "", fmt.Errorf("datetime %q has more than 6 fraction digits", s)
	}
	return s[:19] + "." + frac + strings.Repeat("0", 6-len(frac)), nil
}

// canonTime: "[-]h...h:mm:ss[.f...]" → signed microseconds.
func canonTime(s string) (string, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	frac := ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s, frac = s[:i], s[i+1:]
	}
	p := strings.Split(s, ":")
	if len(p) != 3 || len(frac) > 6 {
		return "", fmt.Errorf("time %q", s)
	}
	h, err1 := strconv.ParseInt(p[0], 10, 64)
	m, err2 := strconv.ParseInt(p[1], 10, 64)
	sec, err3 := strconv.ParseInt(p[2], 10, 64)
	f := int64(0)
	var err4 error
	if frac != "" {
		f, err4 = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return "", fmt.Errorf("time %q: %v", s, err)
		}
	}
	us := ((h*60+m)*60+sec)*1e6 + f
	if neg {
		us = -us
	}
	return strconv.FormatInt(us, 10), nil
}

// dzWeir canonicalises a value of weir's Avro envelope (decoded by
// schemas.Serde: nullable fields as single-entry unions). weir's
// representations (doc.go): integers as int/long, BIGINT UNSIGNED as
// decimal(20,0), DECIMAL as decimal (a *big.Rat), FLOAT as float, DOUBLE
// as double, BIT as a long holding the bits (BIT(64) with the top bit
// set is negative: read as unsigned), YEAR as int, DATE as "YYYY-MM-DD",
// DATETIME as wall-clock text with the column's fraction digits, TIME as
// "[-]hh:mm:ss[.f]", TIMESTAMP as the UTC wall clock of the instant
// ("YYYY-MM-DD hh:mm:ss[.f]", "0000-00-00 00:00:00" for the zero
// timestamp), character data as string, binary data as bytes.
func dzWeir(c dzColumn, v any) (string, error) {
	v = native(v)
	if v == nil {
		return "NULL", nil
	}
	switch c.kind {
	case dzInt, dzYear:
		switch x := v.(type) {
		case int32:
			return strconv.FormatInt(int64(x), 10), nil
		case int64:
			return strconv.FormatInt(x, 10), nil
		case *big.Rat:
			if !x.IsInt() {
				return "", fmt.Errorf("integer column as decimal %s", x)
			}
			return x.Num().String(), nil
		}
	case dzBit:
		switch x := v.(type) {
		case int64:
			return strconv.FormatUint(uint64(x), 10), nil
		case int32:
			return strconv.FormatUint(uint64(uint32(x)), 10), nil
		case bool:
			if x {
				return "1", nil
			}
			return "0", nil
		}
	case dzDecimal:
		if x, ok := v.(*big.Rat); ok {
			return ratText(x), nil
		}
	case dzFloat:
		switch x := v.(type) {
		case float32:
			return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
		case float64:
			return strconv.FormatFloat(float64(float32(x)), 'g', -1, 32), nil
		}
	case dzDouble:
		if x, ok := v.(float64); ok {
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		}
	case dzDate:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case dzDatetime:
		if x, ok := v.(string); ok {
			return canonDatetime(x)
		}
	case dzTime:
		if x, ok := v.(string); ok {
			return canonTime(x)
		}
	case dzTimestamp:
		if x, ok := v.(string); ok {
			if strings.HasPrefix(x, "0000-00-00") {
				return "zero", nil
			}
			x = strings.TrimSuffix(strings.Replace(x, "T", " ", 1), "Z")
			ts, err := time.Parse("2006-01-02 15:04:05.999999999", x)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("unix-us %d", ts.UnixMicro()), nil
		}
	case dzText:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return "", fmt.Errorf("character data as bytes %x", x)
		}
	case dzBytes:
		if x, ok := v.([]byte); ok {
			return hex.EncodeToString(x), nil
		}
	}
	return "", fmt.Errorf("unexpected %T %v", v, v)
}

// dzDebezium canonicalises a value of Debezium's envelope as the launcher
// writes it (debeziumtest.Event: json.Number, string, bool, nil), using
// the Connect schema type and name the launcher reports (typ). With the
// settings debeziumtest uses:
//   - integers: JSON numbers; BIGINT UNSIGNED (precise mode) a Connect
//     Decimal written as its plain decimal string;
//   - DECIMAL: a string (decimal.handling.mode=string);
//   - FLOAT/DOUBLE: FLOAT32/FLOAT64 numbers printed by Java's
//     Float/Double.toString (which round-trip);
//   - BIT(1): BOOLEAN; BIT(n>1): io.debezium.data.Bits, bytes (base64 in
//     the launcher's JSON) holding the bits little-endian;
//   - YEAR: io.debezium.time.Year, the year number;
//   - DATE: io.debezium.time.Date, days since 1970-01-01;
//   - DATETIME(0-3): io.debezium.time.Timestamp, milliseconds since
//     1970-01-01 00:00:00 of the wall clock read as UTC; DATETIME(4-6):
//     io.debezium.time.MicroTimestamp, microseconds likewise;
//   - TIME: io.debezium.time.MicroTime, signed microseconds
//     (adaptive_time_microseconds);
//   - TIMESTAMP: io.debezium.time.ZonedTimestamp, ISO-8601 text in UTC;
//   - character data, ENUM, SET, JSON: strings;
//   - binary data: base64 strings (binary.handling.mode=base64).
func dzDebezium(c dzColumn, typ string, v any) (string, error) {
	if v == nil {
		return "NULL", nil
	}
	num := func() (int64, error) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, fmt.Errorf("%s: not a number: %T %v", typ, v, v)
		}
		return n.Int64()
	}
	name := ""
	if i := strings.IndexByte(typ, ' '); i >= 0 {
		name = typ[i+1:]
	}
	switch c.kind {
	case dzInt, dzYear:
		switch x := v.(type) {
		case json.Number:
			return canonDecimal(x.String())
		case string: // Connect Decimal (bigint unsigned, precise)
			return canonDecimal(x)
		}
	case dzBit:
		switch x := v.(type) {
		case bool:
			if x {
				return "1", nil
			}
			return "0", nil
		case string:
			b, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return "", err
			}
			var n uint64
			for i := len(b) - 1; i >= 0; i-- { // little-endian
				n = n<<8 | uint64(b[i])
			}
			return strconv.FormatUint(n, 10), nil
		}
	case dzDecimal:
		if x, ok := v.(string); ok {
			return canonDecimal(x)
		}
	case dzFloat:
		if x, ok := v.(json.Number); ok {
			f, err := strconv.ParseFloat(x.String(), 32)
			return strconv.FormatFloat(f, 'g', -1, 32), err
		}
	case dzDouble:
		if x, ok := v.(json.Number); ok {
			f, err := strconv.ParseFloat(x.String(), 64)
			return strconv.FormatFloat(f, 'g', -1, 64), err
		}
	case dzDate:
		n, err := num()
		if err != nil {
			return "", err
		}
		return time.Unix(n*86400, 0).UTC().Format("2006-01-02"), nil
	case dzDatetime:
		n, err := num()
		if err != nil {
			return "", err
		}
		switch name {
		case "io.debezium.time.Timestamp":
			return time.UnixMilli(n).UTC().Format("2006-01-02 15:04:05.000000"), nil
		case "io.debezium.time.MicroTimestamp":
			return time.UnixMicro(n).UTC().Format("2006-01-02 15:04:05.000000"), nil
		}
		return "", fmt.Errorf("datetime as %s", typ)
	case dzTime:
		if name != "io.debezium.time.MicroTime" {
			return "", fmt.Errorf("time as %s", typ)
		}
		n, err := num()
		return strconv.FormatInt(n, 10), err
	case dzTimestamp:
		if x, ok := v.(string); ok {
			ts, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("unix-us %d", ts.UnixMicro()), nil
		}
	case dzText:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case dzBytes:
		if x, ok := v.(string); ok {
			b, err := base64.StdEncoding.DecodeString(x)
			return hex.EncodeToString(b), err
		}
	}
	return "", fmt.Errorf("unexpected %s %T %v", typ, v, v)
}

// dzExcluded names the weir checks not made yet, each with the reason:
// issue 13's fidelity fixes in progress (another change). Only failing
// cells are excluded, and the test logs every exclusion it applied, so
// an exclusion that no longer applies shows by its absence from the log.
// truth is the table's canonical value.
func dzExcluded(c dzColumn, path, truth string) string {
	nonASCII := strings.IndexFunc(truth, func(r rune) bool { return r >= 0x80 }) >= 0
	switch {
	case c.kind == dzFloat && path == "snapshot":
		return "FLOAT in the snapshot has the text protocol's 6 significant digits (issue 13, Build 5)"
	case c.kind == dzText && c.charset == "latin1" && nonASCII:
		return "latin1 column delivered as its raw latin1 bytes (issue 13, Build 1)"
	case c.kind == dzText && path == "snapshot" && nonASCII:
		return "non-ASCII text in the snapshot of a latin1-default server reads as '?' (session character set not utf8mb4; issue 13, Build 1)"
	}
	return ""
}
