package mysql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
)

// streamer follows the binlog from a position. It is driven by Poll: it
// never emits a record before the event that ends it was read, and it
// holds back the newest change of an open transaction so the last change
// of every transaction can say so (source.tx_end) and carry the position
// of the next transaction.
type streamer struct {
	s      *Source
	syncer *replication.BinlogSyncer
	ch     chan *replication.BinlogEvent
	errc   chan error
	stop   context.CancelFunc

	file     string
	gset     gmysql.GTIDSet // executed set (nil: server without GTIDs)
	boundary Position       // where the next transaction starts

	inTx     bool
	sawBegin bool
	tx       Position // start of the open transaction, GTID = set before it
	txGTID   string
	txCount  uint64 // gtidCount of the executed set after the open transaction (txGTID != "")
	txChange int    // changes of the open transaction so far
	txSeq    int    // records of the open transaction so far (emitted or skipped)
	skip     int    // records of the first transaction already emitted before a restart
	held     *change

	inc    *incremental           // incremental snapshots (incremental.go)
	win    *window                // changes a resumed snapshot read (resume.go)
	tables map[string]*tableState // TableMapEvent fingerprint → table
	live   map[string]*Table      // db.table → live schema (servers without FULL metadata)
	lastHB time.Time
}

// syncHandler hands events from the syncer's goroutine to Poll.
type syncHandler struct {
	ch   chan *replication.BinlogEvent
	done <-chan struct{}
}

var errStreamStopped = errors.New("binlog stream stopped")

func (h *syncHandler) HandleEvent(e *replication.BinlogEvent) error {
	if g, ok := e.Event.(*replication.MariadbGTIDEvent); ok {
		// The syncer keeps &g.GTID in its own GTID set (when started by
		// GTID) and advances it in place at later GTID events of the same
		// domain and server, while this event may still wait in h.ch: it
		// would then name a later transaction. Hand over a copy.
		cp, ec := *g, *e
		ec.Event = &cp
		e = &ec
	}
	select {
	case h.ch <- e:
		return nil
	case <-h.done:
		return errStreamStopped
	}
}

// beginStream starts reading the binlog at from.
func (s *Source) beginStream(ctx context.Context, from Position) (*streamer, error) {
	c, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	err = s.checkPurged(c, from)
	if err == nil && s.cfg.SignalTable != "" {
		err = s.ensureSignalTable(c)
		if err == nil && s.cfg.SnapshotAddedTables {
			err = s.snapshotAddedTables(c)
		}
	}
	c.Close()
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	st := &streamer{s: s, ch: make(chan *replication.BinlogEvent, 1024), errc: make(chan error, 1), stop: cancel,
		file: from.File, skip: from.Skip, tables: map[string]*tableState{}, live: map[string]*Table{}, lastHB: time.Now(),
		inc: newIncremental(s, from.Inc), win: &window{s: s, res: from.Win}}
	st.boundary = Position{File: from.File, Pos: from.Pos, GTID: from.GTID}
	if s.si.gtidMode {
		g := from.GTID
		st.gset, err = parseGTIDSet(s.si.flavor, g)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("connector %q: stored GTID set %q: %w", s.cfg.Name, g, err)
		}
	}
	hb := s.cfg.HeartbeatInterval
	if hb <= 0 {
		hb = 10 * time.Second
	}
	dialer := &net.Dialer{Timeout: s.cfg.ConnectTimeout}
	host, port, _ := net.SplitHostPort(s.addr())
	portN, _ := strconv.Atoi(port)
	tc, err := s.tlsFor(s.addr())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: mysql source %q: %v", connectors.ErrConfig, s.cfg.Name, err)
	}
	cfg := replication.BinlogSyncerConfig{TLSConfig: tc,
		ServerID: s.cfg.ServerID, Flavor: s.si.flavor, Host: host, Port: uint16(portN),
		User: s.cfg.User, Password: s.cfg.Password, Charset: "utf8mb4",
		TimestampStringLocation: time.UTC, HeartbeatPeriod: hb, ReadTimeout: 3 * hb,
		DisableRetrySync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Dialer:                  dialer.DialContext,
		SynchronousEventHandler: &syncHandler{ch: st.ch, done: sctx.Done()},
	}
	st.syncer = replication.NewBinlogSyncer(cfg)
	var bs *replication.BinlogStreamer
	if s.cfg.PositionMode == "gtid" && st.gset != nil && from.GTID != "" {
		bs, err = st.syncer.StartSyncGTID(st.gset.Clone())
	} else {
		bs, err = st.syncer.StartSync(gmysql.Position{Name: from.File, Pos: from.Pos})
	}
	if err != nil {
		st.close()
		return nil, s.classify("starting the binlog dump", err)
	}
	go func() {
		for {
			_, err := bs.GetEvent(sctx)
			if err != nil {
				if sctx.Err() == nil {
					st.errc <- err
				}
				return
			}
		}
	}()
	s.log.Info("binlog streaming started", zap.String("server", s.addr()), zap.String("position", from.String()), zap.String("flavor", s.si.flavor),
		zap.Bool("row_metadata_full", s.si.metaFull))
	return st, nil
}

