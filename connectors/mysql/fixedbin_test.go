package mysql

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// What MariaDB 10.11 prints (SELECT CAST(ip AS CHAR)) for these INET6
// binlog images (trailing zero bytes left out, as in the row event).
var inet6Cases = []struct{ hex, text string }{
	{"20010db8000000000000ff0000428329", "2001:db8::ff00:42:8329"},
	{"00000000000000000000ffffc0000280", "::ffff:192.0.2.128"},
	{"00000000000000000000000000000001", "::1"},
	{"000000000000000000000000c0000201", "::192.0.2.1"},
	{"00010000000000010000000000000001", "1:0:0:1::1"},
	{"0001", "1::"},
	{"", "::"},
}

func TestFixedBinText(t *testing.T) {
	for _, c := range inet6Cases {
		b, _ := hex.DecodeString(c.hex)
		if got, err := inet6Text(b); err != nil || got != c.text {
			t.Errorf("inet6Text(%s) = %q, %v; want %q", c.hex, got, err, c.text)
		}
	}
	b, _ := hex.DecodeString("123e4567e89b12d3a45642665544") // 0000 cut
	if got, err := uuidText(b); err != nil || got != "123e4567-e89b-12d3-a456-426655440000" {
		t.Errorf("uuidText = %q, %v", got, err)
	}
	c := &Column{Name: "u", Type: "uuid", Kind: kUUID}
	if _, err := c.fixedBinText(string(make([]byte, 17))); err == nil || !strings.Contains(err.Error(), "column u (uuid)") {
		t.Errorf("17 bytes: error %v, want one naming the column", err)
	}
}

// FuzzFixedBinText: every binlog image of up to 16 bytes renders as a
// UUID and an INET6 text that parse back to the same 16 bytes; longer
// ones are an error.
func FuzzFixedBinText(f *testing.F) {
	for _, c := range inet6Cases {
		b, _ := hex.DecodeString(c.hex)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err1 := uuidText(b)
		ip, err2 := inet6Text(b)
		if len(b) > 16 {
			if err1 == nil || err2 == nil {
				t.Fatalf("%d bytes accepted: %q %q", len(b), u, ip)
			}
			return
		}
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		want := make([]byte, 16)
		copy(want, b)
		pu, err := uuid.Parse(u)
		if err != nil || !bytes.Equal(pu[:], want) || u != strings.ToLower(u) {
			t.Fatalf("uuidText(%x) = %q (%v)", b, u, err)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil || a.As16() != [16]byte(want) || ip != strings.ToLower(ip) {
			t.Fatalf("inet6Text(%x) = %q (%v)", b, ip, err)
		}
	})
}

// fixedBinValues are (UUID, INET6) pairs whose text and storage differ
// in the ways that matter: time-based UUIDs (stored with their groups
// swapped), v4 and v7 UUIDs (stored as they are), trailing zero bytes
// (left out of the row event), IPv4-mapped and IPv4-compatible
// addresses, zero runs of one word and equally long runs.
var fixedBinValues = [][2]string{
	{"123e4567-e89b-12d3-a456-426655440000", "2001:db8::ff00:42:8329"},
	{"01890b3c-4d5e-7f00-8abc-0123456789ab", "::ffff:192.0.2.128"},
	{"00000000-0000-0000-0000-000000000000", "::"},
	{"ffffffff-ffff-1fff-bfff-ffffffffffff", "::192.0.2.1"},
	{"6ccd780c-baba-1026-9564-5b8c656024db", "1:0:2:3:4:5:6:7"},
	{"f47ac10b-58cc-4372-a567-0e02b2c3d479", "1::"},
	{"00000000-0000-0000-0000-000000000001", "::1"},
	{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "fe80:0:0:0:1:0:0:0"},
	{"1b4e28ba-2fa1-11d2-883f-0016d3cca427", "::ffff:0.0.0.0"},
	{"12345678-1234-5678-1234-567812345678", "0:0:0:0:0:1:0:0"},
	{"", "::1:c000:201"},
	{"", ""},
}

func sqlOrNull(s string) string {
	if s == "" {
		return "NULL"
	}
	return "'" + s + "'"
}

