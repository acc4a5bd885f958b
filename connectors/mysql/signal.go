package mysql

// The signal table (signal_table, Debezium's layout): id VARCHAR(42)
// primary key, type VARCHAR(32), data VARCHAR(2048), read by position
// (first three columns). The source creates it when it is missing and
// reads its row events from the binlog, in order with every other change,
// whether or not its database is captured (it is never captured itself):
//
//	execute-snapshot  data {"data-collections": ["db.t", "db.p*"], "type": "incremental"}
//	                  queues an incremental snapshot of the captured tables
//	                  named (exact db.table names or glob patterns as in
//	                  include_tables). Optional "source": only the source
//	                  of that connector name acts on it.
//	stop-snapshot     data {"data-collections": [...]} drops those tables
//	                  (none named: all) from the queue.
//	snapshot-window-open/-close
//	                  the source's own watermarks, one row per source
//	                  (id weir-wm-<server_id>) upserted for every chunk.
//	captured-tables   the source's include/exclude settings as of its last
//	                  start (id weir-filters-<server_id>), when
//	                  snapshot_added_tables is on: a table the settings
//	                  capture now and did not then is snapshotted
//	                  incrementally (the source writes execute-snapshot).
//
// Users insert signals with SQL or with `weir connector snapshot`.

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	"go.uber.org/zap"
)

const signalCapturedTables = "captured-tables"

// signalData is the data of execute-snapshot and stop-snapshot signals.
type signalData struct {
	Collections []string `json:"data-collections"`
	Type        string   `json:"type,omitempty"`
	Source      string   `json:"source,omitempty"` // weir: only the source of this connector name
}

// filterSet is the capture settings stored as captured-tables.
type filterSet struct {
	IncludeDatabases []string `json:"include_databases,omitempty"`
	ExcludeDatabases []string `json:"exclude_databases,omitempty"`
	IncludeTables    []string `json:"include_tables,omitempty"`
	ExcludeTables    []string `json:"exclude_tables,omitempty"`
	TableBlocks      []string `json:"table_blocks,omitempty"` // db.table of each table block
}

func (c Config) filterSet() filterSet {
	f := filterSet{c.IncludeDatabases, c.ExcludeDatabases, c.IncludeTables, c.ExcludeTables, nil}
	for t := range c.Tables {
		f.TableBlocks = append(f.TableBlocks, t)
	}
	slices.Sort(f.TableBlocks)
	return f
}

func (f filterSet) config(signal string) Config {
	c := Config{IncludeDatabases: f.IncludeDatabases, ExcludeDatabases: f.ExcludeDatabases,
		IncludeTables: f.IncludeTables, ExcludeTables: f.ExcludeTables, SignalTable: signal}
	if len(f.TableBlocks) > 0 {
		c.Tables = map[string]*TableRules{}
		for _, t := range f.TableBlocks {
			c.Tables[t] = nil // only the names matter to captureTable
		}
	}
	return c
}

func (s *Source) signalIdent() string {
	db, name, _ := strings.Cut(s.cfg.SignalTable, ".")
	return quoteIdent(db) + "." + quoteIdent(name)
}

// ensureSignalTable creates the signal table when it does not exist.
func (s *Source) ensureSignalTable(c *client.Conn) error {
	db, name, _ := strings.Cut(s.cfg.SignalTable, ".")
	r, err := c.Execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, name)
	if err != nil {
		return s.classify("looking for signal_table "+s.cfg.SignalTable, err)
	}
	n := intOf(&r.Values[0][0])
	r.Close()
	if n > 0 {
		return nil
	}
	ddl := "CREATE TABLE IF NOT EXISTS " + s.signalIdent() + " (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048) NULL)"
	if _, err := c.Execute(ddl); err != nil {
		if myError(err) != nil {
			return fmt.Errorf("%w: signal_table %s does not exist and creating it failed (%v); create it (%s) and grant the connector's user INSERT and UPDATE on it",
				ErrServerConfig, s.cfg.SignalTable, err, ddl)
		}
		return s.classify("creating signal_table "+s.cfg.SignalTable, err)
	}
	s.log.Info("signal table created", zap.String("table", s.cfg.SignalTable))
	return nil
}

