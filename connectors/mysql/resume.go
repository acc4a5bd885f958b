package mysql

// Resuming an interrupted snapshot exactly.
//
// The first snapshot reads every table as of binlog position P (its
// consistent snapshot), and streaming starts at P. When the source stops
// during that snapshot (kill -9, a lost connection) after the row with
// key K of table T, the snapshot of P is gone: the resumed snapshot opens
// a new consistent snapshot, at a later binlog position P2, and reads the
// rows after K in T and every table after T (tables are read in name
// order). Streaming still starts at P, because the rows read before the
// stop (tables before T, keys up to K) are as of P and need every change
// after P. So the binlog between P and P2 holds changes a consumer must
// get (to rows it got as of P) and changes it must not get (to rows it
// gets as of P2: the P2 rows already contain them). A Resume records
// P2 and (T, K); while the stream is before P2 a change is dropped when
// its row lies after (T, K) — in a later table, or in T with a key after
// K — and emitted otherwise; an update moving a row across (T, K)
// becomes the delete of its old key (read as of P) or the create of its
// new key (a row read before the stop), whichever half the consumer
// needs. From P2 on, everything is emitted.
//
// This is DBLog's rule (incremental.go) seen from the other side: there
// a chunk's rows are dropped when the binlog changes them inside the
// chunk's window; here the binlog's changes are dropped when the
// resumed snapshot's rows contain them. Every stop during the snapshot
// adds a Resume (P3, T', K') after the last, so a change is dropped when
// some Resume's position is after it and its row lies after that
// Resume's (T, K); the list travels in every Position (Position.Win)
// until the stream passes the last position, so a stop inside the
// window resumes with the same filter.
//
// Debezium's MySQL connector does not resume an initial snapshot: one
// interrupted is taken again from the start, every row sent again; its
// incremental snapshots resume at the last chunk but need watermark
// writes into a signal table. Resuming here needs neither: the filter
// is computed from positions the source reads.
//
// Keys are compared by the server, in the key columns' own types and
// collations (keyCompare, the condition the snapshot's chunk queries use,
// evaluated on the change's key), never by a second comparison in Go.
//
// A table without a primary key (no_primary_key = all_columns) is read
// in one pass, which restarts whole after a stop: rows of it the first
// pass delivered are delivered again (as "r" of the same all-columns key)
// and its changes between P and P2 are emitted, not dropped, so a
// consumer keyed by the whole row ends with exactly the table (a row the
// first pass delivered and a change deleted is deleted), but may see a
// row twice. Exactly-once for such a table holds only when its pass is
// not interrupted.

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Resume is one resume of an interrupted snapshot (Position.Win): the
// rows after (Table, Key) — every row of Table when Key is empty and Done
// is false, none of it when Done — and the tables after Table were read
// as of the binlog position File/Pos/GTID.
type Resume struct {
	File  string   `json:"f"`
	Pos   uint32   `json:"p"`
	GTID  string   `json:"g,omitempty"`
	Table string   `json:"t"`           // db.table
	Key   [][]byte `json:"k,omitempty"` // primary key (text form) of the last row read before
	Done  bool     `json:"d,omitempty"` // Table was read completely before
}

// snapTableKey is the order the snapshot reads tables in (db \x00 table).
func snapTableKey(full string) string { return strings.Replace(full, ".", "\x00", 1) }

// window is the streamer's filter of the changes between the first
// snapshot's position and the positions of its resumes.
type window struct {
	s    *Source
	res  []Resume // not yet passed
	conn *client.Conn
	memo map[string]bool // resume index \x00 table \x00 keyString → after its (T, K)
}

func (w *window) close() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// txBefore reports whether the open transaction of st comes before the
// binlog position of r: its GTID is in r's executed set, or (no GTIDs)
// its start is before r's file and offset.
func (st *streamer) txBefore(r *Resume) bool {
	if st.txGTID != "" && r.GTID != "" {
		if in, err := gtidIn(st.s.si.flavor, r.GTID, st.txGTID); err == nil {
			return in
		}
	}
	a, b := fileNumber(st.tx.File), fileNumber(r.File)
	return a < b || (a == b && st.tx.Pos < r.Pos)
}

// gtidIn reports whether the transaction gtid is in the executed set.
func gtidIn(flavor, set, gtid string) (bool, error) {
	g, err := parseGTIDSet(flavor, set)
	if err != nil {
		return false, err
	}
	if ms, ok := g.(*gmysql.MariadbGTIDSet); ok {
		id, err := gmysql.ParseMariadbGTID(gtid)
		if err != nil {
			return false, err
		}
		in := false
		for _, last := range ms.Sets[id.DomainID] {
			in = in || id.SequenceNumber <= last.SequenceNumber
		}
		return in, nil
	}
	one, err := gmysql.ParseGTIDSet(flavor, gtid)
	if err != nil {
		return false, err
	}
	return g.Contain(one), nil
}

// passResumes drops the resumes whose position the transaction just
// begun is not before (the stream reached them); called by beginTx.
func (st *streamer) passResumes() {
	w := st.win
	if w == nil || len(w.res) == 0 {
		return
	}
	var keep []Resume
	for i := range w.res {
		if st.txBefore(&w.res[i]) {
			keep = append(keep, w.res[i])
		}
	}
	if len(keep) != len(w.res) {
		w.res = keep // a new slice: positions emitted before keep theirs
		clear(w.memo)
	}
}