func (st *streamer) close() {
	st.stop()
	st.inc.close()
	st.win.close()
	if st.syncer != nil {
		st.syncer.Close()
	}
}

const maxPollRecords = 4096

// poll reads events until it has records and no event is waiting, the
// batch is full, or about a second passed.
func (st *streamer) poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	n0 := len(buf)
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for len(buf)-n0 < maxPollRecords {
		if err := st.inc.next(ctx); err != nil {
			return buf, err
		}
		var e *replication.BinlogEvent
		select {
		case e = <-st.ch:
		default:
			if len(buf) > n0 {
				return buf, nil
			}
			select {
			case e = <-st.ch:
			case err := <-st.errc:
				return buf, st.s.classify("reading the binlog", err)
			case <-timer.C:
				return st.heartbeat(buf)
			case <-ctx.Done():
				return buf, nil
			}
		}
		var err error
		if buf, err = st.handle(ctx, buf, e); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// heartbeat emits a heartbeat record when the position moved past the
// last record (events of tables not captured) and the interval passed.
func (st *streamer) heartbeat(buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	s := st.s
	if s.cfg.HeartbeatInterval <= 0 || s.cfg.HeartbeatTopic == "" || st.inTx || time.Since(st.lastHB) < s.cfg.HeartbeatInterval {
		return buf, nil
	}
	st.lastHB = time.Now()
	if st.boundary.File == s.pos.File && st.boundary.Pos == s.pos.Pos && s.pos.Skip == 0 && s.pos.Snap == nil {
		return buf, nil
	}
	key, _ := json.Marshal(map[string]string{"server": s.cfg.ServerName})
	val, _ := json.Marshal(map[string]any{"ts_ms": time.Now().UnixMilli(), "file": st.boundary.File, "pos": st.boundary.Pos, "gtid": st.boundary.GTID})
	p := st.boundary
	p.Inc, p.Win = st.inc.pos, st.resumes()
	s.pos = p
	s.sc.Metrics().Event("heartbeat")
	return append(buf, connectors.SourceRecord{Topic: s.cfg.expand(s.cfg.HeartbeatTopic, "", ""), Key: key, Value: val,
		SourcePartition: SourcePartition, Position: p.encode()}), nil
}

func (st *streamer) gsetString() string {
	if st.gset == nil {
		return ""
	}
	return st.gset.String()
}

func (st *streamer) beginTx(h *replication.EventHeader, gtid string) error {
	st.inTx, st.sawBegin, st.txSeq, st.txChange, st.txGTID = true, false, 0, 0, gtid
	st.tx = Position{File: st.file, Pos: h.LogPos - h.EventSize, GTID: st.gsetString()}
	if gtid != "" && st.gset != nil {
		after := st.gset.Clone()
		if err := addGTID(after, gtid); err != nil {
			return fmt.Errorf("GTID %s at %s:%d: %w", gtid, st.file, h.LogPos, err)
		}
		st.txCount = gtidCount(after)
	}
	st.passResumes()
	return nil
}

// version is the external version of the open transaction's change-th
// change (0-based) at offset pos of the binlog (doc.go): from the GTID
// count when the transaction has a GTID, else from the file and offset.
func (st *streamer) version(change int, pos uint64) int64 {
	if st.txGTID != "" && st.gset != nil {
		if change == maxVersionChange+1 {
			st.s.log.Warn("transaction has more changes than versions can tell apart; its later changes share one version (a key changed twice among them keeps its first change in sinks that use weir.cdc.version)",
				zap.String("gtid", st.txGTID), zap.Int("changes", change))
		}
		return GTIDVersion(st.txCount, change)
	}
	return Version(st.file, pos)
}

func (st *streamer) handle(ctx context.Context, buf []connectors.SourceRecord, e *replication.BinlogEvent) ([]connectors.SourceRecord, error) {
	h := e.Header
	switch ev := e.Event.(type) {
	case *replication.RotateEvent:
		st.file = string(ev.NextLogName)
		if !st.inTx {
			st.boundary = Position{File: st.file, Pos: uint32(ev.Position), GTID: st.gsetString()}
		}
	case *replication.MariadbGTIDEvent:
		if err := st.beginTx(h, ev.GTID.String()); err != nil {
			return buf, err
		}
	case *replication.GTIDEvent:
		u, err := uuid.FromBytes(ev.SID)
		if err != nil {
			return buf, fmt.Errorf("binlog GTID event at %s:%d: %w", st.file, h.LogPos, err)
		}
		if err := st.beginTx(h, fmt.Sprintf("%s:%d", u, ev.GNO)); err != nil {
			return buf, err
		}
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(ev.Query))
		switch {
		case strings.EqualFold(q, "BEGIN"):
			if !st.inTx {
				st.beginTx(h, "") //nolint:errcheck // no GTID: no error
			}
			st.sawBegin = true
		case strings.EqualFold(q, "COMMIT"):
			return st.endTx(ctx, buf, h)
		case st.sawBegin:
			// a statement inside a row-based transaction (SAVEPOINT ...)
		default:
			if !st.inTx {
				st.beginTx(h, "") //nolint:errcheck // no GTID: no error
			}
			var err error
			if buf, err = st.ddl(buf, h, string(ev.Schema), q); err != nil {
				return buf, err
			}
			return st.endTx(ctx, buf, h)
		}
	case *replication.XIDEvent:
		return st.endTx(ctx, buf, h)
	case *replication.RowsEvent:
		return st.rows(ctx, buf, h, ev)
	}
	return buf, nil
}