// capturedTables lists the tables cfg captures (db.table, sorted) that
// match one of pats (nil: all).
func (s *Source) capturedTables(c *client.Conn, cfg Config, pats []string) ([]string, error) {
	r, err := c.Execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE'")
	if err != nil {
		return nil, s.classify("listing tables", err)
	}
	defer r.Close()
	var out []string
	for _, row := range r.Values {
		db, t := string(row[0].AsString()), string(row[1].AsString())
		full := db + "." + t
		if !cfg.captureTable(db, t) || pats != nil && !slices.Contains(pats, full) && !matchAny(pats, full) {
			continue
		}
		out = append(out, full)
	}
	slices.Sort(out)
	return out, nil
}

// request handles an execute-snapshot or stop-snapshot signal read from
// the binlog. A malformed signal is logged and ignored (it names no
// table to act on); it never stops the stream.
func (in *incremental) request(ctx context.Context, id, typ, data string) error {
	s := in.s
	d, err := parseSignal(data)
	if err != nil {
		s.log.Warn("signal ignored", zap.String("id", id), zap.String("type", typ), zap.Error(err))
		s.sc.Metrics().Event("signal_invalid")
		return nil
	}
	if d.Source != "" && d.Source != s.cfg.Name {
		return nil
	}
	if typ == SignalStopSnapshot {
		keep := in.tables[:0:0]
		for _, t := range in.tables {
			if len(d.Collections) > 0 && !slices.Contains(d.Collections, t) && !matchAny(d.Collections, t) {
				keep = append(keep, t)
			}
		}
		if len(in.tables) > 0 && (len(keep) == 0 || keep[0] != in.tables[0]) {
			in.ch, in.key, in.max = nil, nil, nil // the table being read was stopped
		}
		s.log.Info("incremental snapshot stopped", zap.String("signal", id), zap.Int("tables_stopped", len(in.tables)-len(keep)))
		in.tables = keep
		in.progress()
		return nil
	}
	if len(d.Collections) == 0 {
		s.log.Warn("signal ignored: execute-snapshot names no data-collections", zap.String("id", id))
		s.sc.Metrics().Event("signal_invalid")
		return nil
	}
	c, err := in.side(ctx)
	if err != nil {
		return err
	}
	tables, err := s.capturedTables(c, s.cfg, d.Collections)
	if err != nil {
		return err
	}
	added := 0
	for _, t := range tables {
		if !slices.Contains(in.tables, t) {
			in.tables = append(in.tables, t)
			added++
		}
	}
	s.log.Info("incremental snapshot requested", zap.String("signal", id), zap.Strings("data-collections", d.Collections),
		zap.Int("tables_queued", added), zap.Strings("queue", in.tables))
	if len(tables) == 0 {
		s.log.Warn("incremental snapshot signal matches no captured table", zap.String("signal", id), zap.Strings("data-collections", d.Collections))
		s.sc.Metrics().Event("signal_invalid")
	}
	in.progress()
	return nil
}

// parseSignal decodes the data of an execute-snapshot or stop-snapshot
// signal.
func parseSignal(data string) (signalData, error) {
	var d signalData
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		return d, fmt.Errorf("data %.200q is not a JSON object {\"data-collections\": [...], \"type\": \"incremental\"}: %v", data, err)
	}
	if d.Type != "" && !strings.EqualFold(d.Type, "incremental") {
		return d, fmt.Errorf("snapshot type %q: only incremental snapshots run while streaming", d.Type)
	}
	for _, p := range d.Collections {
		if _, err := path.Match(p, ""); err != nil {
			return d, fmt.Errorf("data-collections: bad table pattern %q: %v", p, err)
		}
	}
	return d, nil
}

// writeSignal inserts a signal row (inside the caller's transaction, if
// any) and returns its id.
func (s *Source) writeSignal(c *client.Conn, typ string, d signalData) (string, error) {
	b, _ := json.Marshal(d)
	id := "weir-" + newChunkID()
	if _, err := c.Execute("INSERT INTO "+s.signalIdent()+" VALUES (?, ?, ?)", id, typ, string(b)); err != nil {
		if me := myError(err); me != nil && (me.Code == 1142 || me.Code == 1146) {
			return "", fmt.Errorf("%w: writing a %s signal into signal_table %s: %v; the user needs INSERT on it", ErrServerConfig, typ, s.cfg.SignalTable, err)
		}
		return "", s.classify("writing a signal into "+s.cfg.SignalTable, err)
	}
	return id, nil
}

