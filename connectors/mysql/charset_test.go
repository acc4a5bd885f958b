package mysql

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"weir/connectors/mysql/mysqltest"
)

// utf8mb4Server is the second server of the tests: utf8mb4 defaults and a
// non-UTC time zone with daylight saving time.
var utf8mb4Server = mysqltest.Options{CharacterSet: "utf8mb4", TimeZone: "America/New_York"}

// onBothServers runs fn in parallel subtests, once on a server with
// MariaDB's built-in defaults (latin1, SYSTEM time zone) and once on the
// utf8mb4Server.
func onBothServers(t *testing.T, fn func(t *testing.T, e *env)) {
	onBothServersDB(t, func(t *testing.T, srv *mysqltest.Server) { fn(t, newEnvOn(t, srv)) })
}

// onBothServersDB is onBothServers for tests that bring their own broker.
func onBothServersDB(t *testing.T, fn func(t *testing.T, srv *mysqltest.Server)) {
	for _, o := range []struct {
		name string
		opts mysqltest.Options
	}{{"latin1-server", mysqltest.Options{}}, {"utf8mb4-server", utf8mb4Server}} {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			fn(t, mysqltest.SharedWith(t, o.opts))
		})
	}
}

const charsetTable = `CREATE TABLE cs (
	id INT PRIMARY KEY,
	l1 VARCHAR(300) CHARACTER SET latin1, l1t TEXT CHARACTER SET latin1 COLLATE latin1_bin,
	l1c CHAR(10) CHARACTER SET latin1 COLLATE latin1_german2_ci,
	u4 VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci, u4t MEDIUMTEXT CHARACTER SET utf8mb4,
	u3 VARCHAR(100) CHARACTER SET utf8mb3, a VARCHAR(100) CHARACTER SET ascii,
	b VARBINARY(300), bl BLOB, bn BINARY(4),
	dflt VARCHAR(100),
	e ENUM('Zoë','€uro','plain') CHARACTER SET latin1, s SET('ä','ß','x') CHARACTER SET latin1,
	eu ENUM('李雷','😀','x') CHARACTER SET utf8mb4, j JSON)`

// every latin1 byte but the ones an SQL string cannot hold in a VARCHAR
// compared by a padding collation: all 256 go into the binary-collated
// TEXT column.
func allBytes() string {
	var b strings.Builder
	for i := 0; i < 256; i++ {
		fmt.Fprintf(&b, "%02X", i)
	}
	return b.String()
}

func charsetRow(id int, salt string) string {
	return fmt.Sprintf(`(%d, CONCAT('Zoë Ångström €‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ ¡¿ÿ ', CONVERT(X'818D8F909D' USING latin1), '%s'),
		CONVERT(X'%s' USING latin1), 'Straße%s',
		'李雷 😀 ü 𝄞 %s', CONCAT('日本語テキスト 🎉🎉 ', REPEAT('é', 1000), '%s'), '中文 ü %s', 'plain ascii %s',
		X'00FF80C3A9%x', X'F09F98%x', X'E9FF',
		'défaut ß %s',
		'Zoë', 'ä,ß', '😀', '{"k": "李雷 😀 ü", "n": [1, 2.5]}')`, id, salt, allBytes(), salt, salt, salt, salt, salt, salt, salt, salt)
}

var charsetCols = []string{"l1", "l1t", "l1c", "u4", "u4t", "u3", "a", "b", "bl", "bn", "dflt", "e", "s", "eu", "j"}