// endTx closes the open transaction: the executed GTID set and the
// boundary move past it, and its held change is emitted as the last.
func (st *streamer) endTx(ctx context.Context, buf []connectors.SourceRecord, h *replication.EventHeader) ([]connectors.SourceRecord, error) {
	if st.txGTID != "" && st.gset != nil {
		if err := addGTID(st.gset, st.txGTID); err != nil {
			return buf, fmt.Errorf("GTID %s at %s:%d: %w", st.txGTID, st.file, h.LogPos, err)
		}
	}
	st.boundary = Position{File: st.file, Pos: h.LogPos, GTID: st.gsetString()}
	var err error
	if st.held != nil {
		buf, err = st.release(ctx, buf, true)
	}
	st.inTx, st.sawBegin, st.txSeq, st.txGTID, st.skip = false, false, 0, "", 0
	if err == nil && st.inc.ch != nil && st.inc.ch.closed {
		b := st.boundary
		b.Win = st.resumes()
		buf, err = st.inc.emit(ctx, buf, b) // the chunk's rows, after its high watermark
	}
	return buf, err
}

// release emits the held change; last marks the transaction's last.
func (st *streamer) release(ctx context.Context, buf []connectors.SourceRecord, last bool) ([]connectors.SourceRecord, error) {
	ch := st.held
	st.held = nil
	ch.src.txEnd = last
	ch.src.txSeq = st.txSeq + 1
	n := len(buf)
	buf, err := st.s.changeRecords(ctx, buf, ch)
	if err != nil {
		return buf[:n], err
	}
	w := n
	for i := n; i < len(buf); i++ {
		st.txSeq++
		if st.txSeq <= st.skip {
			continue // emitted before the restart
		}
		p := Position{File: st.tx.File, Pos: st.tx.Pos, GTID: st.tx.GTID, Skip: st.txSeq}
		if last && i == len(buf)-1 {
			p = st.boundary
		}
		p.Inc, p.Win = st.inc.pos, st.resumes()
		buf[i].SourcePartition, buf[i].Position = SourcePartition, p.encode()
		buf[w] = buf[i]
		w++
		st.s.pos = p
	}
	clear(buf[w:])
	return buf[:w], nil
}

