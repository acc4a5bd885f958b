package mysql

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	perrors "github.com/pingcap/errors"
	"go.uber.org/zap"

	"weir/connectors"
)

// Sentinel errors of the MySQL source (besides ErrUnsupportedColumn,
// ErrNoPrimaryKey and ErrSchemaMismatch in table.go).
var (
	// ErrAuth: the server refused the credentials or a privilege. It is
	// retriable (an administrator may fix the user), and logged each time.
	ErrAuth = errors.New("mysql server refused the connector's credentials or privileges")
	// ErrBinlogPurged: the binlog the stored position needs is gone.
	ErrBinlogPurged = errors.New("binlog needed by the stored position was purged")
	// ErrServerConfig: the server lacks a setting CDC needs (log_bin,
	// binlog_format=ROW, binlog_row_image=FULL).
	ErrServerConfig = errors.New("mysql server is not configured for row-based CDC")
	// ErrConnection: the connection failed or was lost (retriable).
	ErrConnection = errors.New("mysql connection failed")
)

// myError finds the server's error in a go-mysql error chain.
func myError(err error) *gmysql.MyError {
	var me *gmysql.MyError
	if errors.As(err, &me) {
		return me
	}
	if me, ok := perrors.Cause(err).(*gmysql.MyError); ok {
		return me
	}
	return nil
}

// classify wraps a server/connection error with the sentinel that says
// what to do about it, naming the server and what was being done.
func (s *Source) classify(what string, err error) error {
	return s.classifyAt(s.addr(), what, err)
}

func (s *Source) classifyAt(addr, what string, err error) error {
	if err == nil {
		return nil
	}
	if me := myError(err); me != nil {
		switch me.Code {
		case gmysql.ER_ACCESS_DENIED_ERROR, gmysql.ER_DBACCESS_DENIED_ERROR, gmysql.ER_SPECIFIC_ACCESS_DENIED_ERROR,
			gmysql.ER_TABLEACCESS_DENIED_ERROR, gmysql.ER_COLUMNACCESS_DENIED_ERROR, 1698 /* ER_ACCESS_DENIED_NO_PASSWORD_ERROR */ :
			return fmt.Errorf("%s on %s as user %q: %w: %w (check user/password and grants: SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT/BINLOG MONITOR): %s",
				what, addr, s.cfg.User, ErrAuth, connectors.ErrRetriable, me.Message)
		case gmysql.ER_MASTER_FATAL_ERROR_READING_BINLOG:
			if strings.Contains(strings.ToLower(me.Message), "purged") || strings.Contains(strings.ToLower(me.Message), "could not find") {
				return fmt.Errorf("%s on %s: %w: %s", what, addr, ErrBinlogPurged, me.Message)
			}
		}
		if me.Code >= 1000 && me.Code < 3000 && me.Code != gmysql.ER_SERVER_SHUTDOWN && me.Code != gmysql.ER_CON_COUNT_ERROR &&
			me.Code != gmysql.ER_QUERY_INTERRUPTED && me.Code != 1927 /* ER_CONNECTION_KILLED */ && me.Code != gmysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
			return fmt.Errorf("%s on %s: %w", what, addr, err)
		}
	}
	return fmt.Errorf("%s on %s: %w: %w: %v", what, addr, ErrConnection, connectors.ErrRetriable, err)
}

// addr is the server the source is on (host:port).
func (s *Source) addr() string { return s.servers[s.cur] }

// connect opens a client connection with the connector's credentials to
// the server the source is on. When that server cannot be reached and
// hosts lists others, it tries them in list order after it (wrapping
// around) and stays on the first that answers: a failover. The stream
// then resumes there by GTID (see doc.go, "Failover").
func (s *Source) connect(ctx context.Context) (*client.Conn, error) {
	var first error
	for i := range s.servers {
		j := (s.cur + i) % len(s.servers)
		c, err := s.connectTo(ctx, s.servers[j])
		if err == nil {
			if j != s.cur {
				s.log.Warn("server unreachable; failing over to the next server in hosts",
					zap.String("from", s.servers[s.cur]), zap.String("to", s.servers[j]), zap.Error(first))
				s.sc.Metrics().Event("failover")
				s.cur = j
			}
			return c, nil
		}
		if first == nil {
			first = err
		}
		if !errors.Is(err, ErrConnection) || ctx.Err() != nil {
			return nil, err // the server answered (e.g. refused the user): not a reason to move
		}
	}
	if len(s.servers) > 1 {
		return nil, fmt.Errorf("none of the %d servers in hosts answers (%s): %w", len(s.servers), strings.Join(s.servers, ", "), first)
	}
	return nil, first
}

