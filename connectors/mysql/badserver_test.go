package mysql

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/connectors"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/testkit"
)

// pollUntilError drives a source directly until Poll fails.
func pollUntilError(t *testing.T, cfg Config) error {
	t.Helper()
	src := New(cfg)
	if err := src.Open(context.Background(), &testContext{name: cfg.Name}, nil); err != nil {
		return err
	}
	defer src.Close()
	var err error
	testkit.CheckFor(t, 60*time.Second, func() error {
		if _, err = src.Poll(context.Background(), nil); err == nil {
			return errors.New("Poll did not fail")
		}
		return nil
	})
	return err
}

// TestNotRowFormat: a server logging STATEMENT binlogs is refused,
// naming the setting to change.
func TestNotRowFormat(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, mysqltest.SharedWith(t, mysqltest.Options{Args: []string{"--binlog-format=STATEMENT"}}))
	e.exec("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)")
	err := pollUntilError(t, e.config("stmt"))
	if !errors.Is(err, ErrServerConfig) || !strings.Contains(err.Error(), "binlog_format=STATEMENT") || !strings.Contains(err.Error(), "set binlog_format=ROW") {
		t.Fatalf("error %v: want ErrServerConfig naming binlog_format", err)
	}
}

// TestMissingPrivileges: a user without REPLICATION SLAVE/CLIENT gets an
// error naming the grants it needs, and no record is written.
func TestMissingPrivileges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)",
		"CREATE USER IF NOT EXISTS 'norepl'@'%' IDENTIFIED BY 'pw'", "GRANT SELECT, RELOAD ON *.* TO 'norepl'@'%'")
	t.Cleanup(func() { e.db.Exec(t, "", "DROP USER IF EXISTS 'norepl'@'%'") })
	cfg := e.config("norepl")
	cfg.User, cfg.Password = "norepl", "pw"
	err := pollUntilError(t, cfg)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "REPLICATION SLAVE") || !strings.Contains(err.Error(), `"norepl"`) {
		t.Fatalf("error %v: want ErrAuth naming the user and the REPLICATION grants", err)
	}
}

// TestTableDroppedMidSnapshot: a table dropped after the snapshot began
// and before it was read stops the source with an error naming it,
// instead of leaving the table out silently.
func TestTableDroppedMidSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec("CREATE TABLE a (id INT PRIMARY KEY)", "INSERT INTO a SELECT seq FROM seq_1_to_100",
		"CREATE TABLE b (id INT PRIMARY KEY)", "INSERT INTO b VALUES (1)")
	cfg := e.config("dropped")
	cfg.ChunkRows = 10
	src := New(cfg)
	if err := src.Open(context.Background(), &testContext{name: "dropped"}, nil); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	recs, err := src.Poll(context.Background(), nil) // the snapshot has begun: a's first chunk
	if err != nil || len(recs) == 0 {
		t.Fatalf("first poll: %d records, %v", len(recs), err)
	}
	e.exec("DROP TABLE b")
	for i := 0; i < 100 && err == nil; i++ {
		_, err = src.Poll(context.Background(), nil)
	}
	if !errors.Is(err, ErrTableDropped) || !strings.Contains(err.Error(), e.name+".b") || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("error %v: want ErrTableDropped naming the table", err)
	}
	if errors.Is(err, connectors.ErrRetriable) {
		t.Fatalf("error %v is retriable: the snapshot would skip the table silently on retry", err)
	}
}

// TestNoUTF8MB4Session: weir checks the session character set the
// server answers instead of trusting the driver. No MariaDB refuses
// utf8mb4, so a proxy between the source and a real server rewrites
// SET NAMES utf8mb4 into SET NAMES latin1, as a misconfigured
// middlebox or a server without utf8mb4 would leave the session.
func TestNoUTF8MB4Session(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(10) CHARACTER SET utf8mb4)", "INSERT INTO t VALUES (1, '李')")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", e.db.Addr())
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(c, s); c.Close() }()
			go func() { rewriteCopy(s, c, []byte("SET NAMES utf8mb4"), []byte("SET NAMES latin1 ")); s.Close() }()
		}
	}()
	cfg := e.config("latin1-proxy")
	cfg.Host = "127.0.0.1"
	cfg.Port = l.Addr().(*net.TCPAddr).Port
	err = pollUntilError(t, cfg)
	if !errors.Is(err, ErrCharset) || !strings.Contains(err.Error(), "latin1/latin1/latin1") || !strings.Contains(err.Error(), "127.0.0.1:"+strconv.Itoa(cfg.Port)) {
		t.Fatalf("error %v: want ErrCharset naming the server and the character sets it answered", err)
	}
	if rs := e.b.ReadAll(e.topic("t")); len(rs) != 0 {
		t.Fatalf("%d records written through a latin1 session", len(rs))
	}
}

// rewriteCopy copies src to dst replacing old by new (same length) in
// each read (the client writes a query in one packet).
func rewriteCopy(dst io.Writer, src io.Reader, old, new []byte) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(bytes.ReplaceAll(buf[:n], old, new)); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