func (st *streamer) rows(ctx context.Context, buf []connectors.SourceRecord, h *replication.EventHeader, ev *replication.RowsEvent) ([]connectors.SourceRecord, error) {
	tm := ev.Table
	if tm != nil && st.s.cfg.SignalTable != "" && string(tm.Schema)+"."+string(tm.Table) == st.s.cfg.SignalTable {
		return buf, st.signal(ctx, h, ev)
	}
	if tm == nil || !st.s.cfg.captureTable(string(tm.Schema), string(tm.Table)) {
		return buf, nil
	}
	t, err := st.table(tm)
	if err != nil || t == nil {
		return buf, err
	}
	var op byte
	step := 1
	switch ev.Type() {
	case replication.EnumRowsEventTypeInsert:
		op = 'c'
	case replication.EnumRowsEventTypeUpdate:
		op, step = 'u', 2
	case replication.EnumRowsEventTypeDelete:
		op = 'd'
	default:
		return buf, nil
	}
	start := h.LogPos - h.EventSize
	for i := 0; i+step <= len(ev.Rows); i += step {
		ch := &change{op: op, t: t, src: sourceInfo{serverID: h.ServerID, tsMs: int64(h.Timestamp) * 1000, snapshot: "false",
			gtid: st.txGTID, file: st.file, pos: start, row: i / step, txid: st.txid(),
			version: st.version(st.txChange, uint64(start)+uint64(i/step))}}
		st.txChange++
		row, err := st.convert(t, ev.Rows[i])
		if err != nil {
			return buf, fmt.Errorf("row %d of the event at %s:%d: %w", i/step, st.file, start, err)
		}
		switch op {
		case 'c':
			ch.after = row
		case 'd':
			ch.before = row
		case 'u':
			ch.before = row
			if ch.after, err = st.convert(t, ev.Rows[i+1]); err != nil {
				return buf, fmt.Errorf("row %d of the event at %s:%d: %w", i/step, st.file, start, err)
			}
		}
		st.inc.changed(t, ch.before, ch.after)
		if ch, err = st.windowed(ctx, ch); err != nil {
			return buf, err
		} else if ch == nil {
			continue // a resumed snapshot read the row after this change
		}
		if st.held != nil {
			if buf, err = st.release(ctx, buf, false); err != nil {
				return buf, err
			}
		}
		st.held = ch
	}
	return buf, nil
}

func (st *streamer) txid() string {
	if st.txGTID != "" {
		return st.txGTID
	}
	return fmt.Sprintf("%s:%d", st.tx.File, st.tx.Pos)
}