// snapshotAddedTables runs when streaming starts: it compares the capture
// settings with those stored at the last start and, for tables captured
// only now, writes an execute-snapshot signal (in the same transaction
// as the new settings, so the request is neither lost nor made twice).
func (s *Source) snapshotAddedTables(c *client.Conn) error {
	fid := fmt.Sprintf("weir-filters-%d", s.cfg.ServerID)
	if _, err := c.Execute("BEGIN"); err != nil {
		return s.classify("starting a transaction on the signal table", err)
	}
	ok := false
	defer func() {
		if !ok {
			c.Execute("ROLLBACK")
		}
	}()
	r, err := c.Execute("SELECT data FROM "+s.signalIdent()+" WHERE id = ? FOR UPDATE", fid)
	if err != nil {
		return s.classify("reading the stored capture settings from "+s.cfg.SignalTable, err)
	}
	var old *filterSet
	if len(r.Values) > 0 {
		var f filterSet
		if err := json.Unmarshal(r.Values[0][0].AsString(), &f); err == nil {
			old = &f
		}
	}
	r.Close()
	now := s.cfg.filterSet()
	cur, _ := json.Marshal(now)
	if old != nil {
		prev, _ := json.Marshal(*old)
		if string(prev) == string(cur) {
			ok = true
			_, err := c.Execute("ROLLBACK")
			return err
		}
		all, err := s.capturedTables(c, s.cfg, nil)
		if err != nil {
			return err
		}
		oc := old.config(s.cfg.SignalTable)
		var added []string
		for _, t := range all {
			db, name, _ := strings.Cut(t, ".")
			if !oc.captureTable(db, name) {
				added = append(added, t)
			}
		}
		if len(added) > 0 {
			id, err := s.writeSignal(c, SignalExecuteSnapshot, signalData{Collections: added, Type: "incremental", Source: s.cfg.Name})
			if err != nil {
				return err
			}
			s.log.Info("tables added to capture: incremental snapshot requested", zap.Strings("tables", added), zap.String("signal", id))
		}
	}
	if _, err := c.Execute("INSERT INTO "+s.signalIdent()+" VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE data = VALUES(data)",
		fid, signalCapturedTables, string(cur)); err != nil {
		return s.classify("storing the capture settings in "+s.cfg.SignalTable, err)
	}
	if _, err := c.Execute("COMMIT"); err != nil {
		return s.classify("committing the capture settings", err)
	}
	ok = true
	return nil
}

// RequestSnapshot writes a signal into the source's signal table: an
// execute-snapshot of tables (db.table names or glob patterns), or with
// stop a stop-snapshot (no tables: all). A running source of this
// configuration acts on it when its binlog stream reaches the signal, in
// order with the changes around it; one that is stopped, when it runs
// again. It returns the signal's id.
func (s *Source) RequestSnapshot(ctx context.Context, tables []string, stop bool) (string, error) {
	if s.cfg.SignalTable == "" {
		return "", fmt.Errorf("connector %q: incremental snapshots need signal_table (a db.table the source may create and write)", s.cfg.Name)
	}
	if !stop && len(tables) == 0 {
		return "", fmt.Errorf("connector %q: name at least one table to snapshot", s.cfg.Name)
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	c, err := s.connect(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := s.ensureSignalTable(c); err != nil {
		return "", err
	}
	for _, p := range tables {
		if _, err := path.Match(p, ""); err != nil {
			return "", fmt.Errorf("connector %q: bad table pattern %q: %v", s.cfg.Name, p, err)
		}
	}
	typ := SignalExecuteSnapshot
	if stop {
		typ = SignalStopSnapshot
	} else {
		found, err := s.capturedTables(c, s.cfg, tables)
		if err != nil {
			return "", err
		}
		if len(found) == 0 {
			return "", fmt.Errorf("connector %q: %s matches no table the source captures (include/exclude settings)", s.cfg.Name, strings.Join(tables, ", "))
		}
	}
	return s.writeSignal(c, typ, signalData{Collections: tables, Type: "incremental", Source: s.cfg.Name})
}
