package pipelines

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// testPipeline is a pipeline with a source (file lines parsed), an Avro
// topic, a stream over it with a route and select_key, and a transform
// block: the targets of the tests below.
const testPipeline = `variable "slow_ms" {
  type    = number
  default = 500
}

topic "logs" {
  schema = <<EOT
{"type": "record", "name": "Log", "fields": [
  {"name": "level", "type": "string"},
  {"name": "service", "type": "string"},
  {"name": "ms", "type": ["null", "long"], "default": null},
  {"name": "msg", "type": "string", "default": ""}
]}
EOT
}

topic "slow" {}
topic "errors" {}

source "file" "app" {
  topic   = topic.logs
  include = ["/nonexistent/*.log"]
  parse_regex {
    pattern = "^(?P<level>[A-Z]+) \\[(?P<service>[^\\]]+)\\] (?P<msg>.*?)(?: ms=(?P<ms>\\d+))?$"
  }
  set {
    level = lower(record.level)
  }
  filter {
    condition = record.level != "debug"
  }
}

stream "slow" {
  from       = [topic.logs]
  to         = topic.slow
  select_key = record.service
  filter {
    condition = record.ms != null && record.ms >= var.slow_ms
  }
  set {
    alert = "${record.service}: ${record.ms} ms"
  }
  route {
    topic     = topic.errors
    condition = record.level == "error"
  }
}

transform "tidy" {
  set {
    msg = trimspace(record.message)
  }
  remove {
    fields = ["message"]
  }
}

topic "totals" {}

stream "totals" {
  from     = [topic.logs]
  to       = topic.totals
  group_by = record.service
  aggregate {
    initial = 0
    add     = agg + record.ms
    field   = "total_ms"
  }
}

transform "tag" {
  set {
    tagged = startswith(record.msg, "padded")
  }
}
`

func loadTests(t *testing.T, tests string) (*Config, hcl.Diagnostics) {
	t.Helper()
	return LoadSources([]SourceFile{{Name: "p.hcl", Src: []byte(testPipeline)}, {Name: "t.hcl", Src: []byte(tests)}}, ".", Options{Tests: true})
}

func runTestBlocks(t *testing.T, tests string) []TestResult {
	t.Helper()
	cfg, diags := loadTests(t, tests)
	if diags.HasErrors() {
		t.Fatalf("load: %s", diagLines(diags))
	}
	return RunTests(context.Background(), cfg)
}

func diagLines(diags hcl.Diagnostics) string {
	var sb strings.Builder
	for _, d := range diags {
		sb.WriteString(DiagLine(d))
		sb.WriteByte('\n')
	}
	return sb.String()
}