func (st *streamer) convert(t *tableState, raw []any) ([]any, error) {
	if len(raw) != len(t.Columns) {
		return nil, fmt.Errorf("%w: %s row has %d values for %d columns", ErrSchemaMismatch, t.fullName(), len(raw), len(t.Columns))
	}
	out := make([]any, len(raw))
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Skip {
			continue
		}
		v := raw[i]
		var err error
		if c.Kind == kUUID || c.Kind == kInet6 {
			v, err = c.fixedBinText(v)
		} else {
			v = binlogText(v, c.Charset)
		}
		if err == nil {
			v, err = c.value(v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.fullName(), err)
		}
		out[i] = v
	}
	return out, nil
}

// table returns the schema of the rows that follow a TableMapEvent: from
// the event's own metadata when the server logs it (FULL), else the live
// schema checked against the event. nil: the table is skipped.
func (st *streamer) table(tm *replication.TableMapEvent) (*tableState, error) {
	fp := string(mapFingerprint(tm))
	if t, ok := st.tables[fp]; ok {
		return t, nil
	}
	db, name := string(tm.Schema), string(tm.Table)
	t, ok := fromTableMap(tm, st.s.si.flavor, st.s.si.charsets)
	if ok {
		if err := st.fixedBinTypes(t); err != nil {
			return nil, err
		}
	} else {
		live, err := st.liveTable(db, name)
		if err != nil {
			return nil, err
		}
		if live == nil {
			return nil, fmt.Errorf("%w: binlog rows of %s, which no longer exists; the server must log binlog_row_metadata=FULL", ErrSchemaMismatch, db+"."+name)
		}
		if err := live.checkAgainstMap(tm, st.s.si.flavor); err != nil {
			return nil, err
		}
		cp := *live
		cp.Columns = append([]Column(nil), live.Columns...)
		cp.PK = append([]int(nil), live.PK...)
		t = &cp
	}
	skip, err := t.resolve(st.s.cfg)
	if err != nil {
		return nil, err
	}
	if len(t.missingRules) > 0 {
		st.s.log.Warn("table block names columns these binlog rows do not have", zap.String("table", t.fullName()), zap.Strings("columns", t.missingRules))
	}
	var ts *tableState
	if skip {
		st.s.log.Warn("table without primary key skipped (no_primary_key = skip)", zap.String("table", t.fullName()))
		st.s.sc.Metrics().Event("table_skipped")
	} else {
		ts = &tableState{Table: t, topic: st.s.cfg.TableTopic(db, name)}
	}
	st.tables[fp] = ts
	return ts, nil
}

// liveTable is db.name's schema from information_schema, read once
// after each DDL (nil: the table does not exist now).
func (st *streamer) liveTable(db, name string) (*Table, error) {
	if live, ok := st.live[db+"."+name]; ok {
		return live, nil
	}
	c, err := st.s.connect(context.Background())
	if err != nil {
		return nil, err
	}
	live, err := st.s.loadTable(c, db, name)
	c.Close()
	if err != nil {
		return nil, err
	}
	st.live[db+"."+name] = live
	return live, nil
}

// fixedBinTypes gives the columns a TableMapEvent shows as BINARY(16)
// the type the live schema names, UUID or INET6 (MariaDB logs those
// types as BINARY(16), with no type name even in FULL row metadata).
// The live schema is the table as of now, re-read after every DDL the
// stream passes: right while the stream is current, and wrong only for
// rows written before a later DDL that turned a column between
// BINARY(16), UUID and INET6 (doc.go).
func (st *streamer) fixedBinTypes(t *Table) error {
	if !slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Kind == kBytes && c.FixedLen == fixedBinLen }) {
		return nil
	}
	live, err := st.liveTable(t.DB, t.Name)
	if err != nil || live == nil {
		return err // a table dropped since: its BINARY(16) columns stay bytes
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Kind != kBytes || c.FixedLen != fixedBinLen {
			continue
		}
		for _, lc := range live.Columns {
			if strings.EqualFold(lc.Name, c.Name) && (lc.Kind == kUUID || lc.Kind == kInet6) {
				c.Kind, c.Type, c.FixedLen = lc.Kind, lc.Type, 0
			}
		}
	}
	return nil
}

