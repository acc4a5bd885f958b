package mysqltest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"weir/internal/testkit"
)

// Credentials of the users the server is initialised with.
const (
	AdminUser     = "admin" // ALL PRIVILEGES WITH GRANT OPTION, from any host
	AdminPassword = "admin-secret"
	CDCUser       = "cdc" // SELECT, RELOAD, REPLICATION SLAVE/CLIENT, BINLOG MONITOR, PROCESS
	CDCPassword   = "cdc-secret"
	ServerID      = 1
)

// Server is a running mariadbd.
type Server struct {
	Host    string // 127.0.0.1
	Port    int
	Dir     string // data directory (and socket, logs)
	Version string

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}
	dbSeq  atomic.Int64
}

// Options selects a server's configuration. Each distinct Options value
// names one server per test binary, started on first use (SharedWith)
// and stopped by Main/Stop; the zero value is the default server of
// Shared.
type Options struct {
	// CharacterSet is the server's default character set
	// (--character-set-server, with its default collation unless
	// Collation is set). "" keeps MariaDB's built-in default, latin1 —
	// what a server started without a config file has.
	CharacterSet string
	Collation    string
	// TimeZone is the server's global time_zone: "" keeps SYSTEM; an
	// offset such as "-07:00"; or a zone name such as "America/New_York"
	// (its zone tables are loaded from /usr/share/zoneinfo).
	TimeZone string
	// Args are extra mariadbd options, after (so overriding) the
	// defaults, e.g. "--binlog-format=STATEMENT".
	Args []string
	// Name tells apart servers whose other options are equal.
	Name string
}

func (o Options) key() string {
	return fmt.Sprintf("%q %q %q %q %q", o.CharacterSet, o.Collation, o.TimeZone, o.Args, o.Name)
}

type entry struct {
	once sync.Once
	srv  *Server
	err  error
}

var (
	mu      sync.Mutex
	servers = map[string]*entry{}
)

// Main runs the package's tests and stops the shared server afterwards:
// func TestMain(m *testing.M) { mysqltest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops every server the test binary started (Main does it).
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	for k, e := range servers {
		e.once.Do(func() {}) // wait for a start in progress
		if e.srv != nil {
			e.srv.stop()
		}
		delete(servers, k)
	}
}

func binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found (install Debian's mariadb-server: apt-get install -y mariadb-server)", name)
}

// Available reports whether mariadbd is installed.
func Available() error {
	if _, err := binary("mariadbd"); err != nil {
		return err
	}
	_, err := binary("mariadb-install-db")
	return err
}

// Shared returns the test process's default server (MariaDB's built-in
// defaults: latin1 server character set, SYSTEM time zone), starting it
// on first use. It skips tb when MariaDB is not installed (fails when
// CI=true).
func Shared(tb testing.TB) *Server {
	tb.Helper()
	return SharedWith(tb, Options{})
}

// SharedWith returns the test process's server configured by o,
// starting it on first use; like Shared otherwise.
func SharedWith(tb testing.TB, o Options) *Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("mysqltest: starts a MariaDB server: not run with -short")
	}
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("mysqltest: %v (CI=true: MariaDB is required)", err)
		}
		tb.Skipf("mysqltest: %v", err)
	}
	mu.Lock()
	e := servers[o.key()]
	if e == nil {
		e = &entry{}
		servers[o.key()] = e
	}
	mu.Unlock()
	e.once.Do(func() { e.srv, e.err = startOnFreePort(o) })
	if e.err != nil {
		tb.Fatalf("mysqltest: %v", e.err)
	}
	return e.srv
}