// TestFixedBinTypes puts UUID and INET6 values through the snapshot,
// binlog inserts and updates, an ALTER TABLE that turns a BINARY(16)
// column into UUID mid-stream and one that adds an INET6 column, and
// compares every delivered value with the server's text for it; a UUID
// primary key is snapshotted in chunks and streamed as a key.
func TestFixedBinTypes(t *testing.T) {
	e := newEnv(t)
	n := len(fixedBinValues)
	var rows, keyed []string
	for i, v := range fixedBinValues {
		b := "NULL"
		if v[0] != "" {
			b = "UNHEX(REPLACE('" + v[0] + "', '-', ''))"
			keyed = append(keyed, fmt.Sprintf("('%s', %d)", v[0], i))
		}
		rows = append(rows, fmt.Sprintf("(%d, %s, %s, %s)", i+1, sqlOrNull(v[0]), sqlOrNull(v[1]), b))
	}
	e.exec("CREATE TABLE fb (id INT PRIMARY KEY, u UUID NULL, ip INET6 NULL, b BINARY(16) NULL)",
		"INSERT INTO fb VALUES "+strings.Join(rows, ", "),
		"CREATE TABLE fbk (u UUID PRIMARY KEY, n INT)",
		"INSERT INTO fbk VALUES "+strings.Join(keyed, ", "))
	cfg := e.config("fb")
	cfg.ChunkRows = 3
	e.run(cfg)
	e.waitRecords(e.topic("fb"), n, 60*time.Second)
	ks := e.waitRecords(e.topic("fbk"), len(keyed), 60*time.Second)
	e.exec("INSERT INTO fb SELECT id + 100, u, ip, b FROM fb",
		"UPDATE fb a JOIN fb c ON c.id = 100 + a.id % "+fmt.Sprint(n)+" + 1 SET a.u = c.u, a.ip = c.ip, a.b = c.b WHERE a.id <= 100")
	// The source reads a column's type from the live schema: the rows
	// above are delivered before the ALTER turns b into a UUID (a source
	// reading a backlog that predates a later ALTER gives those rows the
	// later type: doc.go, "Type mapping").
	e.waitRecords(e.topic("fb"), 3*n, 60*time.Second)
	e.exec("ALTER TABLE fb MODIFY b UUID NULL",
		"INSERT INTO fb SELECT 200, u, ip, b FROM fb WHERE id = 101",
		"ALTER TABLE fb ADD COLUMN ip2 INET6 NULL",
		"INSERT INTO fb SELECT 201, u, ip, b, ip FROM fb WHERE id = 102",
		"UPDATE fb SET ip2 = ip WHERE id <= 100",
		"INSERT INTO fbk VALUES ('00000000-0000-0000-0000-0000000000ff', -1)",
		"DELETE FROM fbk WHERE u = '123e4567-e89b-12d3-a456-426655440000'")
	total := n + n + n + 1 + 1
	for _, v := range fixedBinValues {
		if v[1] != "" { // the update of ip2 changes the rows whose ip is not NULL
			total++
		}
	}
	rs := e.waitRecords(e.topic("fb"), total, 60*time.Second)

	// The server's text for value k (rows 101.. never change).
	type truth struct{ u, ip, btext, bhex string }
	want := map[int]truth{}
	for _, r := range e.db.Query(t, e.name, "SELECT id - 100, IFNULL(CAST(u AS CHAR), 'NULL'), IFNULL(CAST(ip AS CHAR), 'NULL'), IFNULL(CAST(b AS CHAR), 'NULL'), IFNULL(HEX(b), 'NULL') FROM fb WHERE id > 100 AND id < 200") {
		var k int
		fmt.Sscan(r[0], &k)
		want[k] = truth{r[1], r[2], r[3], r[4]}
	}
	check := func(i int, what string, got map[string]any, k int, altered bool, ip2 string) {
		t.Helper()
		w := want[k]
		if g := plain(got["u"]); g != w.u {
			t.Errorf("record %d %s: u = %q, server says %q", i, what, g, w.u)
		}
		if g := plain(got["ip"]); g != w.ip {
			t.Errorf("record %d %s: ip = %q, server says %q", i, what, g, w.ip)
		}
		gb := native(got["b"])
		if altered {
			if plain(gb) != w.btext {
				t.Errorf("record %d %s: b (now UUID) = %#v, server says %q", i, what, gb, w.btext)
			}
		} else if bs, ok := gb.([]byte); (ok && strings.ToUpper(hex.EncodeToString(bs)) != w.bhex) || (!ok && (gb != nil || w.bhex != "NULL")) {
			t.Errorf("record %d %s: b (BINARY(16)) = %#v, server says %s", i, what, gb, w.bhex)
		}
		if ip2 != "" {
			if g := plain(got["ip2"]); g != ip2 {
				t.Errorf("record %d %s: ip2 = %q, want %q", i, what, g, ip2)
			}
		}
	}
	next := func(k int) int { return k%n + 1 }
	for i, r := range rs[:total] {
		d := e.decode(r)
		id := int(native(d.key["id"]).(int32))
		switch {
		case i < n: // snapshot
			check(i, "snapshot", d.after, id, false, "")
		case i < 2*n: // insert
			check(i, "insert", d.after, id-100, false, "")
		case i < 3*n: // update
			check(i, "update before", d.before, id, false, "")
			check(i, "update after", d.after, next(id), false, "")
		case id == 200:
			check(i, "insert after ALTER", d.after, 1, true, "")
		case id == 201:
			check(i, "insert with ip2", d.after, 2, true, want[2].ip)
		default: // the update of ip2
			check(i, "update before", d.before, next(id), true, "NULL")
			check(i, "update after", d.after, next(id), true, want[next(id)].ip)
		}
	}

	// fbk: every key once in the snapshot (chunks of 3 keyed by UUID), then
	// the insert and the delete keyed by the UUID text.
	seen := map[string]int{}
	for _, r := range ks[:len(keyed)] {
		seen[plain(e.decode(r).key["u"])]++
	}
	for _, v := range fixedBinValues {
		if v[0] != "" && seen[v[0]] != 1 {
			t.Errorf("fbk snapshot: key %s delivered %d times", v[0], seen[v[0]])
		}
	}
	ks = e.waitRecords(e.topic("fbk"), len(keyed)+3, 60*time.Second) // insert, delete, tombstone
	if k := plain(e.decode(ks[len(keyed)]).key["u"]); k != "00000000-0000-0000-0000-0000000000ff" {
		t.Errorf("fbk insert key = %q", k)
	}
	if d := e.decode(ks[len(keyed)+1]); d.op != "d" || plain(d.key["u"]) != "123e4567-e89b-12d3-a456-426655440000" {
		t.Errorf("fbk delete: op %q key %v", d.op, d.key)
	}
}
