package mysql

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"weir/connectors"
)

// tableRules decodes table blocks through the kind's spec, as a pipeline
// file's table blocks are, for a source capturing database db.
func tableRules(t *testing.T, db string, blocks ...map[string]any) map[string]*TableRules {
	t.Helper()
	bs := make([]any, len(blocks))
	for i, b := range blocks {
		if b["label"] == nil {
			b["label"] = b["name"]
		}
		bs[i] = b
	}
	cfg, err := Kind.Spec.Decode(map[string]any{"user": "u", "server_name": "srv", "schema_registry_url": "http://127.0.0.1:1",
		"include_databases": []any{db}, "table": bs})
	if err != nil {
		t.Fatal(err)
	}
	c, err := configFrom("x", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c.Tables
}

func sha(salt, v string) string {
	h := sha256.Sum256([]byte(salt + v))
	return hex.EncodeToString(h[:])
}

// TestColumnRules: include/exclude, mask, hash and truncation of a table
// block, in the snapshot and the binlog path, in the records and in the
// registered Avro schema.
func TestColumnRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec("CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(40), email VARCHAR(80), card VARCHAR(20), pin INT, "+
		"score DECIMAL(5,2), bio TEXT, notes TEXT, secret BLOB, shape GEOMETRY NULL) DEFAULT CHARSET=utf8mb4",
		"INSERT INTO people VALUES (1,'Zoë','zoe@example.com','4111-1111',1234,12.50,'héllo wörld','n1','s1',NULL),"+
			"(2,'李雷',NULL,NULL,NULL,NULL,'短い',NULL,NULL,NULL)",
		"CREATE TABLE other (id INT PRIMARY KEY, v INT)", "INSERT INTO other VALUES (1,1)")
	cfg := e.config("cols")
	full := e.name + ".people"
	cfg.Tables = tableRules(t, e.name, map[string]any{"name": full, "exclude_columns": []any{"NOTES", "sec*", "shape"},
		"mask_columns": map[string]any{"card": 4.0, "pin": "3"}, "hash_columns": []any{"email", "score"}, "hash_salt": "pepper",
		"truncate_columns": map[string]any{"bio": 5.0}})
	e.run(cfg)

	want := func(id int32, name, email, card, pin, score, bio any) map[string]any {
		return map[string]any{"id": id, "name": name, "email": email, "card": card, "pin": pin, "score": score, "bio": bio}
	}
	check := func(got, want map[string]any, what string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: fields %v, want exactly %v", what, got, want)
		}
		for k, w := range want {
			g := got[k]
			if m, ok := g.(map[string]any); ok { // a nullable field's union branch
				for _, x := range m {
					g = x
				}
			}
			if g != w {
				t.Errorf("%s: %s = %#v, want %#v", what, k, g, w)
			}
		}
	}
	rs := e.waitRecords(e.topic("people"), 2, 30*time.Second)
	check(e.decode(rs[0]).after, want(1, "Zoë", sha("pepper", "zoe@example.com"), "****", "***", sha("pepper", "12.50"), "héllo"), "snapshot row 1")
	check(e.decode(rs[1]).after, want(2, "李雷", nil, "****", "***", nil, "短い"), "snapshot row 2")

	e.exec("INSERT INTO people VALUES (3,'Ann','ann@example.com','5500',77,0.5,'abcdefgh','n3','s3',ST_GeomFromText('POINT(1 1)'))",
		"UPDATE people SET email = 'new@example.com', bio = 'xyz' WHERE id = 1", "DELETE FROM people WHERE id = 2")
	rs = e.waitRecords(e.topic("people"), 2+1+1+2, 30*time.Second)
	ins, upd, del := e.decode(rs[2]), e.decode(rs[3]), e.decode(rs[4])
	check(ins.after, want(3, "Ann", sha("pepper", "ann@example.com"), "****", "***", sha("pepper", "0.50"), "abcde"), "insert")
	check(upd.before, want(1, "Zoë", sha("pepper", "zoe@example.com"), "****", "***", sha("pepper", "12.50"), "héllo"), "update before")
	check(upd.after, want(1, "Zoë", sha("pepper", "new@example.com"), "****", "***", sha("pepper", "12.50"), "xyz"), "update after")
	check(del.before, want(2, "李雷", nil, "****", "***", nil, "短い"), "delete before")
	if ins.op != "c" || upd.op != "u" || del.op != "d" || upd.key["id"] != int32(1) {
		t.Errorf("ops %s %s %s, update key %v", ins.op, upd.op, del.op, upd.key)
	}

	// The registered schema: excluded columns absent, masked and hashed
	// columns strings, the rest as without rules.
	cl, err := sr.NewClient(sr.URLs(e.reg))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.SchemaByVersion(context.Background(), e.topic("people")+"-value", -1)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Fields []struct {
			Name string
			Type json.RawMessage
		}
	}
	json.Unmarshal([]byte(ss.Schema.Schema), &env)
	var value struct {
		Fields []struct {
			Name string
			Type any
		}
	}
	var before []any
	json.Unmarshal(env.Fields[0].Type, &before)
	b, _ := json.Marshal(before[1])
	json.Unmarshal(b, &value)
	types := map[string]string{}
	for _, f := range value.Fields {
		tb, _ := json.Marshal(f.Type)
		types[f.Name] = string(tb)
	}
	wantTypes := map[string]string{"id": `"int"`, "name": `["null","string"]`, "email": `["null","string"]`, "card": `["null","string"]`,
		"pin": `["null","string"]`, "score": `["null","string"]`, "bio": `["null","string"]`}
	if len(types) != len(wantTypes) {
		t.Errorf("value fields %v, want %v", types, wantTypes)
	}
	for k, w := range wantTypes {
		if types[k] != w {
			t.Errorf("schema of %s: %s, want %s", k, types[k], w)
		}
	}
	// A table without a block is captured only through include_tables:
	// table blocks name the captured tables.
	if n := len(e.b.ReadAll(e.topic("other"))); n != 0 {
		t.Errorf("table without a block has %d records", n)
	}

	// canal FlatMessage JSON: the same rules, and old values after them.
	cj := e.config("cols-canal")
	cj.Format, cj.ServerName, cj.Tables = "canal_json", "cj", cfg.Tables
	e.run(cj)
	ctopic := "cj." + e.name + ".people"
	e.waitRecords(ctopic, 2, 30*time.Second)
	e.exec("UPDATE people SET bio = '0123456789', card = '1' WHERE id = 3")
	rs = e.waitRecords(ctopic, 3, 30*time.Second)
	var fm flatMessage
	if err := json.Unmarshal(rs[2].Value, &fm); err != nil {
		t.Fatal(err)
	}
	d, old := fm.Data[0], fm.Old[0]
	if d["email"] != sha("pepper", "ann@example.com") || d["card"] != "****" || d["pin"] != "***" || d["bio"] != "01234" ||
		d["notes"] != nil || d["secret"] != nil || len(d) != 7 || len(old) != 1 || old["bio"] != "abcde" || fm.MysqlType["notes"] != "" {
		t.Errorf("canal message data %v old %v types %v", d, old, fm.MysqlType)
	}
}

