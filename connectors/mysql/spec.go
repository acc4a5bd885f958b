package mysql

import (
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"weir/connectors"
	"weir/internal/pemfile"
)

// Kind is the "mysql" connector kind, registered in connectors.Default.
var Kind = &connectors.Kind{
	Name:      "mysql",
	Placement: connectors.Singleton,
	Doc:       "Change data capture from a MySQL or MariaDB binlog: a consistent snapshot, then every row change into per-table topics keyed by primary key (Debezium-like Avro envelope, or canal FlatMessage JSON).",
	Spec: connectors.Spec{
		Fields: append([]connectors.Field{
			{Name: "host", Type: connectors.String, Default: "127.0.0.1", Doc: "server host name or address"},
			{Name: "port", Type: connectors.Int, Default: 3306, Doc: "server TCP port"},
			{Name: "hosts", Type: connectors.StringList, Doc: "servers to fail over between, in order, as \"host:port\" (\"host\" takes port): a primary and its GTID replicas (log_slave_updates = ON); when set, host is not used. The source stays on the server that works and moves to the next one when it cannot connect (position_mode gtid)"},
			{Name: "user", Type: connectors.String, Required: true, Doc: "user with SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT (MariaDB: BINLOG MONITOR)"},
			{Name: "password", Type: connectors.String, Default: "", Sensitive: true, Doc: "password of user"},
			{Name: "server_name", Type: connectors.String, Required: true, Doc: "logical name of the server: topic prefix, Avro namespace, source.name"},
			{Name: "server_id", Type: connectors.Int, Default: 0, Doc: "replica server id used for the binlog dump (0: derived from the connector name); unique among the server's replicas"},
			{Name: "flavor", Type: connectors.String, Default: "auto", Enum: []string{"auto", "mariadb", "mysql"}, Doc: "server flavor (auto: from the version string)"},
			{Name: "include_databases", Type: connectors.StringList, Doc: "glob patterns of databases to capture (empty: all but the system databases)"},
			{Name: "exclude_databases", Type: connectors.StringList, Doc: "glob patterns of databases to skip"},
			{Name: "include_tables", Type: connectors.StringList, Doc: "glob patterns of db.table names to capture (empty: all)"},
			{Name: "exclude_tables", Type: connectors.StringList, Doc: "glob patterns of db.table names to skip"},
			{Name: "snapshot_mode", Type: connectors.String, Default: "initial", Enum: []string{"initial", "never"}, Doc: "initial: snapshot every captured table when there is no stored position, then stream; never: stream from the server's current binlog end"},
			{Name: "snapshot_chunk_rows", Type: connectors.Int, Default: 10000, Doc: "rows per snapshot query (chunked by primary key)"},
			{Name: "on_purged_binlog", Type: connectors.String, Default: "fail", Enum: []string{"fail", "snapshot"}, Doc: "what to do when the binlog the stored position needs was purged: fail with an error, or take a new snapshot (rows deleted meanwhile are not deleted downstream)"},
			{Name: "position_mode", Type: connectors.String, Default: "gtid", Enum: []string{"gtid", "file"}, Doc: "resume from the stored GTID set (gtid; falls back to file when the server has no GTIDs) or from the stored binlog file and position"},
			{Name: "no_primary_key", Type: connectors.String, Default: "fail", Enum: []string{"fail", "all_columns", "skip"}, Doc: "tables without a primary key: fail with an error naming the table, key them by all their columns, or skip them (logged)"},
			{Name: "unsupported_columns", Type: connectors.String, Default: "fail", Enum: []string{"fail", "skip"}, Doc: "columns of types weir cannot represent (spatial types): fail naming the column, or leave them out of the records (logged)"},
			{Name: "format", Type: connectors.String, Default: "avro", Enum: []string{"avro", "canal_json"}, Doc: "record values: avro (Debezium-like envelope, Confluent wire format, schemas in the registry) or canal_json (canal FlatMessage JSON, one row per message)"},
			{Name: "schema_registry_url", Type: connectors.String, Doc: "schema registry URL (required for format avro)"},
			connectors.RegistryConfigField,
			{Name: "topic_template", Type: connectors.String, Default: "{server}.{db}.{table}", Doc: "topic per table; {server}, {db} and {table} are replaced"},
			{Name: "schema_change_topic", Type: connectors.String, Default: "{server}.schema-changes", Doc: "topic of DDL events (JSON); empty: no DDL events"},
			{Name: "heartbeat_topic", Type: connectors.String, Default: "__weir-heartbeat.{server}", Doc: "topic of heartbeat records (JSON) that carry the position forward while captured tables are idle"},
			{Name: "heartbeat_interval", Type: connectors.Duration, Default: "10s", Doc: "heartbeat period (also the server's binlog heartbeat); 0 disables heartbeat records"},
			{Name: "tombstones", Type: connectors.Bool, Default: true, Doc: "emit a tombstone (null value) after each delete, for compacted topics"},
			{Name: "signal_table", Type: connectors.String, Default: "", Doc: "db.table of the signal table (Debezium's layout: id, type, data; created when missing; the user needs INSERT and UPDATE on it): enables incremental snapshots while streaming, requested by execute-snapshot signals (SQL or weir connector snapshot); empty: off"},
			{Name: "incremental_snapshot_chunk_rows", Type: connectors.Int, Default: 1024, Doc: "rows per chunk of an incremental snapshot (held in memory between the chunk's watermarks)"},
			{Name: "snapshot_added_tables", Type: connectors.Bool, Default: true, Doc: "with signal_table: on start, tables the include/exclude settings capture now but did not at the last start are snapshotted incrementally"},
			{Name: "connect_timeout", Type: connectors.Duration, Default: "10s", Doc: "timeout of connecting to the server"},
		}, tlsFields...),
		Blocks: []connectors.Block{tableBlock}, // columns.go
		Validate: func(c connectors.Config) error {
			if c.String("format") == "avro" && c.String("schema_registry_url") == "" {
				return fmt.Errorf("setting %q is required when format is avro", "schema_registry_url")
			}
			if _, _, err := tlsFrom(c); err != nil {
				return err
			}
			if c.Int("snapshot_chunk_rows") < 1 {
				return fmt.Errorf("setting %q must be at least 1", "snapshot_chunk_rows")
			}
			if p := c.Int("port"); p < 1 || p > 65535 {
				return fmt.Errorf("setting %q: %d is not a TCP port", "port", p)
			}
			if _, err := parseHosts(c.Strings("hosts"), int(c.Int("port"))); err != nil {
				return err
			}
			if len(c.Strings("hosts")) > 1 && c.String("position_mode") != "gtid" {
				return fmt.Errorf("setting %q lists %d servers: failing over between them needs position_mode = \"gtid\" (binlog files and offsets differ between servers), not %q",
					"hosts", len(c.Strings("hosts")), c.String("position_mode"))
			}
			if id := c.Int("server_id"); id < 0 || id > 1<<32-1 {
				return fmt.Errorf("setting %q: %d is out of range 0..4294967295", "server_id", id)
			}
			for _, k := range []string{"include_databases", "exclude_databases", "include_tables", "exclude_tables"} {
				for _, p := range c.Strings(k) {
					if _, err := path.Match(p, ""); err != nil {
						return fmt.Errorf("setting %q: bad pattern %q: %v", k, p, err)
					}
				}
			}
			if st := c.String("signal_table"); st != "" {
				if db, t, ok := strings.Cut(st, "."); !ok || db == "" || t == "" || strings.Contains(t, ".") {
					return fmt.Errorf("setting %q: %q is not a db.table name", "signal_table", st)
				}
			}
			if c.Int("incremental_snapshot_chunk_rows") < 1 {
				return fmt.Errorf("setting %q must be at least 1", "incremental_snapshot_chunk_rows")
			}
			if !strings.Contains(c.String("topic_template"), "{table}") {
				return fmt.Errorf("setting %q must contain {table} (one topic per table)", "topic_template")
			}
			return nil
		},
	},
	NewSource: func(name string, cfg connectors.Config) (connectors.Source, error) {
		c, err := configFrom(name, cfg)
		if err != nil {
			return nil, err
		}
		return New(c), nil
	},
}

