package connectors

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

var blockSpec = Spec{
	Fields: []Field{{Name: "prefix", Type: String, Default: "p"}},
	Blocks: []Block{{
		Type: "table", Label: "name",
		Fields: []Field{{Name: "cols", Type: StringList}, {Name: "sizes", Type: StringMap}, {Name: "n", Type: Int, Default: 1}},
		Validate: func(cfg, b Config) error {
			if b.Int("n") > 5 {
				return fmt.Errorf("setting %q must be at most 5", "n")
			}
			return nil
		},
		Topic: func(cfg, b Config) string { return cfg.String("prefix") + "." + b.String("name") },
	}},
}

func TestSpecBlocks(t *testing.T) {
	t.Parallel()
	cfg, err := blockSpec.Decode(map[string]any{"prefix": "shop", "table": []any{
		map[string]any{"name": "db.a", "cols": []any{"x"}, "sizes": map[string]any{"x": 12.0, "y": "3", "z": true}},
		map[string]any{"name": "db.b"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	bs := cfg.Blocks("table")
	if len(bs) != 2 || bs[0].String("name") != "db.a" || bs[1].String("name") != "db.b" {
		t.Fatalf("blocks = %v", bs)
	}
	if got := bs[0].StringMap("sizes"); got["x"] != "12" || got["y"] != "3" || got["z"] != "true" {
		t.Errorf("sizes = %v", got)
	}
	if bs[1].Int("n") != 1 || bs[0].Strings("cols")[0] != "x" {
		t.Errorf("defaults or lists not decoded: %v", bs)
	}
	tp := blockSpec.BlockTopics(cfg)["table"]
	if len(tp) != 2 || tp[0] != [2]string{"db.a", "shop.db.a"} || tp[1] != [2]string{"db.b", "shop.db.b"} {
		t.Errorf("BlockTopics = %v", tp)
	}
	if cfg, err := blockSpec.Decode(map[string]any{}); err != nil || cfg.Blocks("table") != nil {
		t.Errorf("no blocks: %v, %v", cfg, err)
	}
}

func TestSpecBlocksErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"table": []any{map[string]any{"cols": "x"}}}, `label "name" is required`},
		{map[string]any{"table": []any{map[string]any{"name": "a"}, map[string]any{"name": "a"}}}, `block table "a" is declared twice`},
		{map[string]any{"table": []any{map[string]any{"name": "a", "bogus": 1}}}, `block table "a": unknown setting bogus`},
		{map[string]any{"table": []any{map[string]any{"name": "a", "n": 6}}}, `block table "a": setting "n" must be at most 5`},
		{map[string]any{"table": []any{map[string]any{"name": "a", "sizes": map[string]any{"x": 1.5}}}}, `key "x": want a string`},
		{map[string]any{"table": "a"}, `want a list of blocks`},
		{map[string]any{"tables": []any{}}, `unknown setting tables (known: prefix, table)`},
	} {
		_, err := blockSpec.Decode(tc.raw)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%v) = %v, want ErrConfig containing %q", tc.raw, err, tc.want)
		}
	}
	bad := Spec{Fields: []Field{{Name: "table", Type: String}}, Blocks: []Block{{Type: "table", Label: "name"}}}
	if err := bad.check(); err == nil {
		t.Error("a block named like a field was accepted")
	}
}
