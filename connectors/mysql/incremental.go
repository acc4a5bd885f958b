package mysql

// Incremental snapshots while streaming: the watermark algorithm of
// DBLog (Andreas Andreakis, Ioannis Papapanagiotou, "DBLog: A
// Watermark Based Change-Data-Capture Framework", 2020), as Debezium's
// signals run it.
//
// A table is read in chunks of incremental_snapshot_chunk_rows ordered by
// primary key, by a second connection, while the binlog stream goes on.
// For every chunk the source
//
//  1. writes a low watermark: an upsert of its row of the signal table
//     (type snapshot-window-open, data = a new chunk id);
//  2. SELECTs the chunk (the rows after the last key covered, in key
//     order, up to the largest key the table had when its snapshot
//     began) into memory;
//  3. writes a high watermark (type snapshot-window-close, same id).
//
// Both watermarks are transactions of their own, so they appear in the
// binlog in commit order with the changes around them. While the stream
// is between the two watermarks (the window), every change of the
// chunk's table removes the keys of its before and after images from the
// chunk: the change itself is emitted from the binlog and may or may not
// be what the SELECT saw. At the high watermark the rows left are
// emitted as op "r" (source.snapshot "incremental") with the version of
// the high watermark's event, then the next chunk starts. A row's "r"
// therefore never overtakes a change of it: every change committed
// before the low watermark was visible to the SELECT and was emitted
// before the window, and every later one follows the "r".
//
// Progress (IncPos: the queue of tables and the last key covered in the
// first) travels in the Position of every record, so a restarted source
// continues at the last acknowledged chunk (or row); watermarks of a
// chunk interrupted by the restart carry an id nobody waits for and are
// ignored.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/replication"
	"go.uber.org/zap"

	"weir/connectors"
)

// IncPos is the progress of incremental snapshots (Position.Inc).
type IncPos struct {
	Tables []string `json:"t"`           // db.table queue; Tables[0] is being read
	Key    [][]byte `json:"k,omitempty"` // primary key (text form) up to which Tables[0] is covered
}

// Signal types of the signal table (Debezium's names).
const (
	SignalExecuteSnapshot = "execute-snapshot"
	SignalStopSnapshot    = "stop-snapshot"
	signalWindowOpen      = "snapshot-window-open"
	signalWindowClose     = "snapshot-window-close"
)

// incremental is the incremental-snapshot state of a streamer.
type incremental struct {
	s    *Source
	conn *client.Conn // watermarks and chunk SELECTs (opened on demand)

	tables []string // queue, db.table
	key    [][]byte // Tables[0] covered up to this key
	max    [][]byte // Tables[0]'s largest key when its snapshot began (nil: not read yet)
	pos    *IncPos  // tables/key as stored in positions (nil: idle)

	ch *chunk // the chunk between its watermarks
}

// chunk is one chunk read between a low and a high watermark.
type chunk struct {
	id     string
	t      *tableState
	rows   []*change
	keys   [][][]byte     // text key of rows[i]
	index  map[string]int // keyString → index in rows
	last   [][]byte       // key of the chunk's last row
	final  bool           // fewer rows than asked: the table ends here
	open   bool           // the low watermark was seen in the binlog
	closed bool           // the high watermark was seen; emit at its commit
	verPos uint32         // start of the high watermark's rows event
	verLog string
	ver    int64 // version of the chunk's rows: the high watermark's, as a change (doc.go)

	started time.Time
}

func newIncremental(s *Source, p *IncPos) *incremental {
	in := &incremental{s: s}
	if p != nil {
		in.tables = append([]string(nil), p.Tables...)
		in.key = p.Key
		in.pos = p
	}
	return in
}

func (in *incremental) close() {
	if in.conn != nil {
		in.conn.Close()
		in.conn = nil
	}
}

// progress recomputes the IncPos records carry from now on.
func (in *incremental) progress() {
	if len(in.tables) == 0 {
		in.pos = nil
		return
	}
	in.pos = &IncPos{Tables: append([]string(nil), in.tables...), Key: in.key}
}

func (in *incremental) side(ctx context.Context) (*client.Conn, error) {
	if in.conn == nil {
		c, err := in.s.connect(ctx)
		if err != nil {
			return nil, err
		}
		in.conn = c
	}
	return in.conn, nil
}

func newChunkID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// watermarkID is the signal table row the source upserts its watermarks
// into (one row per source, so the table does not grow).
func (s *Source) watermarkID() string { return fmt.Sprintf("weir-wm-%d", s.cfg.ServerID) }

// next starts the next chunk when the queue is not empty and no chunk
// is waiting for its watermarks.
func (in *incremental) next(ctx context.Context) error {
	for in.ch == nil && len(in.tables) > 0 {
		started, err := in.startChunk(ctx)
		if err != nil || started {
			return err
		}
	}
	return nil
}

