package pipelines_test

import (
	"slices"
	"strings"
	"testing"

	_ "weir/connectors/mysql"
	"weir/pipelines"
)

const tablesHCL = `
variable "db" {
  type    = string
  default = "inv"
}

topic "counts" {}

source "mysql" "shop" {
  topic          = "shop.schema-changes"
  user           = "cdc"
  server_name    = "shop"
  topic_template = "{server}.{db}.{table}"
  include_databases = [var.db]

  table "customers" {
    name            = "${var.db}.customers"
    exclude_columns = ["notes"]
    mask_columns    = { card = 4 }
    topic {
      partitions = 3
      config     = { "cleanup.policy" = "compact" }
    }
  }
  table "inv.order_lines" {}
}

sink "stdout" "customers" {
  from = [source.shop.table["customers"].topic]
}

sink "stdout" "lines" {
  from = [source.shop.table["${"inv"}.order_lines"].topic]
}

stream "all" {
  from = source.shop.topics
  to   = topic.counts
}
`

// TestSourceTableTopics: a mysql source's table blocks name the topics it
// writes; sinks and streams refer to them, the graph shows source → table
// topic → sink/stream, and a table's topic block declares the topic.
func TestSourceTableTopics(t *testing.T) {
	t.Parallel()
	cfg, diags := loadOne("tables.hcl", []byte(tablesHCL))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	src := cfg.Sources[0]
	want := []pipelines.BlockTopic{{Block: "table", Label: "customers", Topic: "shop.inv.customers"},
		{Block: "table", Label: "inv.order_lines", Topic: "shop.inv.order_lines"}}
	if len(src.BlockTopics) != 2 {
		t.Fatalf("block topics %+v", src.BlockTopics)
	}
	for i, w := range want {
		if g := src.BlockTopics[i]; g.Block != w.Block || g.Label != w.Label || g.Topic != w.Topic || g.Range.Start.Line == 0 {
			t.Errorf("block topic %d = %+v, want %+v", i, g, w)
		}
	}
	if bs := src.Config.Blocks("table"); len(bs) != 2 || bs[0].StringMap("mask_columns")["card"] != "4" || bs[0].Strings("exclude_columns")[0] != "notes" {
		t.Errorf("table blocks reach the connector as %v", bs)
	}
	tp := cfg.Topic("shop.inv.customers")
	if tp == nil || tp.Partitions != 3 || tp.Configs["cleanup.policy"] != "compact" || tp.Hash == "" {
		t.Errorf("table topic declared as %+v", tp)
	}
	if cfg.Topic("shop.inv.order_lines") != nil {
		t.Error("a table without a topic block declared a topic")
	}
	if got := cfg.Sinks[0].From; !slices.Equal(got, []string{"shop.inv.customers"}) {
		t.Errorf("sink from %v", got)
	}
	if got := cfg.Sinks[1].From; !slices.Equal(got, []string{"shop.inv.order_lines"}) {
		t.Errorf("sink (template key) from %v", got)
	}
	if got := cfg.Streams[0].From; !slices.Equal(got, []string{"shop.inv.customers", "shop.inv.order_lines"}) {
		t.Errorf("stream from %v", got)
	}
	dot := cfg.Graph.DOT()
	for _, e := range []string{
		`"source.shop" -> "topic.shop.inv.customers";`,
		`"source.shop" -> "topic.shop.inv.order_lines";`,
		`"topic.shop.inv.customers" -> "sink.customers";`,
		`"topic.shop.inv.order_lines" -> "sink.lines";`,
		`"topic.shop.inv.customers" -> "stream.all";`,
		`"topic.shop.inv.order_lines" -> "stream.all";`,
		`"stream.all" -> "topic.counts";`,
		`"topic.shop.inv.customers" [shape=cylinder];`,
	} {
		if !strings.Contains(dot, e) {
			t.Errorf("graph lacks %s:\n%s", e, dot)
		}
	}
	// Changing a table block changes the source's hash (weir run restarts
	// it on reload); the sinks are unchanged.
	cfg2, diags := loadOne("tables.hcl", []byte(strings.Replace(tablesHCL, `card = 4`, `card = 6`, 1)))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if cfg2.Sources[0].Hash == src.Hash || cfg2.Sinks[0].Hash != cfg.Sinks[0].Hash {
		t.Error("hashes do not follow the table block")
	}
}