func TestTestBlocksPass(t *testing.T) {
	t.Parallel()
	res := runTestBlocks(t, `
test "parsed" {
  target = source.app
  input {
    value     = "INFO [checkout] order placed ms=35"
    key       = "k1"
    headers   = { trace = "abc" }
    timestamp = "2024-05-01T10:00:00Z"
  }
  input {
    value = "DEBUG [checkout] cache"
  }
  input {
    value = "WARN [search] Grüße aus Köln → 東京"
  }
  output {
    topic     = topic.logs
    value     = { level = "info", service = "checkout", ms = 35, msg = "order placed" }
    key       = "k1"
    headers   = { trace = "abc" }
    timestamp = "2024-05-01T10:00:00Z"
  }
  output {
    fields    = { msg = "Grüße aus Köln → 東京", ms = null }
    key       = null
    condition = [record.level == "warn", length(record.msg) == 19]
  }
}

test "slow and routed" {
  target = stream.slow
  input {
    value = { level = "info", service = "search", ms = 900, msg = "q" }
  }
  input {
    value = { level = "info", service = "search", ms = 9 }
  }
  input {
    value = { level = "error", service = "pay", ms = 501 }
  }
  output {
    topic = "slow"
    key   = "search"
    value = { level = "info", service = "search", ms = 900, msg = "q", alert = "search: 900 ms" }
  }
  output {
    topic  = topic.errors
    key    = "pay"
    fields = { alert = "pay: 501 ms" }
  }
}

test "dropped" {
  target = stream.slow
  input {
    value = "{\"level\": \"info\", \"service\": \"x\", \"ms\": 1}"
    topic = topic.logs
  }
  no_output = true
}

test "transform alone" {
  target = transform.tidy
  input {
    value = "  padded line  "
  }
  output {
    value = { msg = "padded line" }
  }
}

test "transforms chained" {
  target = [transform.tidy, transform.tag]
  input {
    value = "  padded line  "
  }
  output {
    value = { msg = "padded line", tagged = true }
  }
}

test "aggregated, a failing add dead-lettered" {
  target = stream.totals
  input {
    value = { level = "info", service = "pay", ms = 5 }
  }
  input {
    value = { level = "info", service = "pay" }
  }
  input {
    value = { level = "info", service = "pay", ms = 7 }
  }
  output {
    key   = "pay"
    value = { service = "pay", total_ms = 5 }
  }
  output {
    value = { service = "pay", total_ms = 12 }
  }
  output {
    dead_letter = true
    topic       = "weir-dlq-totals"
    error       = "null"
  }
}

test "undecodable input is dead-lettered" {
  target = stream.slow
  input {
    value = "\u0000\u0000\u0000\u0000\u0001x"
  }
  output {
    dead_letter = true
    error       = "cannot be decoded"
  }
}
`)
	if len(res) != 7 {
		t.Fatalf("%d results, want 7", len(res))
	}
	for _, r := range res {
		if !r.Passed() {
			t.Errorf("test %q failed:\n%s", r.Test.Name, diagLines(r.Diags))
		}
	}
	// Values are encoded as the runner encodes them: Avro (Confluent
	// framing) for topic logs, which has a schema; JSON for slow.
	if v := res[0].Outputs[0].Value; len(v) < 5 || v[0] != 0 {
		t.Errorf("source output %q is not Confluent-framed Avro", v)
	}
	if v, want := string(res[1].Outputs[0].Value), `{"level":"info","service":"search","ms":900,"msg":"q","alert":"search: 900 ms"}`; v != want {
		t.Errorf("stream output %s, want %s", v, want)
	}
}