// resumes is what positions carry (nil once every resume is passed).
func (st *streamer) resumes() []Resume {
	if st.win == nil || len(st.win.res) == 0 {
		return nil
	}
	return st.win.res
}

// windowed filters a change of the open transaction against the
// resumes: nil when a resumed snapshot's rows contain it, the change
// itself, or the half of a key-changing update the consumer needs.
func (st *streamer) windowed(ctx context.Context, ch *change) (*change, error) {
	if st.win == nil || len(st.win.res) == 0 {
		return ch, nil
	}
	var b, a bool
	var err error
	if ch.before != nil {
		if b, err = st.covered(ctx, ch.t, ch.before); err != nil {
			return nil, err
		}
	}
	if ch.after != nil {
		if ch.before != nil && keyString(ch.t, ch.before) == keyString(ch.t, ch.after) {
			a = b
		} else if a, err = st.covered(ctx, ch.t, ch.after); err != nil {
			return nil, err
		}
	}
	switch {
	case ch.op == 'c' && a, ch.op == 'd' && b, ch.op == 'u' && a && b:
		return nil, nil
	case ch.op == 'u' && b: // the old key is read as of a resume; the new one was read before
		ch.op, ch.before = 'c', nil
	case ch.op == 'u' && a: // the old key was read before; the new one is read as of a resume
		ch.op, ch.after = 'd', nil
	}
	return ch, nil
}

// covered reports whether the row (a change's image, before some resume's
// position) lies after that resume's (T, K), so the resumed snapshot
// read it as of a later position.
func (st *streamer) covered(ctx context.Context, t *tableState, row []any) (bool, error) {
	name := t.DB + "\x00" + t.Name
	for i := range st.win.res {
		r := &st.win.res[i]
		if !st.txBefore(r) {
			continue
		}
		rt := snapTableKey(r.Table)
		switch {
		case name > rt:
			return true, nil
		case name < rt || r.Done || t.KeyAll:
			continue // read before the stop (a keyless table's pass restarts: see above)
		case len(r.Key) == 0:
			return true, nil
		}
		after, err := st.win.after(ctx, i, t, row)
		if err != nil {
			return false, err
		}
		if after {
			return true, nil
		}
	}
	return false, nil
}

// after asks the server whether row's primary key follows resume i's key
// in the key columns' order: the snapshot's own chunk condition
// (keyCompare) evaluated on a derived row typed like the table's key
// columns (a UNION with the table gives the literals the columns' types
// and collations).
func (w *window) after(ctx context.Context, i int, t *tableState, row []any) (bool, error) {
	memo := strconv.Itoa(i) + "\x00" + t.DB + "\x00" + t.Name + "\x00" + keyString(t, row)
	if v, ok := w.memo[memo]; ok {
		return v, nil
	}
	if w.conn == nil {
		c, err := w.s.connect(ctx)
		if err != nil {
			return false, err
		}
		w.conn = c
	}
	cols, lits := make([]string, len(t.PK)), make([]string, len(t.PK))
	for j, k := range t.PK {
		c := &t.Columns[k]
		cols[j] = quoteIdent(c.Name)
		l, err := c.nativeLiteral(row[k])
		if err != nil {
			return false, fmt.Errorf("comparing a change of %s with the resumed snapshot's key: %w", t.fullName(), err)
		}
		lits[j] = l
	}
	q := "SELECT (" + t.keyCompare(w.res[i].Key, ">", ">") + ") FROM (SELECT " + strings.Join(cols, ",") + " FROM " +
		quoteIdent(t.DB) + "." + quoteIdent(t.Name) + " WHERE 1 = 0 UNION ALL SELECT " + strings.Join(lits, ",") + ") x"
	r, err := w.conn.Execute(q)
	if me := myError(err); me != nil && me.Code == 1146 {
		// The table is gone by now: compare the literals as they are.
		for j := range lits {
			lits[j] += " AS " + cols[j]
		}
		r, err = w.conn.Execute("SELECT (" + t.keyCompare(w.res[i].Key, ">", ">") + ") FROM (SELECT " + strings.Join(lits, ",") + ") x")
	}
	if err != nil {
		return false, w.s.classify("comparing a change of "+t.fullName()+" with the resumed snapshot's key", err)
	}
	defer r.Close()
	if len(r.Values) != 1 || len(r.Values[0]) != 1 {
		return false, fmt.Errorf("comparing a change of %s with the resumed snapshot's key: %d rows", t.fullName(), len(r.Values))
	}
	v := intOf(&r.Values[0][0]) == 1
	if w.memo == nil {
		w.memo = map[string]bool{}
	}
	w.memo[memo] = v
	return v, nil
}

// nativeLiteral renders a key value in its Avro native form (what
// Column.value returns) as an SQL literal, the way textLiteral renders
// the snapshot's text form.
func (c *Column) nativeLiteral(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case string:
		return c.textLiteral([]byte(x)), nil
	case []byte:
		switch c.Kind {
		case kDecimal, kUlong:
			return decimalText(x, c.Scale), nil
		case kBytes:
			return "X'" + hex.EncodeToString(x) + "'", nil
		}
	}
	return "", fmt.Errorf("column %s (%s): key value %T has no literal", c.Name, c.Type, v)
}

// decimalText is the decimal text of an Avro decimal (big-endian two's
// complement of the unscaled value) at scale; decimalBytes reversed.
func decimalText(b []byte, scale int) string {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	s := n.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if scale > 0 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
