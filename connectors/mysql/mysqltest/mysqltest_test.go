package mysqltest

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
)

func TestMain(m *testing.M) { Main(m) }

func TestServer(t *testing.T) {
	s := Shared(t)
	t.Logf("MariaDB %s on %s", s.Version, s.Addr())
	vars := s.Query(t, "", "SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@binlog_row_metadata, @@server_id")
	want := []string{"1", "ROW", "FULL", "FULL", "1"}
	for i, w := range want {
		if vars[0][i] != w {
			t.Errorf("server variable %d = %q, want %q", i, vars[0][i], w)
		}
	}
	if _, err := client.Connect(s.Addr(), CDCUser, "wrong", ""); err == nil {
		t.Fatal("connecting with a wrong password succeeded")
	}
	c, err := client.Connect(s.Addr(), CDCUser, CDCPassword, "")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	db := s.NewDatabase(t)
	s.Exec(t, db, "CREATE TABLE x (id INT PRIMARY KEY)", "INSERT INTO x VALUES (1),(2)")
	if n := s.Query(t, db, "SELECT COUNT(*) FROM x")[0][0]; n != "2" {
		t.Fatalf("count = %s", n)
	}
}
