package mysql

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors/conformance"
	"weir/connectors/mysql/mysqltest"
)

// The mysql kind on the shared MariaDB: each id is a row of table t in a
// database of the case's own, inserted in one transaction per Write; the
// records are canal JSON keyed {"id":"N"}.
func TestConformance(t *testing.T) {
	conformance.TestSource(t, conformance.SourceDef{
		Kind: "mysql",
		New: func(t *testing.T, env *conformance.Env, name string) *conformance.SourceCase {
			srv := mysqltest.Shared(t)
			db := srv.NewDatabase(t)
			srv.Exec(t, db, "CREATE TABLE t (id INT PRIMARY KEY, pad MEDIUMTEXT)")
			insert := func(ids []int, pad string) {
				var rows []string
				for _, id := range ids {
					rows = append(rows, fmt.Sprintf("(%d, '%s')", id, pad))
				}
				srv.Exec(t, db, "INSERT INTO t VALUES "+strings.Join(rows, ","))
			}
			return &conformance.SourceCase{
				Config: map[string]any{"host": srv.Host, "port": srv.Port, "user": mysqltest.CDCUser, "password": mysqltest.CDCPassword,
					"server_name": "conf", "include_databases": []any{db}, "format": "canal_json", "heartbeat_interval": "1s"},
				Topic:      "conf." + db + ".t",
				Write:      func(ids ...int) { insert(ids, "") },
				WriteLarge: func(id, size int) { insert([]int{id}, strings.Repeat("x", size)) },
				ID: func(r *kgo.Record) (int, error) {
					var k struct{ ID string }
					if err := json.Unmarshal(r.Key, &k); err != nil {
						return 0, err
					}
					return strconv.Atoi(k.ID)
				},
			}
		},
		BadConfigs: []conformance.BadConfig{
			{Name: "avro without a registry", Setting: "schema_registry_url", Change: func(c map[string]any) { c["format"] = "avro" }},
			{Name: "wrong password", Setting: "password", Change: func(c map[string]any) { c["password"] = "wrong" }},
		},
	})
}
