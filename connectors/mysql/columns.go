package mysql

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"weir/connectors"
)

// Table blocks: per-table settings of a mysql source, written in HCL as
//
//	table "customers" {
//	  name             = "inventory.customers"  # default: the label
//	  exclude_columns  = ["notes"]        # or include_columns = [...]
//	  mask_columns     = { card = 12 }    # the value becomes 12 '*'
//	  hash_columns     = ["email"]        # hex SHA-256 of hash_salt + value
//	  hash_salt        = var.salt
//	  truncate_columns = { bio = 100 }    # at most 100 characters
//	}
//
// A source with table blocks captures those tables (plus any include_tables
// match); its pipelines refer to a table's topic by the block's label, as
// source.<name>.table["customers"].topic. Debezium's names: column.include.list,
// column.exclude.list, column.mask.with.N.chars,
// column.mask.hash.SHA-256.with.salt.S (hashing strategy V2),
// column.truncate.to.N.chars.

// ErrColumnRule is wrapped when a table block's column settings cannot be
// applied to the table: a primary-key column excluded, masked or
// truncated, a rule naming a column the table does not have (snapshot),
// or truncation of a column that is not text.
var ErrColumnRule = errors.New("column rule cannot be applied")

// tableBlock is the "table" block of the mysql kind.
var tableBlock = connectors.Block{
	Type: "table", Label: "label",
	Doc: "a captured table and its column rules; a source with table blocks captures those tables (plus include_tables matches)",
	Fields: []connectors.Field{
		{Name: "name", Type: connectors.String, Doc: "the table, as db.table (default: the label)"},
		{Name: "include_columns", Type: connectors.StringList, Doc: "glob patterns of the columns to capture (case-insensitive; empty: all); the primary key must be included (Debezium column.include.list)"},
		{Name: "exclude_columns", Type: connectors.StringList, Doc: "glob patterns of the columns to leave out of records and schemas; not primary-key columns (Debezium column.exclude.list)"},
		{Name: "mask_columns", Type: connectors.StringMap, Doc: "column → N: the value becomes N '*' (NULL too), an Avro string (Debezium column.mask.with.N.chars)"},
		{Name: "hash_columns", Type: connectors.StringList, Doc: "columns whose value becomes the hex SHA-256 of hash_salt followed by the value's text (NULL stays NULL), an Avro string (Debezium column.mask.hash.SHA-256.with.salt, strategy V2)"},
		{Name: "hash_salt", Type: connectors.String, Default: "", Doc: "salt of hash_columns (required with them)"},
		{Name: "truncate_columns", Type: connectors.StringMap, Doc: "text column → N: values longer than N characters are cut to N (Debezium column.truncate.to.N.chars)"},
	},
	Validate: func(cfg, b connectors.Config) error {
		c, err := configFrom("", cfg)
		if err != nil {
			return err
		}
		name := tableName(b)
		rules := c.Tables[name]
		for _, o := range cfg.Blocks("table") {
			if o.String("label") != b.String("label") && tableName(o) == name {
				return fmt.Errorf("table %s is also captured by table block %q; one block per table", name, o.String("label"))
			}
		}
		if rules.err != nil {
			return rules.err
		}
		db, table, _ := strings.Cut(name, ".")
		if !c.captureTable(db, table) {
			return fmt.Errorf("table %s is not captured: the source's include_databases, exclude_databases or exclude_tables leave it out", name)
		}
		return nil
	},
	Topic: func(cfg, b connectors.Config) string {
		c, _ := configFrom("", cfg)
		db, table, _ := strings.Cut(tableName(b), ".")
		return c.TableTopic(db, table)
	},
}

// TableRules are the column rules of one table block.
type TableRules struct {
	Include, Exclude []string       // glob patterns, lower case
	Mask             map[string]int // lower-case column → number of '*'
	Hash             []string       // lower-case columns
	Salt             string
	Truncate         map[string]int // lower-case column → characters
	err              error          // why the block is invalid (reported by Validate)
}

// tablesFrom reads the table blocks of a decoded config.
func tablesFrom(c connectors.Config) map[string]*TableRules {
	bs := c.Blocks("table")
	if len(bs) == 0 {
		return nil
	}
	out := make(map[string]*TableRules, len(bs))
	for _, b := range bs {
		out[tableName(b)] = rulesFrom(b)
	}
	return out
}

// tableName is the db.table a table block names: its name, else its label.
func tableName(b connectors.Config) string {
	if n := b.String("name"); n != "" {
		return n
	}
	return b.String("label")
}

func lowerAll(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = strings.ToLower(s)
	}
	return out
}