func init() { connectors.Default.Register(Kind) }

// Config is the typed configuration of a MySQL source.
type Config struct {
	Name             string // connector name
	Host             string
	Port             int
	Hosts            []string // "host:port" servers to fail over between (empty: Host:Port)
	User, Password   string
	ServerName       string
	ServerID         uint32
	Flavor           string // auto, mariadb, mysql
	IncludeDatabases []string
	ExcludeDatabases []string
	IncludeTables    []string
	ExcludeTables    []string
	SnapshotMode     string
	ChunkRows        int
	OnPurgedBinlog   string
	PositionMode     string
	NoPrimaryKey     string
	UnsupportedCols  string
	Format           string
	RegistryURL      string
	// RegistryConfig is the registry client settings
	// (schema_registry_config; kafkaclient.OpenRegistry).
	RegistryConfig    map[string]string
	TopicTemplate     string
	SchemaChangeTopic string
	HeartbeatTopic    string
	HeartbeatInterval time.Duration
	Tombstones        bool
	ConnectTimeout    time.Duration
	// Tables are the table blocks by "db.table" (columns.go): captured
	// tables and their column rules.
	Tables map[string]*TableRules

	// SSLMode is ssl_mode (tls.go): DISABLED, PREFERRED, REQUIRED,
	// VERIFY_CA or VERIFY_IDENTITY; SSL the CA, client certificate and
	// server name.
	SSLMode string
	SSL     pemfile.Client

	SignalTable          string // db.table; "" disables incremental snapshots
	IncrementalChunkRows int
	SnapshotAddedTables  bool
}