// TestTestBlocksFail checks each kind of difference is reported at the
// file:line:col of the expectation that failed.
func TestTestBlocksFail(t *testing.T) {
	t.Parallel()
	res := runTestBlocks(t, `test "differences" {
  target = source.app
  input {
    value = "INFO [checkout] Grüße → 東京 ms=35"
  }
  input {
    value = "ERROR [pay] boom"
  }
  output {
    topic     = topic.slow
    fields    = { msg = "Grüße → Tokyo", ms = "35", nope = 1 }
    key       = "k"
    condition = [record.level == "info", record.ms > 100]
  }
  output {
    value = { level = "error", service = "pay" }
  }
  output {
    fields = { level = "x" }
  }
}

test "nothing expected" {
  target = source.app
  input {
    value = "INFO [a] b"
  }
  no_output = true
}

test "too few outputs expected" {
  target = source.app
  input {
    value = "INFO [a] b"
  }
  input {
    value = "INFO [a] c"
  }
  output {
    fields = { msg = "b" }
  }
}

test "input that does not fit the topic's schema" {
  target = stream.slow
  input {
    value = { service = "x" }
  }
  no_output = true
}

test "dead letter expected" {
  target = source.app
  input {
    value = "INFO [a] b"
  }
  output {
    dead_letter = true
  }
}
`)
	want := []string{
		`t.hcl:10:17: error: Output differs: test "differences": output 1: topic is logs, want slow.`,
		`t.hcl:11:19: error: Output differs: test "differences": output 1 (fields): field "msg" is "Grüße → 東京", want "Grüße → Tokyo".`,
		`t.hcl:11:42: error: Output differs: test "differences": output 1 (fields): field "ms" is 35, want "35".`,
		`t.hcl:11:53: error: Output differs: test "differences": output 1 (fields): field "nope" is missing, want 1.`,
		`t.hcl:12:17: error: Output differs: test "differences": output 1: key is null (no key), want "k".`,
		`t.hcl:13:42: error: Condition failed: test "differences": output 1: record.ms > 100 is false for the record {"level":"info","service":"checkout","ms":35,"msg":"Grüße → 東京"}.`,
		`t.hcl:16:13: error: Output differs: test "differences": output 2 (value): field "ms" = null is not expected (value compares every field; fields = {...} checks only those it names).`,
		`t.hcl:16:13: error: Output differs: test "differences": output 2 (value): field "msg" = "boom" is not expected (value compares every field; fields = {...} checks only those it names).`,
		`t.hcl:18:3: error: Missing output: test "differences": output 3 expects a record, but 2 inputs gave 2 records.`,
		`t.hcl:28:15: error: Expected no output: test "nothing expected": 1 record came out of source.app; the first: topic logs, key null (no key), value {"level":"info","service":"a","ms":null,"msg":"b"}.`,
		`t.hcl:31:1: error: Unexpected output: test "too few outputs expected": record 2 of 2 has no output block to match it: topic logs, key null (no key), value {"level":"info","service":"a","ms":null,"msg":"c"}.`,
		`t.hcl:47:13: error: Invalid test input: The value cannot be written to topic logs as its records are: value does not match the Avro schema: record "Log": field "level" is missing and has no default.`,
		`t.hcl:58:19: error: Record not dead-lettered: test "dead letter expected": output 1: the record was written to logs: {"level":"info","service":"a","ms":null,"msg":"b"}.`,
	}
	var got []string
	for _, r := range res {
		if r.Passed() {
			t.Errorf("test %q passed", r.Test.Name)
		}
		SortDiagnostics(r.Diags)
		for _, d := range r.Diags {
			got = append(got, DiagLine(d))
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTestBlocksDiagnostics checks bad test blocks are load errors at
// their file:line:col, and that without Options.Tests (weir run) test
// blocks are skipped.
func TestTestBlocksDiagnostics(t *testing.T) {
	t.Parallel()
	src := `test "a" {
  target = stream.slwo
  input {
    value = "x"
  }
  no_output = true
}

test "b" {
  target = sink.x
  input {
    valeu = "x"
  }
  output {
    error = "boom"
  }
}

test "c" {
  target = source.app
  output {
    timestamp = "yesterday"
    fields    = { a = var.nope }
  }
}

test "d" {
  target = stream.slow
  input {
    value = 3
    topic = "other"
  }
  no_output = true
  output {
    condition = record.a == other
  }
}

test "a" {
  target = transform.tidy
  input {
    value = "x"
  }
  no_output = true
}

test "e" {
  target = [transform.tidy, stream.slow, transform.tga]
  input {
    value = "x"
  }
  no_output = true
}
test "f" {
  target = source.app
  input {
    value = "x"
    topic = topic.logs
  }
  no_output = true
}
`
	_, diags := loadTests(t, src)
	SortDiagnostics(diags)
	want := []string{
		`t.hcl:2:12: error: Reference to undeclared stream: No stream named "slwo" is declared. Did you mean "slow"?`,
		`t.hcl:10:12: error: Invalid test target: "sink" cannot be tested: target names source.<name>, stream.<name> or transform.<name>.`,
		`t.hcl:11:3: error: Missing input value: An input block gives the record's value: a string (as the bytes are) or an object (its fields); value = null for a tombstone.`,
		`t.hcl:12:5: error: Unsupported argument: An argument named "valeu" is not expected here. Did you mean "value"?`,
		`t.hcl:15:5: error: Error without dead_letter: error checks the error a dead-lettered record carries: add dead_letter = true.`,
		`t.hcl:19:1: error: Test without input: test "c" has no input block: give at least one input record.`,
		`t.hcl:22:17: error: Invalid timestamp: "timestamp" must be an RFC 3339 time such as 2024-05-01T10:00:00Z, or milliseconds since the epoch: parsing time "yesterday" as "2006-01-02T15:04:05.999999999Z07:00": cannot parse "yesterday" as "2006".`,
		`t.hcl:23:23: error: Reference to undeclared input variable: No input variable named "nope" is declared.`,
		`t.hcl:30:13: error: Incorrect attribute value type: "value" must be a string (the value's bytes) or an object (its fields), not number.`,
		`t.hcl:31:13: error: Invalid input topic: stream "slow" reads "logs", not "other".`,
		`t.hcl:33:15: error: Conflicting test expectations: no_output = true expects every input to be dropped; remove it or the output blocks.`,
		`t.hcl:35:29: error: Unknown variable: There is no variable named "other". other exists only in the add and merge expressions of an aggregate block.`,
		`t.hcl:39:6: error: Duplicate test "a": A test named "a" is already declared at t.hcl:1:1; names must be unique.`,
		`t.hcl:48:29: error: Invalid test target: A list of targets chains transform blocks; stream.slow is not one: test it on its own.`,
		`t.hcl:48:42: error: Reference to undeclared transform: No transform named "tga" is declared. Did you mean "tag"?`,
		`t.hcl:58:5: error: Invalid input topic: topic names the from topic a stream reads the record from; source.app reads no topic.`,
	}
	got := strings.Split(strings.TrimSpace(diagLines(diags)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// weir run: test blocks, even broken ones, are not read.
	cfg, diags := LoadSources([]SourceFile{{Name: "p.hcl", Src: []byte(testPipeline)}, {Name: "t.hcl", Src: []byte(src)}}, ".", Options{})
	if diags.HasErrors() || len(cfg.Tests) != 0 {
		t.Errorf("without Options.Tests: %d tests, diagnostics:\n%s", len(cfg.Tests), diagLines(diags))
	}
}

// TestTestBlocksChangeEvents tests the steps of a mysql source: its
// inputs are change events as its envelope decodes (op, before, after,
// source).
func TestTestBlocksChangeEvents(t *testing.T) {
	t.Parallel()
	src := `source "mysql" "shop" {
  topic       = "shop.changes"
  user        = "cdc"
  server_name = "shop"
  filter {
    condition = record.op != "r"
  }
  set {
    table = "${record.source.db}.${record.source.table}"
  }
}

test "updates pass, snapshot reads are dropped" {
  target = source.shop
  input {
    value = { op = "r", before = null, after = { id = 1, email = "a@example.com" }, source = { db = "inventory", table = "customers" } }
  }
  input {
    key   = "{\"id\":1}"
    value = { op = "u", before = { id = 1, email = "a@example.com" }, after = { id = 1, email = "b@example.com" }, source = { db = "inventory", table = "customers" } }
  }
  output {
    topic  = "shop.changes"
    key    = "{\"id\":1}"
    fields = { op = "u", table = "inventory.customers", after = { email = "b@example.com" } }
  }
}
`
	cfg, diags := LoadSources([]SourceFile{{Name: "m.hcl", Src: []byte(src)}}, ".", Options{Tests: true})
	if diags.HasErrors() {
		t.Fatal(diagLines(diags))
	}
	res := RunTests(context.Background(), cfg)
	if len(res) != 1 || !res[0].Passed() {
		t.Fatalf("%+v: %s", res, diagLines(res[0].Diags))
	}
	// A nested field that differs is reported at its own place.
	src = strings.Replace(src, `after = { email = "b@example.com" }`, `after = { email = "c@example.com" }`, 1)
	cfg, diags = LoadSources([]SourceFile{{Name: "m.hcl", Src: []byte(src)}}, ".", Options{Tests: true})
	if diags.HasErrors() {
		t.Fatal(diagLines(diags))
	}
	res = RunTests(context.Background(), cfg)
	want := `m.hcl:25:67: error: Output differs: test "updates pass, snapshot reads are dropped": output 1 (fields): field "after.email" is "b@example.com", want "c@example.com".`
	if got := strings.TrimSpace(diagLines(res[0].Diags)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
