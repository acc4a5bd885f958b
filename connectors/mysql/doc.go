// Package mysql is weir's change-data-capture source for MySQL and
// MariaDB, canal style: it acts as a replica, takes a consistent snapshot
// of the captured tables, then follows the binlog (go-mysql's replication
// package), and turns every row change into a record of a per-table
// topic keyed by primary key. Kind "mysql" is registered in
// connectors.Default with its config spec (spec.go).
//
// # Files
//
//	spec.go      kind, config spec, typed Config, include/exclude filters
//	columns.go   table blocks: captured tables, column include/exclude,
//	             mask, hash and truncation rules
//	source.go    Source: the snapshot → streaming state machine, restarts
//	snapshot.go  consistent snapshot, chunked by primary key, resumable
//	resume.go    resuming an interrupted snapshot exactly: the binlog
//	             window between its first and its resumed position
//	incremental.go  incremental snapshots while streaming (DBLog watermarks)
//	signal.go    the signal table: execute-snapshot / stop-snapshot signals,
//	             watermarks, tables added to capture
//	stream.go    binlog streaming: transactions, positions, DDL, heartbeats
//	table.go     table schemas (from TableMapEvent metadata or
//	             information_schema), Avro schemas of keys and envelopes
//	convert.go   column values → Avro native values (both paths agree)
//	charset.go   utf8mb4 sessions (checked), binlog text decoding
//	wkt.go       spatial values (SRID + WKB) → (E)WKT
//	fixedbin.go  MariaDB UUID and INET6 binlog bytes → the server's text
//	records.go   keys, envelopes, tombstones, PK changes, canal FlatMessage
//	position.go  Position (stored by the runtime), Version
//	conn.go      connecting, server checks, error classification
//
// # Server requirements
//
// log_bin, binlog_format=ROW, binlog_row_image=FULL (checked on connect;
// an error wrapping ErrServerConfig names the setting), and preferably
// binlog_row_metadata=FULL (MariaDB 10.5+, MySQL 8.0.1+). The user needs
// SELECT, RELOAD (MySQL: FLUSH TABLES WITH READ LOCK), REPLICATION SLAVE,
// REPLICATION CLIENT (MariaDB 10.5+: BINLOG MONITOR).
//
// # Snapshot and hand-off
//
// See snapshot.go: one transaction WITH CONSISTENT SNAPSHOT whose binlog
// position the server reports (MariaDB: binlog_snapshot_file/position, no
// lock; MySQL: a global read lock held for three statements). Rows are
// emitted with op "r" and that position; streaming starts exactly there,
// so no change is missed or duplicated at the hand-off (tested by
// TestSnapshotHandOff with writes running during the snapshot). Chunks
// are ordered by primary key; an interrupted snapshot continues after
// the last acknowledged key, exactly (resume.go): the remaining rows are
// read in a new consistent snapshot, at a newer binlog position P2, and
// streaming still starts at the first snapshot's position P; of the
// binlog's changes between P and P2, those to rows the resumed snapshot
// read (later keys of the interrupted table, later tables) are dropped,
// because the P2 rows contain them, and those to rows read before the
// stop are emitted; an update moving a row's key across the resume point
// becomes the half the consumer needs (the delete of the old key or the
// create of the new one). Keys are compared by the server in the key
// columns' types and collations. P2 and the resume point travel in every
// Position until the stream passes P2, so a stop inside that window, or
// a second stop during the resumed snapshot (each adds its own P2),
// stays exact (TestSnapshotResumeExact: two stops, in a VARCHAR-keyed
// table with a case-insensitive collation and in an INT-keyed one, under
// concurrent inserts, updates, key changes, deletes and DDL;
// TestExactlyOnceKillDashNine kills an exactly-once source with -9 inside
// its snapshot on purpose). A table without a primary key (no_primary_key =
// all_columns) has no order to resume in: an interrupted pass of it
// starts again at P2, and its changes between P and P2 are emitted, so a
// consumer keyed by the whole row ends with exactly the table's rows, but
// may receive a row of that one table twice (once from each pass, or as a
// change and again as a snapshot read): exactly-once holds for it only
// when its pass is not interrupted.
//
// # Incremental snapshots
//
// With signal_table set (db.table, Debezium's id/type/data layout, created
// when missing; the user needs INSERT and UPDATE on it, CREATE to create
// it), a table is snapshotted again — or for the first time, when it is
// added to include_tables — while the binlog stream goes on, without
// losing or reordering a change: the watermark algorithm of DBLog that
// Debezium's incremental snapshots run (incremental.go). Chunks of
// incremental_snapshot_chunk_rows rows, in primary key order, are
// SELECTed between a low and a high watermark the source upserts into the
// signal table (so they appear in the binlog in commit order); rows whose
// keys change between the watermarks are dropped from the chunk (the
// binlog carries them), the rest are emitted as op "r" with
// source.snapshot "incremental" and the high watermark's version. As
// Debezium's, a table's snapshot ends at the largest primary key it had
// when the snapshot of it began (rows inserted after with larger keys
// are in the binlog), so inserts at the end of the table cannot keep it
// from finishing (metric event incremental_snapshot_table_finished). A
// request is a row the user inserts (type execute-snapshot, data
// {"data-collections": ["db.t"], "type": "incremental"}), or writes with
// `weir connector snapshot SOURCE --table db.t`, or one the source writes
// itself on start for tables its include/exclude settings capture now but
// did not at its last start (snapshot_added_tables). Requests are read
// from the binlog, so they reach a source in order wherever they were
// written; progress (queue and last key) is in every Position, so a
// restarted source resumes at the last acknowledged chunk. Tables without
// a primary key cannot be snapshotted incrementally (logged, skipped).
// The binlog must contain the signal table's changes (no
// binlog-ignore-db for its database).
//
// # Positions
//
// One source partition, "binlog". A Position (JSON) holds the binlog file
// and offset of a transaction's start, the executed GTID set before it
// (MariaDB "domain-server-seq,..." or MySQL "uuid:1-N,..."), and the
// number of that transaction's records already emitted; the last record
// of a transaction carries the next transaction's position. During a
// resumed snapshot, and in the stream until it passes the resumed
// snapshots' positions, it also lists those resumes (resume.go). The runtime
// stores a position only once the broker acknowledged every record
// before it (connectors.SourceTask), and on restart restores the newest
// one found in the offsets topic or in the destination topics' weir.src
// headers. The source resumes by GTID (position_mode gtid, the default)
// or file/offset, re-reads the interrupted transaction and drops the
// records already emitted: no loss, no duplicate. A position whose binlog
// file was purged fails with ErrBinlogPurged, or takes a new snapshot
// when on_purged_binlog = "snapshot".
//
// # Schema history
//
// With binlog_row_metadata=FULL every TableMapEvent carries the table's
// column names, types, signedness, charsets, enum/set members and
// primary key as of that binlog position, so each row is decoded with
// the schema it was written with — never the live one — and a restart in
// the middle of the binlog decodes correctly without any stored history.
// Schemas are cached by the event's definition fingerprint; an ALTER
// TABLE yields a new definition, a new Avro schema version registered
// under <topic>-value (field defaults keep ADD/DROP COLUMN and widening
// MODIFY COLUMN BACKWARD compatible). Without FULL metadata the live
// schema is read at the first row after each DDL and checked against the
// event's column count and types; a mismatch (the binlog is behind a
// later DDL) fails with ErrSchemaMismatch instead of misaligning columns.
//
// # Records
//
// Topic per table: topic_template, default "{server}.{db}.{table}".
// Key: Avro record of the primary key columns (<ns>.Key). Value: Avro
// envelope <ns>.Envelope {before, after, op c|u|d|r, source, ts_ms} with
// source {version, connector, name, server_id, ts_ms, snapshot
// true|last|false, db, table, gtid, file, pos, row, txid, tx_seq,
// tx_end}: pos is the start offset of the rows event, row the row's index
// in it; txid is the GTID (or file:offset of the transaction start),
// tx_seq the 1-based index of the record in its transaction and tx_end
// true on its last record — transaction boundaries. A delete is followed
// by a tombstone (tombstones = true). An update that changes the primary
// key becomes a delete of the old key, its tombstone, and a create of the
// new key. Types: see "Type mapping" below. Tables without a primary key fail (ErrNoPrimaryKey) unless no_primary_key is
// "all_columns" (key = every column; any update is a key change) or
// "skip". format = "canal_json" writes canal FlatMessage JSON instead
// (one row per message, values as strings, key = JSON object of the
// primary key).
//
// # Type mapping
//
// Both paths (snapshot SELECT and binlog rows) give the same value, and
// TestFidelity compares every type below with what the server itself
// returns, on a server with MariaDB's built-in defaults (latin1) and on
// one with utf8mb4 defaults and time_zone America/New_York. JSON is how
// the Elasticsearch sink (and canal_json) renders the Avro value.
// TestWeirRunFidelity checks the same types and charsetTable's text end
// to end through the weir binary (`weir run`: embedded broker and
// registry, Elasticsearch sinks with cdc = true) across a kill -9, on
// both servers: the replayed topics and the indices equal the tables.
//
//	MySQL/MariaDB              Avro                     JSON (Elasticsearch)
//	tinyint..mediumint, int    int                      number
//	int unsigned, bigint       long                     number
//	bigint unsigned            decimal(20,0) bytes      string "18446744073709551615" (exact)
//	decimal(p,s) ≤ (65,30)     decimal(p,s) bytes       string, exact digits at scale s
//	float                      float                    number (the stored float; the
//	                                                    snapshot selects col + 0e0, as the
//	                                                    text protocol prints 6 digits)
//	double                     double                   number
//	bit(1..64)                 long                     number: the bits as an unsigned
//	                                                    integer; bit(64) ≥ 2^63 is negative
//	                                                    (two's complement of the same bits)
//	year                       int                      number (zero year: 0)
//	date                       string "2006-01-02"      string
//	time(fsp)                  string "[-]HHH:MM:SS[.f]" string, -838:59:59 to 838:59:59,
//	                                                    exactly fsp fraction digits
//	datetime(fsp)              string "2006-01-02 15:04:05[.f]"  wall clock, never shifted
//	timestamp(fsp)             string, same layout, UTC  the instant in UTC
//	zero dates (0000-00-00, 2024-00-00, 0000-00-00 00:00:00, sql_mode permitting)
//	                           the same string as the server prints (never an error,
//	                           never NULL); the zero timestamp too
//	char/varchar/text          string (UTF-8)           string
//	enum, set                  string: member name(s), "a,c"; '' for the empty value
//	json                       string (the JSON text)   string
//	binary/varbinary/blob      bytes (binary(n) padded with 0x00 to n)  base64 string
//	geometry, point, ...       string: WKT as ST_AsText writes it, "SRID=n;" first
//	                           when the SRID is not 0 (EWKT)
//	uuid (MariaDB 10.7+)       string: lower-case 8-4-4-4-12, as the server prints it
//	inet6 (MariaDB 10.5+)      string: as the server prints it ("::ffff:192.0.2.1",
//	                           "2001:db8::ff00:42:8329"; the longest run of zero
//	                           words, even one word, written "::")
//	generated (stored/virtual), MariaDB INVISIBLE columns: like any column
//
// Character sets: the connector's sessions are utf8mb4 (SET NAMES
// utf8mb4, then character_set_client/connection/results are read back;
// anything else fails with ErrCharset naming what the server answered),
// so snapshot text is converted by the server. Binlog text is in the
// column's own character set; weir decodes utf8mb4, utf8mb3, ascii and
// latin1 (MySQL's latin1 is Windows-1252, with 0x81/0x8D/0x8F/0x90/0x9D
// as C1 controls), including enum/set member names. A column in any
// other character set (gbk, sjis, ucs2, ...) is an unsupported column in
// both paths, never mangled text. Unsupported columns fail with
// ErrUnsupportedColumn naming the column and type unless
// unsupported_columns = "skip" (MariaDB 11.3's INET4, not in 10.11,
// is one).
//
// UUID and INET6 are strings as the server prints them, the type Debezium's
// MariaDB connector gives UUID (io.debezium.data.Uuid). The snapshot
// reads that text; the binlog carries the value's 16 bytes (a UUID's in
// RFC 4122 order — MariaDB stores time-based UUIDs with their groups
// swapped, but logs them unswapped — trailing zero bytes left out) and
// the TableMapEvent names the column BINARY(16), even with FULL
// metadata. The source therefore takes the column's type from the live
// schema (information_schema.COLUMNS), read again after every DDL the
// stream passes, so an ALTER TABLE mid-stream (BINARY(16) to UUID, ADD
// COLUMN ... INET6) applies from the rows written after it
// (TestFixedBinTypes). The live schema is the table as of now: while the
// source reads a binlog backlog that predates a later ALTER turning a
// column between BINARY(16), UUID and INET6, the rows before that ALTER
// are rendered with the later type (BINARY(16) bytes as UUID text or the
// reverse); the values stay exact, only their form follows the newer
// type.
//
// # Table blocks and column rules
//
// A table block (HCL: table "customers" { name = "inventory.customers" })
// names a captured table: a source with table blocks captures those
// tables plus include_tables matches (exclude_tables and the database
// filters still apply; a block for a table they leave out is a config
// error). Pipelines refer to its topic by the label
// (source.<name>.table["customers"].topic). Its column rules follow
// Debezium's column.* settings and apply to the snapshot and the binlog
// alike: include_columns / exclude_columns (globs, case-insensitive)
// leave columns out of the records and the Avro schemas;
// mask_columns = { c = N } makes the value N '*' (NULL too, as Debezium),
// hash_columns makes it the hex SHA-256 of hash_salt followed by the
// value's text (bytes for binary columns; NULL stays NULL; Debezium's
// strategy V2, without Debezium's cut to the column length), both Avro
// strings; truncate_columns = { c = N } cuts text to N characters. Key
// columns are never changed: excluding, masking, hashing or truncating a
// primary-key column (or any column of a table keyed by all its columns)
// fails with ErrColumnRule, as does truncating a non-text column. A rule
// naming a column the table lacks fails at the snapshot (the live table)
// and is logged while streaming (older binlog events may predate an ADD
// COLUMN). Excluding an unsupported column (e.g. a gbk one) avoids its error.
//
// DDL statements of captured databases go to schema_change_topic as JSON
// {source, db, table, ddl, ts_ms}; heartbeat records (JSON {ts_ms, file,
// pos, gtid}) go to heartbeat_topic every heartbeat_interval while the
// binlog advances without captured changes, so the stored position keeps
// up and idle tables do not pin purged binlogs.
//
// # Large transactions
//
// Streaming never holds a transaction: it emits each change as soon as
// the next one is read, holding back only the newest (so the last change
// of a transaction can carry tx_end and the next transaction's position).
// A transaction of any size streams in memory bounded by the queue of
// parsed events between go-mysql's reader and Poll (1,024 events, each at
// most binlog_row_event_max_size, 8 KiB by default, or one row when a
// row is larger), one Poll batch (at most 4,096 records plus the rows of
// one event) and, in a task, the producer buffer (SourceOptions.
// MaxBufferedBytes, 64 MiB). Records of an open transaction carry its
// start and the count of its records emitted, so a restart inside it
// re-reads it from its start and drops those records. The server keeps
// the binlog dump alive with heartbeats while it executes a long
// statement. BenchmarkLargeTransaction measures the peak RSS for a
// 1,000,000-row transaction (BENCHMARKS.md).
//
// # Failover between servers
//
// hosts lists servers in order ("host:port"; a port-less entry takes
// port), typically a MariaDB primary and its replicas, each with log_bin,
// log_slave_updates = ON (so its binlog holds what it replicates, with
// the original GTIDs) and preferably gtid_strict_mode. The source works
// on one server at a time; when it cannot connect to it (the connection
// is lost and the next attempt is refused or times out), it tries the
// next servers in list order (wrapping around) and stays on the first
// that answers (metric event "failover"; it does not move back on its
// own). Wrong credentials are no reason to move. With several servers,
// position_mode must be gtid and the servers must have GTIDs: the stored
// position's GTID set (MariaDB: one GTID per domain, whichever server
// wrote it) names the same transaction boundary on every server, so the
// source resumes on the new server at the last record it delivered, even
// inside a transaction (the transaction is re-read there and the records
// already emitted dropped): no gap, no duplicate. What a server never
// received from a dead primary (asynchronous replication) is lost with
// it for every reader; a server behind the stored position fails the
// dump with the server's error. With several servers the stored binlog
// file is not checked against the server's (it names another server's
// binlog); a GTID the server no longer has fails the dump with the
// server's error (ErrBinlogPurged when its message says purged), and
// on_purged_binlog = "snapshot" is not applied to that case.
//
// # External version for sinks (weir.cdc.version)
//
// Every change record and tombstone carries the header weir.cdc.version:
// a decimal int64 that grows with every change along the binlog and
// stays comparable across a failover to another server:
//
//	version = GTID count after the transaction << 23 | change index
//
// The GTID count is what the executed GTID set counts, equal on every
// server holding the same transactions: MariaDB, the sum over domains of
// the sequence number of the domain's last GTID (sequence numbers grow
// within a domain: gtid_strict_mode); MySQL, the number of GTIDs in the
// set. Each transaction raises it by at least one, and a replica keeps
// the primary's GTIDs, so a transaction has the same count on every
// server. The change index is the change's 0-based index in its
// transaction (an update of the primary key is one change); 23 bits hold
// 8,388,607 changes per transaction, and later changes of a larger
// transaction share the last index (logged: a key changed twice among
// them keeps its first change in a sink using the version), and the
// count has 40 bits (1.1·10^12 transactions). Snapshot rows carry the
// count of the snapshot's GTID position with index 0 (a resumed
// snapshot's rows, its own position's), below every change streamed
// after it; rows of an incremental snapshot chunk carry the
// version the high watermark's row would have as a change. The records
// of one PK change (delete, tombstone, create) and a delete's tombstone
// share their change's version: a sink using it as an external version
// (Elasticsearch version_type=external) should treat a version conflict
// on a delete as already applied.
//
// A server without GTIDs (MySQL with gtid_mode OFF) gets versions from
// binlog positions instead, comparable only along that one server:
//
//	version = binlog file number << 32 | (rows event start offset + row index)
//
// (file number = the numeric suffix of mysql-bin.000042; the row index
// stays below the next event's offset because every row takes at least
// one byte of its event). Switching such a server to GTIDs lowers the
// versions: re-snapshot into a new index. Header weir.cdc.op holds c, u,
// d or r.
//
// # Errors
//
// A server not logging ROW/FULL binlogs or not giving utf8mb4 sessions
// fails with ErrServerConfig (ErrCharset); a captured table dropped
// while the snapshot runs fails with ErrTableDropped (restarting takes a
// snapshot without it). Wrong credentials or missing privileges (ErrAuth) and lost connections
// (ErrConnection, e.g. the server KILLs the binlog dump) are retriable:
// the runtime retries with backoff and the source resumes from the last
// record it returned, so recovery needs no restart.
//
// # TLS
//
// tls.go: ssl_mode with MySQL's --ssl-mode names (disabled, the default;
// preferred: TLS when the server offers it, else plaintext, remembered
// per server; required: TLS without verification; verify_ca: the
// certificate chains to ssl_ca; verify_identity: and names the host or
// ssl_server_name), ssl_cert/ssl_key (an encrypted PKCS#8 key with
// ssl_key_password) for users created REQUIRE X509. The query connections
// and the binlog dump use the same TLS configuration (go-mysql's
// SetTLSConfig and BinlogSyncerConfig.TLSConfig). password and
// ssl_key_password are sensitive: never printed nor in errors.
package mysql
