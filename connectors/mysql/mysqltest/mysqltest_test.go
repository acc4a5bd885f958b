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

func TestOptions(t *testing.T) {
	t.Parallel()
	def := Shared(t).Query(t, "", "SELECT @@character_set_server, @@time_zone")[0]
	if def[0] != "latin1" || def[1] != "SYSTEM" {
		t.Errorf("default server: character_set_server, time_zone = %q, want latin1 (no config file), SYSTEM", def)
	}
	for _, o := range []Options{
		{CharacterSet: "utf8mb4", TimeZone: "America/New_York"},
		{TimeZone: "-07:00", Args: []string{"--binlog-format=MIXED"}},
	} {
		s := SharedWith(t, o)
		if SharedWith(t, o) != s {
			t.Errorf("%+v: a second SharedWith started another server", o)
		}
		got := s.Query(t, "", "SELECT @@character_set_server, @@time_zone, @@binlog_format")[0]
		want := []string{"latin1", o.TimeZone, "ROW"}
		if o.CharacterSet != "" {
			want[0] = o.CharacterSet
		}
		if len(o.Args) > 0 {
			want[2] = "MIXED"
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%+v: variable %d = %q, want %q", o, i, got[i], want[i])
			}
		}
	}
}
