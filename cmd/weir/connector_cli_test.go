package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/txntest"
	"weir/internal/weirbin"
)

// TestMain stops the MariaDB server TestConnectorSnapshot starts.
func TestMain(m *testing.M) {
	code := m.Run()
	mysqltest.Stop()
	searchtest.StopShared() // the Elasticsearch of TestWorkerGroupFullProcess
	txntest.Stop()          // the Apache Kafka of TestWorkerGroup
	weirbin.Cleanup()       // the weir binary of the tests that run it
	os.Exit(code)
}

// TestConnectorSnapshot: `weir connector snapshot` writes Debezium's
// execute-snapshot (and stop-snapshot) signal into the signal table of
// the named mysql source, with that source's own connection settings,
// and refuses what cannot work with an error naming the cause.
func TestConnectorSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MariaDB")
	}
	srv := mysqltest.Shared(t)
	db := srv.NewDatabase(t)
	srv.Exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE other (id INT PRIMARY KEY)",
		fmt.Sprintf("GRANT CREATE, INSERT, UPDATE ON `%s`.* TO '%s'@'%%'", db, mysqltest.CDCUser))
	dir := t.TempDir()
	hcl := fmt.Sprintf(`
topic "ddl" {
  name = "shop.schema-changes"
}

source "mysql" "shop" {
  topic          = topic.ddl
  host           = %[1]q
  port           = %[2]d
  user           = %[3]q
  password       = %[4]q
  server_name    = "shop"
  include_tables = ["%[5]s.t"]
  signal_table   = "%[5]s.weir_signal"
}

source "mysql" "nosignal" {
  topic       = topic.ddl
  host        = %[1]q
  port        = %[2]d
  user        = %[3]q
  password    = %[4]q
  server_name = "nosignal"
}
`, srv.Host, srv.Port, mysqltest.CDCUser, mysqltest.CDCPassword, db)
	if err := os.WriteFile(filepath.Join(dir, "pipeline.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustWeir(t, "", "connector", "snapshot", "shop", "--table", db+".t", dir)
	if !regexpLine(out, `signal weir-[0-9a-f]+ written \(execute-snapshot of `+db+`\.t\); source "shop" acts on it .*`) {
		t.Errorf("output: %q", out)
	}
	rows := srv.Query(t, db, "SELECT type, data FROM weir_signal WHERE id LIKE 'weir-%' AND id NOT LIKE 'weir-wm-%' ORDER BY type")
	want := fmt.Sprintf(`{"data-collections":["%s.t"],"type":"incremental","source":"shop"}`, db)
	if len(rows) != 1 || rows[0][0] != "execute-snapshot" || rows[0][1] != want {
		t.Errorf("signal table holds %q, want one execute-snapshot with data %s", rows, want)
	}
	mustWeir(t, "", "connector", "snapshot", "shop", "--stop", dir)
	if rows := srv.Query(t, db, "SELECT COUNT(*) FROM weir_signal WHERE type = 'stop-snapshot'"); rows[0][0] != "1" {
		t.Errorf("%s stop-snapshot signals, want 1", rows[0][0])
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"shop", "--table", db + ".other"}, "matches no table the source captures"},
		{[]string{"shop"}, "name the tables to snapshot with --table"},
		{[]string{"nope", "--table", db + ".t"}, `no source "nope" in the pipeline files (sources: shop, nosignal)`},
		{[]string{"nosignal", "--table", db + ".t"}, "incremental snapshots need signal_table"},
	} {
		_, _, err := runWeir(t, "", append(append([]string{"connector", "snapshot"}, tc.args...), dir)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("weir connector snapshot %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