func (s *Source) connectTo(ctx context.Context, addr string) (*client.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	tc, err := s.tlsFor(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: mysql source %q: %v", connectors.ErrConfig, s.cfg.Name, err)
	}
	var opts []client.Option
	if tc != nil {
		opts = append(opts, func(c *client.Conn) error { c.SetTLSConfig(tc); return nil })
	}
	c, err := client.ConnectWithContext(ctx, addr, s.cfg.User, s.cfg.Password, "", s.cfg.ConnectTimeout, opts...)
	if err != nil && tc != nil && s.cfg.SSLMode == SSLPreferred && strings.Contains(err.Error(), "does not support TLS") {
		s.plain.Store(addr, true) // preferred: the server offers no TLS
		c, err = client.ConnectWithContext(ctx, addr, s.cfg.User, s.cfg.Password, "", s.cfg.ConnectTimeout)
	}
	if err != nil {
		return nil, s.classifyAt(addr, "connecting", err)
	}
	if err := s.sessionCharset(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// tlsFor is the TLS configuration for addr (nil: plaintext, with
// ssl_mode disabled or preferred against a server without TLS).
func (s *Source) tlsFor(addr string) (*tls.Config, error) {
	if _, plain := s.plain.Load(addr); plain {
		return nil, nil
	}
	return s.cfg.tlsConfig(addr)
}

// serverInfo is what the source learns about the server on connecting.
type serverInfo struct {
	flavor   string // gmysql.MariaDBFlavor or gmysql.MySQLFlavor
	serverID uint32
	metaFull bool              // binlog_row_metadata=FULL
	gtidMode bool              // the server has GTIDs to resume from
	charsets map[uint64]string // collation id → character set
}

func queryString(c *client.Conn, q string) ([]string, error) {
	r, err := c.Execute(q)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if len(r.Values) == 0 {
		return nil, nil
	}
	out := make([]string, len(r.Values[0]))
	for i := range r.Values[0] {
		fv := &r.Values[0][i]
		switch fv.Type {
		case gmysql.FieldValueTypeNull:
		case gmysql.FieldValueTypeString:
			out[i] = string(fv.AsString())
		default:
			out[i] = fv.String()
		}
	}
	return out, nil
}

// inspect checks the server's binlog settings and learns its flavor.
func (s *Source) inspect(c *client.Conn) (serverInfo, error) {
	var si serverInfo
	v := c.GetServerVersion()
	switch {
	case s.cfg.Flavor == "mariadb" || (s.cfg.Flavor == "auto" && strings.Contains(strings.ToLower(v), "mariadb")):
		si.flavor = gmysql.MariaDBFlavor
	default:
		si.flavor = gmysql.MySQLFlavor
	}
	row, err := queryString(c, "SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@server_id")
	if err != nil {
		return si, s.classify("reading server variables", err)
	}
	if row[0] != "1" && !strings.EqualFold(row[0], "ON") {
		return si, fmt.Errorf("%w: %s has log_bin off; start it with --log-bin", ErrServerConfig, s.addr())
	}
	if !strings.EqualFold(row[1], "ROW") {
		return si, fmt.Errorf("%w: %s has binlog_format=%s; set binlog_format=ROW", ErrServerConfig, s.addr(), row[1])
	}
	if !strings.EqualFold(row[2], "FULL") {
		return si, fmt.Errorf("%w: %s has binlog_row_image=%s; set binlog_row_image=FULL", ErrServerConfig, s.addr(), row[2])
	}
	id, _ := strconv.ParseUint(row[3], 10, 32)
	si.serverID = uint32(id)
	if row, err := queryString(c, "SELECT @@binlog_row_metadata"); err == nil && strings.EqualFold(row[0], "FULL") {
		si.metaFull = true
	}
	if si.charsets, err = collationCharsets(c); err != nil {
		return si, s.classify("reading information_schema.COLLATIONS", err)
	}
	if si.flavor == gmysql.MariaDBFlavor {
		si.gtidMode = true
	} else if row, err := queryString(c, "SELECT @@gtid_mode"); err == nil && strings.EqualFold(row[0], "ON") {
		si.gtidMode = true
	}
	if len(s.servers) > 1 {
		// Failing over needs every server's binlog to hold the changes it
		// replicated, with their original GTIDs.
		if !si.gtidMode {
			return si, fmt.Errorf("%w: %s has no GTIDs (gtid_mode); failing over between the servers in hosts resumes by GTID: set gtid_mode=ON and enforce_gtid_consistency=ON", ErrServerConfig, s.addr())
		}
		row, err := queryString(c, "SELECT @@log_slave_updates")
		if err != nil {
			return si, s.classify("reading log_slave_updates", err)
		}
		if row[0] != "1" && !strings.EqualFold(row[0], "ON") {
			return si, fmt.Errorf("%w: %s has log_slave_updates off, so its binlog lacks the changes it replicates and the source cannot fail over to or from it; start every server listed in hosts with --log-slave-updates", ErrServerConfig, s.addr())
		}
	}
	return si, nil
}

// binlogFiles lists the server's binlog files (SHOW BINARY LOGS).
func binlogFiles(c *client.Conn) ([]string, error) {
	r, err := c.Execute("SHOW BINARY LOGS")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []string
	for _, row := range r.Values {
		out = append(out, string(row[0].AsString()))
	}
	return out, nil
}

// checkPurged returns an error wrapping ErrBinlogPurged when file is no
// longer on the server.
//
// With several servers (hosts) a GTID position is not checked here: its
// file names a binlog of whichever server wrote it, and the server the
// source resumes on reports a GTID it no longer has when the dump starts.
func (s *Source) checkPurged(c *client.Conn, p Position) error {
	if p.File == "" || len(s.servers) > 1 && p.GTID != "" && s.cfg.PositionMode == "gtid" && s.si.gtidMode {
		return nil
	}
	files, err := binlogFiles(c)
	if err != nil {
		return s.classify("listing binlog files", err)
	}
	for _, f := range files {
		if f == p.File {
			return nil
		}
	}
	oldest := "none"
	if len(files) > 0 {
		oldest = files[0]
	}
	return fmt.Errorf("connector %q: %w: position %s needs %s, but the oldest binlog on %s is %s; rows changed since then cannot be streamed. Set on_purged_binlog = \"snapshot\" to take a new snapshot (rows deleted meanwhile stay downstream), or raise the server's binlog retention (expire_logs_days / binlog_expire_logs_seconds)",
		s.cfg.Name, ErrBinlogPurged, p, p.File, s.addr(), oldest)
}

// currentPosition returns the server's binlog end (for snapshot_mode
// never).
func (s *Source) currentPosition(c *client.Conn, si serverInfo) (Position, error) {
	r, err := c.Execute("SHOW MASTER STATUS")
	if err != nil {
		return Position{}, s.classify("SHOW MASTER STATUS", err)
	}
	defer r.Close()
	if len(r.Values) == 0 {
		return Position{}, fmt.Errorf("%w: SHOW MASTER STATUS on %s is empty: binary logging is off", ErrServerConfig, s.addr())
	}
	p := Position{File: string(r.Values[0][0].AsString()), Pos: uint32(r.Values[0][1].AsUint64())}
	if si.flavor == gmysql.MariaDBFlavor {
		row, err := queryString(c, fmt.Sprintf("SELECT BINLOG_GTID_POS('%s', %d)", p.File, p.Pos))
		if err != nil {
			return p, s.classify("BINLOG_GTID_POS", err)
		}
		p.GTID = row[0]
	} else if si.gtidMode && len(r.Values[0]) >= 5 {
		p.GTID = string(r.Values[0][4].AsString())
	}
	return p, nil
}