func configFrom(name string, c connectors.Config) (Config, error) {
	mode, ssl, err := tlsFrom(c)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", connectors.ErrConfig, err)
	}
	cfg := Config{SSLMode: mode, SSL: ssl,
		Name: name, Host: c.String("host"), Port: int(c.Int("port")), Hosts: c.Strings("hosts"), User: c.String("user"), Password: c.String("password"),
		ServerName: c.String("server_name"), ServerID: uint32(c.Int("server_id")), Flavor: c.String("flavor"),
		IncludeDatabases: c.Strings("include_databases"), ExcludeDatabases: c.Strings("exclude_databases"),
		IncludeTables: c.Strings("include_tables"), ExcludeTables: c.Strings("exclude_tables"),
		SnapshotMode: c.String("snapshot_mode"), ChunkRows: int(c.Int("snapshot_chunk_rows")),
		OnPurgedBinlog: c.String("on_purged_binlog"), PositionMode: c.String("position_mode"),
		NoPrimaryKey: c.String("no_primary_key"), UnsupportedCols: c.String("unsupported_columns"),
		Format: c.String("format"), RegistryURL: c.String("schema_registry_url"), RegistryConfig: c.StringMap(connectors.RegistryConfigSetting),
		TopicTemplate: c.String("topic_template"), SchemaChangeTopic: c.String("schema_change_topic"),
		HeartbeatTopic: c.String("heartbeat_topic"), HeartbeatInterval: c.Duration("heartbeat_interval"),
		Tombstones: c.Bool("tombstones"), ConnectTimeout: c.Duration("connect_timeout"),
		Tables:      tablesFrom(c),
		SignalTable: c.String("signal_table"), IncrementalChunkRows: int(c.Int("incremental_snapshot_chunk_rows")),
		SnapshotAddedTables: c.Bool("snapshot_added_tables"),
	}
	return cfg.withDefaults(), nil
}