// TestColumnRuleErrors: rules a table cannot take stop the source with an
// error naming the table, the column and the setting; nothing is sent.
func TestColumnRuleErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.exec("CREATE TABLE t1 (id INT, k2 INT, v VARCHAR(10), n INT, PRIMARY KEY (id, k2))", "INSERT INTO t1 VALUES (1,1,'a',1)",
		"CREATE TABLE nopk (a INT, b VARCHAR(10))")
	full := e.name + ".t1"
	for _, tc := range []struct {
		name  string
		block map[string]any
		want  []string
	}{
		{"exclude-pk", map[string]any{"exclude_columns": []any{"k2"}}, []string{"column k2 of " + full, "primary key", "cannot be excluded"}},
		{"include-without-pk", map[string]any{"include_columns": []any{"id", "v"}}, []string{"column k2", "primary key"}},
		{"mask-pk", map[string]any{"mask_columns": map[string]any{"id": 3.0}}, []string{"mask_columns", "names id", "record key"}},
		{"truncate-int", map[string]any{"truncate_columns": map[string]any{"n": 3.0}}, []string{"truncate_columns", "names n, a int", "text columns"}},
		{"missing-column", map[string]any{"hash_columns": []any{"nope"}, "hash_salt": "s"}, []string{"names column(s) nope", "does not have"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.block["name"] = full
			cfg := e.config("rules-" + tc.name)
			cfg.Tables = tableRules(t, e.name, tc.block)
			r := e.run(cfg)
			err := waitStopped(t, r, 30*time.Second)
			if !errors.Is(err, ErrColumnRule) {
				t.Fatalf("error %v, want ErrColumnRule", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if n := len(e.b.ReadAll(e.topic("t1"))); n != 0 {
		t.Errorf("%d records sent", n)
	}
	// A masked column of a table keyed by all its columns would change
	// the key: refused too.
	cfg := e.config("rules-nopk")
	cfg.NoPrimaryKey = "all_columns"
	cfg.Tables = tableRules(t, e.name, map[string]any{"name": e.name + ".nopk", "mask_columns": map[string]any{"b": 2.0}})
	e.exec("INSERT INTO nopk VALUES (1,'x')")
	if err := waitStopped(t, e.run(cfg), 30*time.Second); !errors.Is(err, ErrColumnRule) || !strings.Contains(err.Error(), "every column of a table without one") {
		t.Fatalf("error %v, want ErrColumnRule about the all-columns key", err)
	}
}

// TestTableBlockConfig: mistakes in table blocks are configuration errors
// naming the block and the setting.
func TestTableBlockConfig(t *testing.T) {
	base := map[string]any{"user": "u", "server_name": "shop", "schema_registry_url": "http://127.0.0.1:1", "include_databases": []any{"inv"}}
	decode := func(extra map[string]any, blocks ...map[string]any) (connectors.Config, error) {
		raw := map[string]any{}
		for k, v := range base {
			raw[k] = v
		}
		for k, v := range extra {
			raw[k] = v
		}
		var bs []any
		for _, b := range blocks {
			bs = append(bs, b)
		}
		raw["table"] = bs
		return Kind.Spec.Decode(raw)
	}
	cfg, err := decode(map[string]any{"topic_template": "cdc.{db}_{table}"}, map[string]any{"label": "inv.orders"}, map[string]any{"label": "lines", "name": "inv.lines"})
	if err != nil {
		t.Fatal(err)
	}
	tp := Kind.Spec.BlockTopics(cfg)["table"]
	if len(tp) != 2 || tp[0] != [2]string{"inv.orders", "cdc.inv_orders"} || tp[1] != [2]string{"lines", "cdc.inv_lines"} {
		t.Errorf("topics %v", tp)
	}
	c, _ := configFrom("x", cfg)
	if !c.captureTable("inv", "orders") || c.captureTable("inv", "other") {
		t.Error("table blocks do not name the captured tables")
	}
	c.IncludeTables = []string{"inv.o*"}
	if !c.captureTable("inv", "other") || !c.captureTable("inv", "lines") {
		t.Error("include_tables and table blocks do not add up")
	}
	if _, err := decode(nil, map[string]any{"label": "a", "name": "inv.t"}, map[string]any{"label": "b", "name": "inv.t"}); err == nil ||
		!strings.Contains(err.Error(), `table inv.t is also captured by table block "b"`) {
		t.Errorf("two blocks for one table: %v", err)
	}
	for _, tc := range []struct {
		extra map[string]any
		block map[string]any
		want  string
	}{
		{nil, map[string]any{"label": "orders"}, `the label "orders" does not name a table as "db.table": set name = "db.table"`},
		{nil, map[string]any{"label": "o", "name": "orders"}, `name "orders" must name a table as "db.table"`},
		{nil, map[string]any{"label": "other.orders"}, `table other.orders is not captured`},
		{map[string]any{"exclude_tables": []any{"inv.ord*"}}, map[string]any{"label": "o", "name": "inv.orders"}, `table inv.orders is not captured`},
		{nil, map[string]any{"label": "inv.o", "include_columns": []any{"a"}, "exclude_columns": []any{"b"}}, "not both"},
		{nil, map[string]any{"label": "inv.o", "hash_columns": []any{"email"}}, "hash_columns needs hash_salt"},
		{nil, map[string]any{"label": "inv.o", "mask_columns": map[string]any{"c": 0.0}}, `column c: "0" is not a number of characters`},
		{nil, map[string]any{"label": "inv.o", "truncate_columns": map[string]any{"c": "x"}}, `"x" is not a number`},
		{nil, map[string]any{"label": "inv.o", "mask_columns": map[string]any{"c": 2.0}, "hash_columns": []any{"C"}, "hash_salt": "s"}, "column c is in both mask_columns and hash_columns"},
		{nil, map[string]any{"label": "inv.o", "mask_columns": map[string]any{"c": 2.0}, "exclude_columns": []any{"c*"}}, "column c has a rule in mask_columns but is excluded"},
		{nil, map[string]any{"label": "inv.o", "exclude_columns": []any{"["}}, "bad pattern"},
	} {
		_, err := decode(tc.extra, tc.block)
		if !errors.Is(err, connectors.ErrConfig) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "block table") {
			t.Errorf("%v: %v, want a config error about the block saying %q", tc.block, err, tc.want)
		}
	}
}
