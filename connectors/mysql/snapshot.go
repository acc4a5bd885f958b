package mysql

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"go.uber.org/zap"

	"weir/connectors"
)

// The snapshot reads every captured table inside one transaction started
// WITH CONSISTENT SNAPSHOT, so every row it emits is the row as of one
// binlog position; streaming then starts at exactly that position, so
// the hand-off has neither a gap nor a duplicate.
//
//   - MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT makes the server
//     report the binlog position of that snapshot (status variables
//     binlog_snapshot_file / binlog_snapshot_position), and
//     BINLOG_GTID_POS gives its GTID position. No lock is taken.
//   - MySQL: FLUSH TABLES WITH READ LOCK, START TRANSACTION WITH
//     CONSISTENT SNAPSHOT, SHOW MASTER STATUS, UNLOCK TABLES: the global
//     read lock is held only for those three statements.
//
// Tables are read in chunks of snapshot_chunk_rows ordered by primary
// key (WHERE pk > last ORDER BY pk LIMIT n), one chunk per Poll. Every
// record carries the table and the key of its row as position, so a
// restarted snapshot continues after the last acknowledged row. A resumed
// snapshot reads the remaining rows in a new consistent snapshot, at a
// newer binlog position; streaming still starts at the first snapshot's
// position, and the changes between the two positions to rows the
// resumed snapshot read are dropped (resume.go), so no change is missed
// or sent twice. Tables without a primary key (no_primary_key =
// all_columns) are read in one pass and restart from their first row.

type snapshotter struct {
	s     *Source
	conn  *client.Conn
	start Position // where streaming starts: the first snapshot's position, with its resumes (Win)
	read  Position // binlog coordinates the rows read now are consistent with (start, unless resumed)
	tsMs  int64

	tables []string // db \x00 table, sorted
	idx    int
	cur    *tableState
	key    [][]byte // key (text form) of the last row read in cur
	offset int64    // rows read of a keyless table
	done   bool     // cur is read completely
	resume *SnapPos // stored progress to continue from (first table only)

	version int64 // of every row: positionVersion(read)

	held    *change // the newest row read, emitted once the next is known
	heldPos Position
}

// beginSnapshot opens the snapshot transaction. from is the stored
// position of an interrupted snapshot (nil: a new snapshot).
func (s *Source) beginSnapshot(ctx context.Context, from *Position) (*snapshotter, error) {
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	sn := &snapshotter{s: s, conn: c, tsMs: time.Now().UnixMilli()}
	fail := func(what string, err error) (*snapshotter, error) {
		c.Close()
		return nil, s.classify(what, err)
	}
	if _, err := c.Execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return fail("setting isolation level", err)
	}
	if s.si.flavor == gmysql.MariaDBFlavor {
		if _, err := c.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
			return fail("starting the snapshot transaction", err)
		}
		r, err := c.Execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
		if err != nil {
			return fail("reading the snapshot's binlog position", err)
		}
		for _, row := range r.Values {
			switch string(row[0].AsString()) {
			case "Binlog_snapshot_file":
				sn.start.File = string(row[1].AsString())
			case "Binlog_snapshot_position":
				var p uint64
				fmt.Sscan(string(row[1].AsString()), &p)
				sn.start.Pos = uint32(p)
			}
		}
		r.Close()
		if sn.start.File == "" {
			c.Close()
			return nil, fmt.Errorf("%w: %s reports no binlog_snapshot_file; is log_bin on?", ErrServerConfig, s.addr())
		}
		row, err := queryString(c, fmt.Sprintf("SELECT BINLOG_GTID_POS('%s', %d)", sn.start.File, sn.start.Pos))
		if err != nil {
			return fail("BINLOG_GTID_POS", err)
		}
		sn.start.GTID = row[0]
	} else {
		if _, err := c.Execute("FLUSH TABLES WITH READ LOCK"); err != nil {
			return fail("FLUSH TABLES WITH READ LOCK", err)
		}
		if _, err := c.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
			c.Execute("UNLOCK TABLES")
			return fail("starting the snapshot transaction", err)
		}
		p, err := s.currentPosition(c, s.si)
		c.Execute("UNLOCK TABLES")
		if err != nil {
			c.Close()
			return nil, err
		}
		sn.start = p
	}
	sn.read = sn.start
	if from != nil {
		// Continue an interrupted snapshot: stream from where the first
		// one started, read the rows not yet read in this transaction,
		// and drop the binlog's changes to them up to this transaction's
		// position (resume.go).
		r := Resume{File: sn.read.File, Pos: sn.read.Pos, GTID: sn.read.GTID, Table: from.Snap.Table, Key: from.Snap.Key, Done: from.Snap.Done}
		sn.start = Position{File: from.File, Pos: from.Pos, GTID: from.GTID, Win: append(slices.Clip(from.Win), r)}
		sn.resume = from.Snap
	}
	sn.version = s.positionVersion(sn.read)
	r, err := c.Execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'")
	if err != nil {
		return fail("listing tables", err)
	}
	for _, row := range r.Values {
		db, t := string(row[0].AsString()), string(row[1].AsString())
		if s.cfg.captureTable(db, t) {
			sn.tables = append(sn.tables, db+"\x00"+t)
		}
	}
	r.Close()
	sort.Strings(sn.tables)
	if sn.resume != nil {
		want := strings.Replace(sn.resume.Table, ".", "\x00", 1)
		for sn.idx < len(sn.tables) && sn.tables[sn.idx] < want {
			sn.idx++
		}
		if sn.idx < len(sn.tables) && sn.tables[sn.idx] == want && sn.resume.Done {
			sn.idx++
			sn.resume = nil
		}
	}
	s.log.Info("snapshot started", zap.String("position", sn.start.String()), zap.Int("tables", len(sn.tables)-sn.idx),
		zap.Bool("resumed", from != nil), zap.String("read_at", sn.read.String()))
	return sn, nil
}