// TestCharsets puts non-ASCII text in every character set weir decodes
// through the snapshot and the binlog, on a server with MariaDB's
// built-in defaults (latin1) and on one with utf8mb4 defaults, and
// compares every value with what the server returns to a utf8mb4 session.
func TestCharsets(t *testing.T) {
	onBothServers(t, func(t *testing.T, e *env) {
		e.exec(charsetTable, "INSERT INTO cs VALUES "+charsetRow(1, "s1"))
		e.run(e.config("cs"))
		e.waitRecords(e.topic("cs"), 1, 60*time.Second)
		e.exec("INSERT INTO cs VALUES "+charsetRow(2, "i2"),
			"UPDATE cs SET l1 = CONCAT(l1, ' Ñandú'), u4 = CONCAT(u4, ' 🚀'), u3 = CONCAT(u3, ' ç'), e = '€uro', s = 'ß,x', eu = '李雷' WHERE id = 1")
		rs := e.waitRecords(e.topic("cs"), 3, 60*time.Second)
		want := map[string]map[string]string{}
		for _, id := range []string{"1", "2"} {
			row := e.db.Query(t, e.name, "SELECT "+strings.Join(charsetCols, ",")+" FROM cs WHERE id = "+id)[0]
			want[id] = map[string]string{}
			for i, c := range charsetCols {
				want[id][c] = row[i]
			}
		}
		// The snapshot row is the table before the update.
		snap := e.db.Query(t, e.name, "SELECT "+strings.Join(charsetCols, ",")+" FROM cs WHERE id = 1")[0]
		_ = snap
		for i, r := range rs[:3] {
			d := e.decode(r)
			id := fmt.Sprint(native(d.after["id"]))
			for _, c := range charsetCols {
				got := native(d.after[c])
				w := want[id][c]
				if i == 0 { // snapshot row: before the update
					switch c {
					case "l1", "u4", "u3":
						w = native(decodeOne(t, e, c, "1")).(string)
					case "e":
						w = "Zoë"
					case "s":
						w = "ä,ß"
					case "eu":
						w = "😀"
					}
				}
				var gs string
				switch x := got.(type) {
				case string:
					gs = x
					if !utf8.ValidString(x) {
						t.Errorf("op %s id %s column %s: invalid UTF-8 %q", d.op, id, c, x)
					}
				case []byte:
					gs = string(x)
				default:
					t.Fatalf("op %s column %s: %T", d.op, c, got)
				}
				if gs != w {
					t.Errorf("op %s id %s column %s:\n got %q\nwant %q", d.op, id, c, trunc(gs), trunc(w))
				}
			}
		}
	})
}

// decodeOne returns column c of row id as the server printed it before the
// update, by undoing the update's suffix.
func decodeOne(t *testing.T, e *env, c, id string) any {
	t.Helper()
	suffix := map[string]string{"l1": " Ñandú", "u4": " 🚀", "u3": " ç"}[c]
	v := e.db.Query(t, e.name, "SELECT "+c+" FROM cs WHERE id = "+id)[0][0]
	if !strings.HasSuffix(v, suffix) {
		t.Fatalf("column %s = %q lacks the update's suffix %q", c, v, suffix)
	}
	return strings.TrimSuffix(v, suffix)
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// TestLatin1Table checks weir's latin1 table against the server's own
// conversion of every byte.
func TestLatin1Table(t *testing.T) {
	s := mysqltest.Shared(t)
	row := s.Query(t, "", "SELECT CONVERT(CONVERT(X'"+allBytes()+"' USING latin1) USING utf8mb4)")[0][0]
	var raw []byte
	for i := 0; i < 256; i++ {
		raw = append(raw, byte(i))
	}
	if got := decodeLatin1(raw); got != row {
		t.Fatalf("latin1 decoding differs from the server's:\n got %q\nwant %q", got, row)
	}
	if !bytes.Equal([]byte(decodeLatin1([]byte("plain"))), []byte("plain")) {
		t.Fatal("ascii changed")
	}
}

// FuzzDecodeLatin1: any bytes decode to valid UTF-8 with one rune per
// byte, and encoding back gives the bytes.
func FuzzDecodeLatin1(f *testing.F) {
	f.Add([]byte("Zo\xeb \x80\x81\x9f\xff"))
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := decodeLatin1(b)
		if !utf8.ValidString(s) || utf8.RuneCountInString(s) != len(b) {
			t.Fatalf("decodeLatin1(%q) = %q", b, s)
		}
		i := 0
		for _, r := range s {
			back := -1
			if r < 0x80 || (r >= 0xA0 && r <= 0xFF) {
				back = int(r)
			}
			for j, h := range latin1High {
				if h == r {
					back = 0x80 + j
				}
			}
			if back != int(b[i]) {
				t.Fatalf("byte %d: %#x decoded to %U", i, b[i], r)
			}
			i++
		}
	})
}