// startChunk writes the low watermark, reads the chunk and writes the
// high watermark. It returns false when the head of the queue was
// dropped instead (table gone, no longer captured, no primary key).
func (in *incremental) startChunk(ctx context.Context) (bool, error) {
	s := in.s
	full := in.tables[0]
	db, name, _ := strings.Cut(full, ".")
	c, err := in.side(ctx)
	if err != nil {
		return false, err
	}
	drop := func(why string) (bool, error) {
		s.log.Warn("incremental snapshot: table dropped from the queue", zap.String("table", full), zap.String("reason", why))
		s.sc.Metrics().Event("incremental_snapshot_skipped")
		in.nextTable()
		in.progress()
		return false, nil
	}
	if !s.cfg.captureTable(db, name) {
		return drop("not captured (include/exclude settings)")
	}
	t, err := s.loadTable(c, db, name)
	if err != nil {
		return false, err
	}
	if t == nil {
		return drop("no such table")
	}
	if skip, err := t.resolve(s.cfg); err != nil || skip || t.KeyAll {
		return drop("no primary key (incremental snapshots read chunks in primary key order)")
	}
	ts := &tableState{Table: t, topic: s.cfg.TableTopic(db, name)}
	if err := s.enc.prepare(ctx, ts); err != nil {
		return false, err
	}
	ch := &chunk{id: newChunkID(), t: ts, index: map[string]int{}, started: time.Now()}
	if err := in.watermark(c, signalWindowOpen, ch.id); err != nil {
		return false, err
	}
	if in.max == nil {
		if in.max, err = maxKey(c, ts); err != nil {
			return false, s.classify("incremental snapshot of "+full, err)
		}
	}
	limit := s.cfg.IncrementalChunkRows
	n, err := selectChunk(c, ts, in.key, in.max, limit, func(vals []any, key [][]byte) error {
		ch.index[keyString(ts, vals)] = len(ch.rows)
		ch.rows = append(ch.rows, &change{op: 'r', t: ts, after: vals})
		ch.keys = append(ch.keys, key)
		ch.last = key
		return nil
	})
	if err != nil {
		if myError(err) == nil && strings.HasPrefix(err.Error(), "snapshot of") {
			return false, err
		}
		return false, s.classify("incremental snapshot of "+full, err)
	}
	ch.final = n < limit || in.max == nil || sameKey(ch.last, in.max)
	if err := in.watermark(c, signalWindowClose, ch.id); err != nil {
		return false, err
	}
	in.ch = ch
	return true, nil
}

// nextTable moves the queue to its next table.
func (in *incremental) nextTable() {
	in.tables, in.key, in.max = in.tables[1:], nil, nil
}

// maxKey reads t's largest primary key (text form; nil: t is empty). A
// table's snapshot ends there, as Debezium's does: rows inserted with
// larger keys after it began come from the binlog, so a snapshot
// finishes even while inserts keep extending the table.
func maxKey(c *client.Conn, t *tableState) ([][]byte, error) {
	cols, order := make([]string, len(t.PK)), make([]string, len(t.PK))
	for i, k := range t.PK {
		cols[i] = t.Columns[k].selectExpr()
		order[i] = quoteIdent(t.Columns[k].Name) + " DESC"
	}
	r, err := c.Execute("SELECT " + strings.Join(cols, ",") + " FROM " + quoteIdent(t.DB) + "." + quoteIdent(t.Name) +
		" ORDER BY " + strings.Join(order, ",") + " LIMIT 1")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if len(r.Values) == 0 {
		return nil, nil
	}
	key := make([][]byte, len(t.PK))
	for i := range key {
		key[i] = keyText(&r.Values[0][i])
	}
	return key, nil
}