// snapshotChunkHook, when set (tests only), is called before each chunk
// of the snapshot is read, with the table and the key the chunk follows;
// true holds the snapshot there: the poll returns without reading (and
// the runtime commits what it has between polls). Tests hold the
// snapshot at a chosen row with it.
var snapshotChunkHook atomic.Pointer[func(ctx context.Context, table string, after [][]byte) bool]

func (sn *snapshotter) close() {
	if sn.conn != nil {
		sn.conn.Close()
		sn.conn = nil
	}
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// openTable loads the schema of tables[idx] as of the snapshot.
func (sn *snapshotter) openTable(ctx context.Context) (skip bool, err error) {
	db, name, _ := strings.Cut(sn.tables[sn.idx], "\x00")
	t, err := sn.s.loadTable(sn.conn, db, name)
	if err != nil {
		return false, err
	}
	if t == nil {
		return false, fmt.Errorf("%w: %s.%s was dropped after the snapshot started (at %s), so its rows as of the snapshot cannot be read; restart the connector: the new snapshot leaves the table out, and the binlog carries its changes and its DROP from the snapshot's position on",
			ErrTableDropped, db, name, sn.start)
	}
	sk, err := t.resolve(sn.s.cfg)
	if err == nil {
		err = t.checkRulesExist(t.missingRules)
	}
	if err != nil || sk {
		if sk {
			sn.s.log.Warn("table without primary key skipped (no_primary_key = skip)", zap.String("table", t.fullName()))
			sn.s.sc.Metrics().Event("table_skipped")
		}
		return sk, err
	}
	ts := &tableState{Table: t, topic: sn.s.cfg.TableTopic(db, name)}
	if err := sn.s.enc.prepare(ctx, ts); err != nil {
		return false, err
	}
	sn.cur, sn.key, sn.offset, sn.done = ts, nil, 0, false
	if sn.resume != nil && sn.resume.Table == t.fullName() && !t.KeyAll {
		sn.key = sn.resume.Key
	}
	sn.resume = nil
	return false, nil
}

// poll reads the next chunk into buf. finished reports that every table
// was read and buf holds the last snapshot record.
func (sn *snapshotter) poll(ctx context.Context, buf []connectors.SourceRecord) (_ []connectors.SourceRecord, finished bool, err error) {
	for sn.cur == nil || sn.done {
		if sn.cur != nil {
			sn.idx++
			sn.cur = nil
		}
		if sn.idx >= len(sn.tables) {
			if sn.held != nil {
				sn.held.src.snapshot = "last"
				buf, err = sn.release(ctx, buf, sn.start)
			}
			return buf, true, err
		}
		skip, err := sn.openTable(ctx)
		if err != nil {
			return buf, false, err
		}
		if skip {
			sn.idx++
		}
	}
	t := sn.cur
	limit := sn.s.cfg.ChunkRows
	if t.KeyAll {
		limit = 0 // one pass: no stable order to resume from
	}
	if hook := snapshotChunkHook.Load(); hook != nil && (*hook)(ctx, t.fullName(), sn.key) {
		return buf, false, nil
	}
	var rerr error
	n, err := selectChunk(sn.conn, t, sn.key, nil, limit, func(vals []any, key [][]byte) error {
		pos := Position{File: sn.start.File, Pos: sn.start.Pos, GTID: sn.start.GTID, Win: sn.start.Win, Snap: &SnapPos{Table: t.fullName()}}
		if t.KeyAll {
			sn.offset++
			pos.Snap.Rows = sn.offset
		} else {
			sn.key = key
			pos.Snap.Key = key
		}
		ch := &change{op: 'r', t: t, after: vals, src: sourceInfo{serverID: sn.s.si.serverID, tsMs: sn.tsMs, snapshot: "true",
			file: sn.read.File, pos: sn.read.Pos, version: sn.version}}
		if sn.held != nil {
			if buf, rerr = sn.release(ctx, buf, sn.heldPos); rerr != nil {
				return rerr
			}
		}
		sn.held, sn.heldPos = ch, pos
		return nil
	})
	if err != nil {
		if myError(err) == nil && strings.HasPrefix(err.Error(), "snapshot of") {
			return buf, false, err
		}
		return buf, false, sn.s.classify("snapshot of "+t.fullName(), err)
	}
	if t.KeyAll || n < limit {
		sn.done = true
		if sn.held != nil && sn.held.t == t {
			sn.heldPos.Snap.Done = true
		}
	}
	return buf, false, nil
}

// selectChunk reads up to limit rows of t (0: all) whose primary key
// follows after (nil: from the first) and is not above upTo (nil: no
// bound), in primary key order, and calls fn with each row's values
// (Avro native form per column) and its key (text form; nil for keyless
// tables). It returns the number of rows. The initial snapshot and
// incremental snapshots read chunks with it.
func selectChunk(c *client.Conn, t *tableState, after, upTo [][]byte, limit int, fn func(vals []any, key [][]byte) error) (int, error) {
	var q strings.Builder
	q.WriteString("SELECT ")
	for i, c := range t.Columns {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(c.selectExpr())
	}
	q.WriteString(" FROM " + quoteIdent(t.DB) + "." + quoteIdent(t.Name))
	if !t.KeyAll {
		switch {
		case after != nil && upTo != nil:
			q.WriteString(" WHERE (" + t.keyCompare(after, ">", ">") + ") AND (" + t.keyCompare(upTo, "<", "<=") + ")")
		case after != nil:
			q.WriteString(" WHERE " + t.keyCompare(after, ">", ">"))
		case upTo != nil:
			q.WriteString(" WHERE " + t.keyCompare(upTo, "<", "<="))
		}
		q.WriteString(" ORDER BY ")
		for i, k := range t.PK {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(quoteIdent(t.Columns[k].Name))
		}
		if limit > 0 {
			fmt.Fprintf(&q, " LIMIT %d", limit)
		}
	}
	n := 0
	var rerr error
	var res gmysql.Result
	err := c.ExecuteSelectStreaming(q.String(), &res, func(row []gmysql.FieldValue) error {
		n++
		vals := make([]any, len(t.Columns))
		for i := range t.Columns {
			if t.Columns[i].Skip {
				continue
			}
			v, err := t.Columns[i].value(textValue(&row[i]))
			if err != nil {
				rerr = fmt.Errorf("snapshot of %s: %w", t.fullName(), err)
				return rerr
			}
			vals[i] = v
		}
		var key [][]byte
		if !t.KeyAll {
			key = make([][]byte, len(t.PK))
			for i, k := range t.PK {
				key[i] = keyText(&row[k])
			}
		}
		if err := fn(vals, key); err != nil {
			rerr = err
			return err
		}
		return nil
	}, nil)
	if rerr != nil {
		return n, rerr
	}
	return n, err
}

// selectExpr is what a chunk SELECTs for column c.
func (c *Column) selectExpr() string {
	switch {
	case c.Skip:
		return "NULL" // left out (excluded, unsupported): not read, positions kept
	case c.Kind == kFloat:
		// The text protocol prints a FLOAT with 6 significant digits; as
		// a DOUBLE it is printed exactly.
		return "(" + quoteIdent(c.Name) + " + 0e0)"
	}
	return quoteIdent(c.Name)
}

// keyText is the text form of a primary key value as chunks keep it.
func keyText(fv *gmysql.FieldValue) []byte {
	if fv.Type == gmysql.FieldValueTypeString {
		return append([]byte(nil), fv.AsString()...)
	}
	return []byte(fv.String())
}

// keyCompare is the SQL condition comparing the primary key with key
// (text form) in key order, expanded so the server can use the index:
// (a op x) OR (a = x AND b op y) OR ... with last for the last column.
func (t *Table) keyCompare(key [][]byte, op, last string) string {
	var q strings.Builder
	for i := range t.PK {
		if i > 0 {
			q.WriteString(" OR ")
		}
		q.WriteByte('(')
		for j := 0; j < i; j++ {
			c := &t.Columns[t.PK[j]]
			fmt.Fprintf(&q, "%s = %s AND ", quoteIdent(c.Name), c.textLiteral(key[j]))
		}
		c := &t.Columns[t.PK[i]]
		o := op
		if i == len(t.PK)-1 {
			o = last
		}
		fmt.Fprintf(&q, "%s %s %s)", quoteIdent(c.Name), o, c.textLiteral(key[i]))
	}
	return q.String()
}

// release turns the held row into records at position pos.
func (sn *snapshotter) release(ctx context.Context, buf []connectors.SourceRecord, pos Position) ([]connectors.SourceRecord, error) {
	ch := sn.held
	sn.held = nil
	n := len(buf)
	buf, err := sn.s.changeRecords(ctx, buf, ch)
	if err != nil {
		return buf[:n], err
	}
	p := pos.encode()
	for i := n; i < len(buf); i++ {
		buf[i].SourcePartition, buf[i].Position = SourcePartition, p
	}
	sn.s.pos = pos
	return buf, nil
}

// loadTable reads db.name's schema from information_schema (nil when the
// table does not exist).
func (s *Source) loadTable(c *client.Conn, db, name string) (*Table, error) {
	r, err := c.Execute(`SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, NUMERIC_PRECISION, NUMERIC_SCALE,
		DATETIME_PRECISION, CHARACTER_SET_NAME, CHARACTER_OCTET_LENGTH
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, name)
	if err != nil {
		return nil, s.classify("reading the columns of "+db+"."+name, err)
	}
	var cols []infoColumn
	for _, row := range r.Values {
		ic := infoColumn{Name: string(row[0].AsString()), DataType: strings.ToLower(string(row[1].AsString())),
			ColumnType: strings.ToLower(string(row[2].AsString())), Nullable: string(row[3].AsString()) == "YES",
			Precision: int(intOf(&row[4])), Scale: int(intOf(&row[5])), DatetimePrecision: int(intOf(&row[6])),
			Charset: string(row[7].AsString()), OctetLength: intOf(&row[8])}
		cols = append(cols, ic)
	}
	r.Close()
	if len(cols) == 0 {
		return nil, nil
	}
	r, err = c.Execute(`SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`, db, name)
	if err != nil {
		return nil, s.classify("reading the primary key of "+db+"."+name, err)
	}
	var pk []string
	for _, row := range r.Values {
		pk = append(pk, string(row[0].AsString()))
	}
	r.Close()
	return fromInfoSchema(db, name, cols, pk), nil
}

func intOf(fv *gmysql.FieldValue) int64 {
	switch fv.Type {
	case gmysql.FieldValueTypeSigned:
		return fv.AsInt64()
	case gmysql.FieldValueTypeUnsigned:
		return int64(fv.AsUint64())
	case gmysql.FieldValueTypeString:
		var n int64
		fmt.Sscan(string(fv.AsString()), &n)
		return n
	}
	return 0
}