var ddlTable = regexp.MustCompile("(?is)^\\s*(?:/\\*.*?\\*/\\s*)*(?:ALTER|CREATE|DROP|RENAME|TRUNCATE)\\s+(?:ONLINE\\s+|IGNORE\\s+|OR\\s+REPLACE\\s+)*(?:TEMPORARY\\s+)?(TABLE|DATABASE|SCHEMA|INDEX|VIEW|\\w+)?\\s*(?:IF\\s+(?:NOT\\s+)?EXISTS\\s+)?((?:`[^`]+`|[\\w$]+)(?:\\s*\\.\\s*(?:`[^`]+`|[\\w$]+))?)?")

// parseDDL finds the database and table a DDL statement names (table ""
// for database-level statements or statements it does not understand).
func parseDDL(defaultDB, q string) (db, table string) {
	m := ddlTable.FindStringSubmatch(q)
	if m == nil {
		return defaultDB, ""
	}
	unq := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
	obj := strings.ToUpper(m[1])
	if obj == "DATABASE" || obj == "SCHEMA" {
		return unq(m[2]), ""
	}
	if obj != "TABLE" || m[2] == "" {
		return defaultDB, ""
	}
	parts := splitQualified(m[2])
	if len(parts) == 2 {
		return unq(parts[0]), unq(parts[1])
	}
	return defaultDB, unq(m[2])
}

// splitQualified splits db.table at the dot outside backticks.
func splitQualified(s string) []string {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '`':
			quoted = !quoted
		case '.':
			if !quoted {
				return []string{s[:i], s[i+1:]}
			}
		}
	}
	return []string{s}
}

// ddl records a DDL statement on the schema-change topic and forgets
// live schemas it may change.
func (st *streamer) ddl(buf []connectors.SourceRecord, h *replication.EventHeader, schema, q string) ([]connectors.SourceRecord, error) {
	s := st.s
	db, table := parseDDL(schema, q)
	// Forget live schemas and the tables decoded with them: an ALTER
	// between BINARY(16) and UUID or INET6 leaves the TableMapEvent (the
	// cache's key) as it was.
	clear(st.live)
	clear(st.tables)
	if db == "" || !s.cfg.captureDB(db) || (table != "" && !s.cfg.captureTable(db, table)) {
		return buf, nil
	}
	if s.cfg.SchemaChangeTopic == "" {
		return buf, nil
	}
	s.sc.Metrics().Event("ddl")
	key, _ := json.Marshal(map[string]string{"server": s.cfg.ServerName, "db": db})
	val, _ := json.Marshal(map[string]any{
		"source": map[string]any{"name": s.cfg.ServerName, "server_id": h.ServerID, "ts_ms": int64(h.Timestamp) * 1000,
			"file": st.file, "pos": h.LogPos - h.EventSize, "gtid": st.txGTID},
		"db": db, "table": table, "ddl": q, "ts_ms": time.Now().UnixMilli(),
	})
	// The DDL ends its transaction: its position is the next boundary,
	// computed by endTx; set it here the same way.
	next := Position{File: st.file, Pos: h.LogPos}
	if st.txGTID != "" && st.gset != nil {
		g := st.gset.Clone()
		if err := addGTID(g, st.txGTID); err == nil {
			next.GTID = g.String()
		}
	} else {
		next.GTID = st.gsetString()
	}
	next.Inc, next.Win = st.inc.pos, st.resumes()
	s.pos = next
	return append(buf, connectors.SourceRecord{Topic: s.cfg.expand(s.cfg.SchemaChangeTopic, db, table), Key: key, Value: val,
		Timestamp: time.Unix(int64(h.Timestamp), 0), SourcePartition: SourcePartition, Position: next.encode(),
		Headers: []kgo.RecordHeader{{Key: HeaderVersion, Value: []byte(fmt.Sprint(st.version(st.txChange, uint64(h.LogPos-h.EventSize))))}}}), nil
}