func sameKey(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

// watermark upserts the source's watermark row of the signal table.
func (in *incremental) watermark(c *client.Conn, typ, id string) error {
	s := in.s
	db, name, _ := strings.Cut(s.cfg.SignalTable, ".")
	q := "INSERT INTO " + quoteIdent(db) + "." + quoteIdent(name) + " VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE " +
		quoteIdent("type") + " = VALUES(" + quoteIdent("type") + "), " + quoteIdent("data") + " = VALUES(" + quoteIdent("data") + ")"
	if _, err := c.Execute(q, s.watermarkID(), typ, id); err != nil {
		if me := myError(err); me != nil && (me.Code == 1142 || me.Code == 1146) {
			return fmt.Errorf("%w: writing the %s watermark into signal_table %s: %v; the connector's user needs INSERT and UPDATE on it",
				ErrServerConfig, typ, s.cfg.SignalTable, err)
		}
		return s.classify("writing an incremental snapshot watermark into "+s.cfg.SignalTable, err)
	}
	return nil
}

// keyString identifies a row's primary key (binlog and SELECT values
// convert to the same native values).
func keyString(t *tableState, row []any) string {
	var b strings.Builder
	for _, i := range t.PK {
		fmt.Fprintf(&b, "%v\x00", row[i])
	}
	return b.String()
}

// changed drops the keys of a streamed change of the chunk's table from
// an open chunk.
func (in *incremental) changed(t *tableState, before, after []any) {
	ch := in.ch
	if ch == nil || !ch.open || ch.closed || t.DB != ch.t.DB || t.Name != ch.t.Name {
		return
	}
	for _, row := range [][]any{before, after} {
		if row == nil {
			continue
		}
		k := keyString(t, row)
		if i, ok := ch.index[k]; ok {
			ch.rows[i] = nil
			delete(ch.index, k)
		}
	}
}

// signal handles a rows event of the signal table.
func (st *streamer) signal(ctx context.Context, h *replication.EventHeader, ev *replication.RowsEvent) error {
	in := st.inc
	step := 1
	switch ev.Type() {
	case replication.EnumRowsEventTypeInsert:
	case replication.EnumRowsEventTypeUpdate:
		step = 2
	default:
		return nil
	}
	for i := 0; i+step <= len(ev.Rows); i += step {
		row := ev.Rows[i+step-1] // the after image
		if len(row) < 3 {
			return fmt.Errorf("%w: signal_table %s has %d columns; it needs id, type, data", ErrServerConfig, st.s.cfg.SignalTable, len(row))
		}
		id, typ, data := str(row[0]), str(row[1]), str(row[2])
		switch typ {
		case signalWindowOpen, signalWindowClose:
			if in.ch == nil || data != in.ch.id || id != st.s.watermarkID() {
				continue // another source's, or a chunk abandoned by a restart
			}
			if typ == signalWindowOpen {
				in.ch.open = true
			} else {
				in.ch.closed, in.ch.verLog, in.ch.verPos = true, st.file, h.LogPos-h.EventSize
				in.ch.ver = st.version(st.txChange, uint64(h.LogPos-h.EventSize)+uint64(i/step))
			}
		case SignalExecuteSnapshot, SignalStopSnapshot:
			if step == 2 {
				continue // signals are inserts
			}
			if err := in.request(ctx, id, typ, data); err != nil {
				return err
			}
		}
	}
	return nil
}

// emit turns the rows left in the closed chunk into records at the
// position p (the boundary after the high watermark's transaction), and
// moves the progress past the chunk.
func (in *incremental) emit(ctx context.Context, buf []connectors.SourceRecord, p Position) ([]connectors.SourceRecord, error) {
	ch := in.ch
	in.ch = nil
	s := in.s
	ver := ch.ver
	now := time.Now().UnixMilli()
	n0 := len(buf)
	last := -1
	for i, r := range ch.rows {
		if r != nil {
			last = i
		}
	}
	for i, r := range ch.rows {
		if r == nil {
			continue
		}
		r.src = sourceInfo{serverID: s.si.serverID, tsMs: now, snapshot: "incremental", file: ch.verLog, pos: ch.verPos,
			version: ver}
		n := len(buf)
		var err error
		if buf, err = s.changeRecords(ctx, buf, r); err != nil {
			return buf[:n0], err
		}
		rp := p
		if i == last {
			in.finishChunk(ch)
			rp.Inc = in.pos
		} else {
			rp.Inc = &IncPos{Tables: in.tables, Key: ch.keys[i]}
		}
		e := rp.encode()
		for j := n; j < len(buf); j++ {
			buf[j].SourcePartition, buf[j].Position = SourcePartition, e
		}
		s.pos = rp
	}
	if last < 0 {
		in.finishChunk(ch)
	}
	s.sc.Metrics().Event("incremental_snapshot_chunk")
	if ce := s.log.Check(zap.DebugLevel, "incremental snapshot chunk"); ce != nil {
		ce.Write(zap.String("table", ch.t.fullName()), zap.Int("rows", len(ch.rows)), zap.Int("emitted", len(ch.index)),
			zap.Duration("took", time.Since(ch.started)))
	}
	if len(in.tables) == 0 {
		s.log.Info("incremental snapshot finished")
	}
	return buf, nil
}

// finishChunk moves the progress past ch.
func (in *incremental) finishChunk(ch *chunk) {
	if ch.final {
		in.s.log.Info("incremental snapshot of a table finished", zap.String("table", ch.t.fullName()))
		in.s.sc.Metrics().Event("incremental_snapshot_table_finished")
		in.nextTable()
	} else {
		in.key = ch.last
	}
	in.progress()
}