// withDefaults fills zero values the way the spec's defaults do, for
// configs built in Go rather than decoded.
func (c Config) withDefaults() Config {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Port == 0 {
		c.Port = 3306
	}
	if c.ServerName == "" {
		c.ServerName = "mysql"
	}
	if c.ServerID == 0 {
		// Derived from the connector name, away from typical small ids.
		var h uint32 = 2166136261
		for i := 0; i < len(c.Name); i++ {
			h = (h ^ uint32(c.Name[i])) * 16777619
		}
		c.ServerID = 100000 + h%1000000000
	}
	if c.Flavor == "" {
		c.Flavor = "auto"
	}
	if c.SnapshotMode == "" {
		c.SnapshotMode = "initial"
	}
	if c.ChunkRows <= 0 {
		c.ChunkRows = 10000
	}
	if c.OnPurgedBinlog == "" {
		c.OnPurgedBinlog = "fail"
	}
	if c.PositionMode == "" {
		c.PositionMode = "gtid"
	}
	if c.NoPrimaryKey == "" {
		c.NoPrimaryKey = "fail"
	}
	if c.UnsupportedCols == "" {
		c.UnsupportedCols = "fail"
	}
	if c.Format == "" {
		c.Format = "avro"
	}
	if c.TopicTemplate == "" {
		c.TopicTemplate = "{server}.{db}.{table}"
	}
	if c.IncrementalChunkRows <= 0 {
		c.IncrementalChunkRows = 1024
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	return c
}

// servers is the list of servers to connect to, in order: Hosts (a
// port-less entry takes Port), or Host:Port.
func (c Config) servers() []string {
	if len(c.Hosts) == 0 {
		return []string{net.JoinHostPort(c.Host, strconv.Itoa(c.Port))}
	}
	hs, err := parseHosts(c.Hosts, c.Port)
	if err != nil {
		return []string{net.JoinHostPort(c.Host, strconv.Itoa(c.Port))}
	}
	return hs
}

// parseHosts checks the hosts setting and returns its entries as
// host:port.
func parseHosts(hosts []string, port int) ([]string, error) {
	out := make([]string, 0, len(hosts))
	seen := map[string]bool{}
	for i, h := range hosts {
		host, p, err := net.SplitHostPort(h)
		if err != nil {
			if strings.Contains(err.Error(), "missing port") {
				host, p = strings.Trim(h, "[]"), strconv.Itoa(port)
			} else {
				return nil, fmt.Errorf("setting %q: entry %d %q is not host:port: %v", "hosts", i+1, h, err)
			}
		}
		n, err := strconv.Atoi(p)
		if host == "" || err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("setting %q: entry %d %q needs a host name and a TCP port (1..65535)", "hosts", i+1, h)
		}
		a := net.JoinHostPort(host, p)
		if seen[a] {
			return nil, fmt.Errorf("setting %q: %s is listed twice", "hosts", a)
		}
		seen[a] = true
		out = append(out, a)
	}
	return out, nil
}

func (c Config) expand(tmpl, db, table string) string {
	return strings.NewReplacer("{server}", c.ServerName, "{db}", db, "{table}", table).Replace(tmpl)
}

// TableTopic is the topic of db.table.
func (c Config) TableTopic(db, table string) string { return c.expand(c.TopicTemplate, db, table) }

var systemDBs = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

func matchAny(pats []string, s string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// captureDB reports whether changes of database db may be captured.
func (c Config) captureDB(db string) bool {
	if systemDBs[strings.ToLower(db)] {
		return false
	}
	if len(c.IncludeDatabases) > 0 && !matchAny(c.IncludeDatabases, db) {
		return false
	}
	return !matchAny(c.ExcludeDatabases, db)
}

// captureTable reports whether changes of db.table are captured.
func (c Config) captureTable(db, table string) bool {
	if !c.captureDB(db) {
		return false
	}
	full := db + "." + table
	if full == c.SignalTable {
		return false
	}
	_, block := c.Tables[full]
	if (len(c.IncludeTables) > 0 || len(c.Tables) > 0) && !block && !matchAny(c.IncludeTables, full) {
		return false // table blocks and include_tables name the captured tables
	}
	return !matchAny(c.ExcludeTables, full)
}
