package mysqltest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"weir/internal/testkit"
)

// Pair is a MariaDB primary and its GTID replica, for failover tests.
type Pair struct {
	Primary, Replica *Server
}

// Server ids of a Pair's servers.
const (
	PrimaryServerID = 11
	ReplicaServerID = 12
)

// StartPair starts a new primary and a new replica (two mariadbd
// processes, each with its own data directory and port; not shared,
// since a test kills one) and sets up replication: both log their
// replicated changes (log_slave_updates) with gtid_strict_mode, both
// binlogs start empty (RESET MASTER), and the replica follows the
// primary by GTID (CHANGE MASTER TO ... MASTER_USE_GTID = slave_pos).
// Extra mariadbd options (args) go to both. The servers stop at tb's
// cleanup. It skips tb when MariaDB is not installed (fails when
// CI=true).
func StartPair(tb testing.TB, args ...string) *Pair {
	tb.Helper()
	if testing.Short() {
		tb.Skip("mysqltest: starts two MariaDB servers: not run with -short")
	}
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("mysqltest: %v (CI=true: MariaDB is required)", err)
		}
		tb.Skipf("mysqltest: %v", err)
	}
	startOne := func(id int) *Server {
		o := Options{Name: "pair", Args: append([]string{"--server-id=" + strconv.Itoa(id), "--log-slave-updates=ON",
			"--gtid-strict-mode=ON", "--slave-net-timeout=5"}, args...)}
		s, err := start(o)
		if err != nil {
			tb.Fatalf("mysqltest: starting server %d of a pair: %v", id, err)
		}
		tb.Cleanup(s.stop)
		return s
	}
	p := &Pair{Primary: startOne(PrimaryServerID), Replica: startOne(ReplicaServerID)}
	p.Primary.Exec(tb, "", "RESET MASTER")
	p.Replica.Exec(tb, "", "STOP SLAVE", "RESET MASTER", "SET GLOBAL gtid_slave_pos = ''",
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST = '%s', MASTER_PORT = %d, MASTER_USER = '%s', MASTER_PASSWORD = '%s', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
			p.Primary.Host, p.Primary.Port, AdminUser, AdminPassword),
		"START SLAVE")
	testkit.CheckFor(tb, 30*time.Second, func() error {
		st := p.Replica.slaveStatus(tb)
		if st["Slave_IO_Running"] != "Yes" || st["Slave_SQL_Running"] != "Yes" {
			return fmt.Errorf("mysqltest: the replica does not replicate: IO %s (%s), SQL %s (%s)", st["Slave_IO_Running"],
				st["Last_IO_Error"], st["Slave_SQL_Running"], st["Last_SQL_Error"])
		}
		return nil
	})
	return p
}

// slaveStatus is SHOW SLAVE STATUS as column → value.
func (s *Server) slaveStatus(tb testing.TB) map[string]string {
	tb.Helper()
	c := s.Conn(tb, "")
	r, err := c.Execute("SHOW SLAVE STATUS")
	if err != nil {
		tb.Fatalf("mysqltest: SHOW SLAVE STATUS: %v", err)
	}
	defer r.Close()
	out := map[string]string{}
	if len(r.Values) == 0 {
		return out
	}
	for i, f := range r.Fields {
		v := &r.Values[0][i]
		if s, ok := v.Value().([]byte); ok {
			out[string(f.Name)] = string(s)
		} else {
			out[string(f.Name)] = fmt.Sprint(v.Value())
		}
	}
	return out
}

// CaughtUp waits until the replica has applied every transaction the
// primary has logged (MASTER_GTID_WAIT on the primary's gtid_binlog_pos),
// failing tb after timeout.
func (p *Pair) CaughtUp(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	pos := p.Primary.Query(tb, "", "SELECT @@gtid_binlog_pos")[0][0]
	got := p.Replica.Query(tb, "", fmt.Sprintf("SELECT MASTER_GTID_WAIT('%s', %g)", pos, timeout.Seconds()))[0][0]
	if got != "0" {
		tb.Fatalf("mysqltest: the replica did not reach the primary's GTID position %s within %v (replica at %s)", pos, timeout,
			strings.Join(p.Replica.Query(tb, "", "SELECT @@gtid_slave_pos")[0], ""))
	}
}

// Promote makes the replica a primary: it stops replicating and takes
// writes (its own GTIDs continue the domain's sequence numbers).
func (p *Pair) Promote(tb testing.TB) {
	tb.Helper()
	p.Replica.Exec(tb, "", "STOP SLAVE", "SET GLOBAL read_only = OFF")
}

// Kill kills the server with SIGKILL (kill -9: no shutdown, no flushing)
// and waits until it is gone. Its data directory stays until cleanup.
func (s *Server) Kill() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}