// startOnFreePort starts a server on a port picked free. Another process
// can take that port before mariadbd binds it (hog passes saw it happen to
// other tests' pre-picked ports): mariadbd then exits with "Address
// already in use" in its error log, and the server is set up again on
// another port.
func startOnFreePort(o Options) (*Server, error) {
	for attempt := 1; ; attempt++ {
		s, err := start(o)
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "Address already in use") {
			return s, err
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

const initSQL = `
CREATE USER IF NOT EXISTS 'admin'@'%' IDENTIFIED BY 'admin-secret';
GRANT ALL PRIVILEGES ON *.* TO 'admin'@'%' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'cdc'@'%' IDENTIFIED BY 'cdc-secret';
GRANT SELECT, RELOAD, PROCESS, REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR, LOCK TABLES ON *.* TO 'cdc'@'%';
FLUSH PRIVILEGES;
`

func start(o Options) (*Server, error) {
	mysqld, err := binary("mariadbd")
	if err != nil {
		return nil, err
	}
	installDB, err := binary("mariadb-install-db")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "weir-mysqltest-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	tmp := filepath.Join(dir, "tmp") // servers started at once must not share temporary files
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, err
	}
	user := []string{}
	if os.Geteuid() == 0 {
		user = []string{"--user=root"}
	}
	args := append([]string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--tmpdir=" + tmp}, user...)
	out, err := exec.Command(installDB, args...).CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "init.sql"), []byte(initSQL), 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	sargs := append([]string{"--no-defaults"}, user...)
	sargs = append(sargs,
		"--datadir="+data,
		"--tmpdir="+tmp,
		"--port="+strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--socket="+filepath.Join(dir, "mysqld.sock"),
		"--pid-file="+filepath.Join(dir, "mysqld.pid"),
		"--log-error="+filepath.Join(dir, "error.log"),
		"--init-file="+filepath.Join(dir, "init.sql"),
		"--log-bin="+filepath.Join(data, "mysql-bin"),
		"--binlog-format=ROW",
		"--binlog-row-image=FULL",
		"--binlog-row-metadata=FULL",
		"--server-id="+strconv.Itoa(ServerID),
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=256M",
		"--innodb-flush-log-at-trx-commit=2",
		"--sync-binlog=0",
		"--max-connections=200",
		"--max-allowed-packet=64M",
	)
	if o.CharacterSet != "" {
		sargs = append(sargs, "--character-set-server="+o.CharacterSet)
	}
	if o.Collation != "" {
		sargs = append(sargs, "--collation-server="+o.Collation)
	}
	if o.TimeZone != "" && !strings.Contains(o.TimeZone, "/") {
		sargs = append(sargs, "--default-time-zone="+o.TimeZone)
	}
	sargs = append(sargs, o.Args...)
	// The watchdog: sh starts mariadbd, and a background reader of sh's
	// stdin (a pipe from this process) kills it when the pipe closes —
	// at Stop, or when this process dies for any reason.
	// (An asynchronous list's stdin is /dev/null unless redirected, hence fd 3.)
	script := `exec 3<&0; "$0" "$@" </dev/null >/dev/null 2>&1 & p=$!; { cat <&3 >/dev/null; kill -9 $p 2>/dev/null; } & wait $p`
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, mysqld}, sargs...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting mariadbd: %w", err)
	}
	s := &Server{Host: "127.0.0.1", Port: port, Dir: dir, cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(s.exited) }()
	var c *client.Conn
	err = testkit.Poll(60*time.Second, func() error {
		select {
		case <-s.exited:
			return testkit.Stop(errors.New("mariadbd exited during startup"))
		default:
		}
		// First a probe that gives up on a silent peer: when another
		// process's listener took the port, it accepts the connection
		// and never greets, while mariadbd exits on "Address already in
		// use".
		probe, err := s.connect("", func(c *client.Conn) error { c.ReadTimeout = 5 * time.Second; return nil })
		if err != nil {
			return fmt.Errorf("mariadbd does not accept connections: %w", err)
		}
		probe.Close()
		c, err = s.connect("")
		return err
	})
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		s.stop()
		return nil, fmt.Errorf("%w: %s", err, tail(log, 3000))
	}
	s.Version = c.GetServerVersion()
	err = s.setZone(c, o.TimeZone)
	c.Close()
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// setZone loads a named time zone's tables and makes it the global
// time_zone (offsets are set on the command line).
func (s *Server) setZone(c *client.Conn, zone string) error {
	if !strings.Contains(zone, "/") {
		return nil
	}
	tzsql, err := binary("mariadb-tzinfo-to-sql")
	if err != nil {
		return err
	}
	mariadb, err := binary("mariadb")
	if err != nil {
		return err
	}
	load := exec.Command("/bin/sh", "-c", `"$0" "$1" "$2" | "$3" --no-defaults -h127.0.0.1 -P"$4" -u"$5" -p"$6" mysql`,
		tzsql, filepath.Join("/usr/share/zoneinfo", zone), zone, mariadb, strconv.Itoa(s.Port), AdminUser, AdminPassword)
	if out, err := load.CombinedOutput(); err != nil {
		return fmt.Errorf("loading time zone %s: %v: %s", zone, err, out)
	}
	if _, err := c.Execute("SET GLOBAL time_zone = '" + zone + "'"); err != nil {
		return fmt.Errorf("setting time_zone %s: %w", zone, err)
	}
	return nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func (s *Server) stop() {
	s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	os.RemoveAll(s.Dir)
}

// connect opens an admin connection whose session is utf8mb4 (go-mysql's
// handshake asks for a collation MariaDB does not know, which leaves the
// session in the server's default character set, latin1 by default).
func (s *Server) connect(db string, options ...client.Option) (*client.Conn, error) {
	c, err := client.Connect(s.Addr(), AdminUser, AdminPassword, db, options...)
	if err != nil {
		return nil, err
	}
	if _, err := c.Execute("SET NAMES utf8mb4"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// Conn opens an admin connection (closed at cleanup) on database db ("":
// none).
func (s *Server) Conn(tb testing.TB, db string) *client.Conn {
	tb.Helper()
	c, err := s.connect(db)
	if err != nil {
		tb.Fatalf("mysqltest: connecting as %s: %v", AdminUser, err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Exec runs statements on a fresh admin connection, failing tb on error.
func (s *Server) Exec(tb testing.TB, db string, stmts ...string) {
	tb.Helper()
	c, err := s.connect(db)
	if err != nil {
		tb.Fatalf("mysqltest: connecting: %v", err)
	}
	defer c.Close()
	for _, q := range stmts {
		if _, err := c.Execute(q); err != nil {
			tb.Fatalf("mysqltest: %s: %v", q, err)
		}
	}
}

// Query runs one query on a fresh admin connection and returns the rows
// as strings (SQL NULL as "NULL").
func (s *Server) Query(tb testing.TB, db, q string) [][]string {
	tb.Helper()
	c, err := s.connect(db)
	if err != nil {
		tb.Fatalf("mysqltest: connecting: %v", err)
	}
	defer c.Close()
	r, err := c.Execute(q)
	if err != nil {
		tb.Fatalf("mysqltest: %s: %v", q, err)
	}
	defer r.Close()
	out := make([][]string, len(r.Values))
	for i, row := range r.Values {
		out[i] = make([]string, len(row))
		for j := range row {
			switch row[j].Type {
			case mysql.FieldValueTypeNull:
				out[i][j] = "NULL"
			case mysql.FieldValueTypeString:
				out[i][j] = string(row[j].AsString())
			default:
				out[i][j] = row[j].String()
			}
		}
	}
	return out
}

// NewDatabase creates a database with a unique name for tb and drops it
// at cleanup.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%s", s.dbSeq.Add(1), sanitize(tb.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	s.Exec(tb, "", "CREATE DATABASE `"+name+"`")
	tb.Cleanup(func() {
		c, err := s.connect("")
		if err == nil {
			c.Execute("DROP DATABASE IF EXISTS `" + name + "`")
			c.Close()
		}
	})
	return name
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// KillConnections kills every server connection whose command (as SHOW
// PROCESSLIST reports it, e.g. "Binlog Dump") or user matches, and
// returns how many it killed.
func (s *Server) KillConnections(tb testing.TB, match func(user, command string) bool) int {
	tb.Helper()
	c, err := s.connect("")
	if err != nil {
		tb.Fatalf("mysqltest: connecting: %v", err)
	}
	defer c.Close()
	r, err := c.Execute("SELECT ID, USER, COMMAND FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID()")
	if err != nil {
		tb.Fatalf("mysqltest: processlist: %v", err)
	}
	n := 0
	for _, row := range r.Values {
		id, user, cmd := row[0].AsInt64(), string(row[1].AsString()), string(row[2].AsString())
		if match(user, cmd) {
			if _, err := c.Execute(fmt.Sprintf("KILL %d", id)); err != nil {
				var me *mysql.MyError
				if errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_THREAD {
					continue
				}
				tb.Fatalf("mysqltest: KILL %d: %v", id, err)
			}
			n++
		}
	}
	return n
}

// WaitReady polls until the server answers or ctx ends.
func (s *Server) WaitReady(ctx context.Context) error {
	for {
		c, err := s.connect("")
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