func rulesFrom(b connectors.Config) *TableRules {
	r := &TableRules{Include: lowerAll(b.Strings("include_columns")), Exclude: lowerAll(b.Strings("exclude_columns")),
		Hash: lowerAll(b.Strings("hash_columns")), Salt: b.String("hash_salt")}
	fail := func(format string, a ...any) *TableRules {
		if r.err == nil {
			r.err = fmt.Errorf(format, a...)
		}
		return r
	}
	if db, t, ok := strings.Cut(tableName(b), "."); !ok || db == "" || t == "" {
		if b.String("name") != "" {
			return fail("name %q must name a table as \"db.table\"", b.String("name"))
		}
		return fail("the label %q does not name a table as \"db.table\": set name = \"db.table\" in the block", b.String("label"))
	}
	if len(r.Include) > 0 && len(r.Exclude) > 0 {
		return fail("set include_columns or exclude_columns, not both")
	}
	for _, k := range []string{"include_columns", "exclude_columns"} {
		for _, p := range b.Strings(k) {
			if _, err := path.Match(p, ""); err != nil {
				return fail("setting %q: bad pattern %q: %v", k, p, err)
			}
		}
	}
	counts := func(setting string) map[string]int {
		m := map[string]int{}
		for col, v := range b.StringMap(setting) {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				fail("setting %q: column %s: %q is not a number of characters from 1 to 65535", setting, col, v)
				continue
			}
			m[strings.ToLower(col)] = n
		}
		return m
	}
	r.Mask, r.Truncate = counts("mask_columns"), counts("truncate_columns")
	if len(r.Hash) > 0 && r.Salt == "" {
		return fail("hash_columns needs hash_salt: an unsalted hash of a low-entropy value (an email, a card number) is reversed by trying candidates")
	}
	// One rule per column: a column excluded, masked, hashed and
	// truncated at once is a mistake.
	by := map[string]string{}
	set := func(col, rule string) {
		if prev, ok := by[col]; ok {
			fail("column %s is in both %s and %s; give it one rule", col, prev, rule)
		}
		by[col] = rule
	}
	for _, c := range sortedKeys(r.Mask) {
		set(c, "mask_columns")
	}
	for _, c := range r.Hash {
		set(c, "hash_columns")
	}
	for _, c := range sortedKeys(r.Truncate) {
		set(c, "truncate_columns")
	}
	for _, c := range sortedKeys(by) {
		if matchAny(r.Exclude, c) || len(r.Include) > 0 && !matchAny(r.Include, c) {
			fail("column %s has a rule in %s but is excluded from the records", c, by[c])
		}
	}
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// columnRule changes a column's values before they are encoded; a
// masked or hashed column becomes an Avro string.
type columnRule struct {
	mask     string // mask_columns: the constant replacement
	salt     []byte // hash_columns (nil: no hashing)
	truncate int    // truncate_columns: characters kept (0: none)
}

// stringOut reports whether the rule makes the column a string.
func (r *columnRule) stringOut() bool { return r.mask != "" || r.salt != nil }

// out is the value c's rule makes of v (v when c has none).
func (c *Column) out(v any) any {
	r := c.rule
	if r == nil {
		return v
	}
	switch {
	case r.mask != "":
		return r.mask
	case v == nil:
		return nil
	case r.salt != nil:
		h := sha256.New()
		h.Write(r.salt)
		if b, ok := v.([]byte); ok && c.Kind == kBytes {
			h.Write(b)
		} else {
			h.Write([]byte(canalString(c, v).(string))) // the value's text, decimals exact
		}
		return hex.EncodeToString(h.Sum(nil))
	case r.truncate > 0:
		if s, ok := v.(string); ok && utf8.RuneCountInString(s) > r.truncate {
			n := 0
			for i := range s {
				if n == r.truncate {
					return s[:i]
				}
				n++
			}
		}
	}
	return v
}

// applyRules applies the table block of t (if any): excluded columns are
// skipped, masked, hashed and truncated ones get their rule. missing lists
// the columns rules name that t does not have.
func (t *Table) applyRules(cfg Config) (missing []string, err error) {
	r := cfg.Tables[t.fullName()]
	if r == nil {
		return nil, nil
	}
	inPK := func(i int) bool {
		for _, k := range t.PK {
			if k == i {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for i := range t.Columns {
		c := &t.Columns[i]
		lc := strings.ToLower(c.Name)
		seen[lc] = true
		if matchAny(r.Exclude, lc) || len(r.Include) > 0 && !matchAny(r.Include, lc) {
			if inPK(i) {
				return nil, fmt.Errorf("%w: column %s of %s is part of the primary key, which is the record key: it cannot be excluded (check include_columns/exclude_columns of table %q)",
					ErrColumnRule, c.Name, t.fullName(), t.fullName())
			}
			c.Skip = true
			continue
		}
		var rule *columnRule
		setting := ""
		if n, ok := r.Mask[lc]; ok {
			rule, setting = &columnRule{mask: strings.Repeat("*", n)}, "mask_columns"
		} else if slices.Contains(r.Hash, lc) {
			rule, setting = &columnRule{salt: []byte(r.Salt)}, "hash_columns"
		} else if n, ok := r.Truncate[lc]; ok {
			if c.Kind != kString && c.Kind != kEnum && c.Kind != kSet {
				return nil, fmt.Errorf("%w: truncate_columns of table %q names %s, a %s column; only text columns can be truncated",
					ErrColumnRule, t.fullName(), c.Name, c.Type)
			}
			rule, setting = &columnRule{truncate: n}, "truncate_columns"
		}
		if rule == nil {
			continue
		}
		if inPK(i) || len(t.PK) == 0 && cfg.NoPrimaryKey == "all_columns" {
			return nil, fmt.Errorf("%w: %s of table %q names %s, which is part of the record key (the primary key, or every column of a table without one); key columns are delivered unchanged",
				ErrColumnRule, setting, t.fullName(), c.Name)
		}
		c.rule = rule
	}
	named := append(append(sortedKeys(r.Mask), r.Hash...), sortedKeys(r.Truncate)...)
	for _, n := range named {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

// checkRulesExist fails when a rule names a column t does not have: the
// snapshot reads the live table, so such a rule is a mistake in the
// configuration. (Streaming only logs it: a binlog event written before
// an ADD COLUMN lacks the column.)
func (t *Table) checkRulesExist(missing []string) error {
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: table block %q names column(s) %s, which %s does not have; remove them from its mask_columns, hash_columns or truncate_columns",
		ErrColumnRule, t.fullName(), strings.Join(missing, ", "), t.fullName())
}
