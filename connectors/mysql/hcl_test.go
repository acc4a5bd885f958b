package mysql

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	_ "weir/connectors/filesink"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/kafkaclient"
	"weir/pipelines"
)

// TestPipelineTableBlocks runs a pipeline file whose mysql source has a
// table block (column rules, a topic block) and whose sink reads the
// table's topic by reference: the rules reach the running source, the
// topic is created as declared, and only the table with a block is
// captured.
func TestPipelineTableBlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec("CREATE TABLE cust (id INT PRIMARY KEY, email VARCHAR(80), notes TEXT)",
		"INSERT INTO cust VALUES (1,'a@example.com','private one'),(2,'b@example.com','private two')",
		"CREATE TABLE other (id INT PRIMARY KEY)", "INSERT INTO other VALUES (1)")
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	src := fmt.Sprintf(`
source "mysql" "db" {
  topic             = "hcl.ddl"
  host              = %q
  port              = %d
  user              = %q
  password          = %q
  server_name       = "hcl"
  include_databases = [%q]
  heartbeat_interval = "1s"

  table "customers" {
    name            = "%s.cust"
    exclude_columns = ["notes"]
    hash_columns    = ["email"]
    hash_salt       = "s"
    topic { partitions = 3 }
  }
}

sink "file" "out" {
  from = [source.db.table["customers"].topic]
  path = %q
}
`, e.db.Host, e.db.Port, mysqltest.CDCUser, mysqltest.CDCPassword, e.name, e.name, out)
	cfg, diags := pipelines.LoadSources([]pipelines.SourceFile{{Name: filepath.Join(dir, "p.hcl"), Src: []byte(src)}}, dir,
		pipelines.Options{SchemaRegistryURL: e.reg, Brokers: []string{e.b.Addr}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{e.b.Addr}}, SchemaRegistry: e.reg, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if _, err := r.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	e.exec("INSERT INTO cust VALUES (3,'c@example.com','private three')", "INSERT INTO other VALUES (2)")
	var lines []string
	testbroker.CheckFor(t, 60*time.Second, func() error {
		b, _ := os.ReadFile(out)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) < 3 || lines[0] == "" {
			return fmt.Errorf("%s has %d lines, want 3", out, len(lines))
		}
		return nil
	})
	// The topic has 3 partitions: the file holds the rows in any order.
	seen := map[int]bool{}
	for i, l := range lines {
		var ev struct {
			After struct{ ID int } `json:"after"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.After.ID < 1 || ev.After.ID > 3 {
			t.Errorf("line %d: %s: no row id 1-3 (%v)", i, l, err)
			continue
		}
		seen[ev.After.ID] = true
		email := fmt.Sprintf("%c@example.com", 'a'+ev.After.ID-1)
		if strings.Contains(l, "private") || strings.Contains(l, "notes") || strings.Contains(l, email) || !strings.Contains(l, sha("s", email)) {
			t.Errorf("line %d: %s: want notes left out and email hashed", i, l)
		}
	}
	if len(seen) != 3 {
		t.Errorf("rows %v in %s, want ids 1, 2 and 3", seen, out)
	}
	topic := "hcl." + e.name + ".cust"
	cl := e.b.Client()
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(context.Background(), topic)
	if err != nil || len(td[topic].Partitions) != 3 {
		t.Errorf("topic %s: %v partitions (%v), want 3 from the table's topic block", topic, len(td[topic].Partitions), err)
	}
	if rs := e.b.ReadAll("hcl." + e.name + ".other"); len(rs) != 0 {
		t.Errorf("a table without a block was captured: %d records", len(rs))
	}
}
