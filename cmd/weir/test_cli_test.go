package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"weir/pipelines"
)

// TestWeirTestExamples runs `weir test` over every example: each one
// whose pipelines transform records (source steps, streams) carries
// tests, and they pass.
func TestWeirTestExamples(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	tested := 0
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		cfg, diags := pipelines.Load([]string{dir}, pipelines.Options{Tests: true})
		if diags.HasErrors() {
			t.Errorf("%s: %v", dir, diags)
			continue
		}
		transforms := len(cfg.Streams) > 0
		for _, s := range cfg.Sources {
			transforms = transforms || s.Steps.Len() > 0
		}
		if len(cfg.Tests) == 0 {
			if transforms {
				t.Errorf("%s transforms records but carries no test blocks", dir)
			} else {
				t.Logf("%s: no transforms, no tests", dir)
			}
			continue
		}
		tested++
		out, stderr, err := runWeir(t, "", "test", dir)
		if err != nil {
			t.Errorf("weir test %s: %v\n%s%s", dir, err, out, stderr)
			continue
		}
		if want := "0 failed"; !strings.Contains(out, want) || strings.Count(out, "... ok") != len(cfg.Tests) {
			t.Errorf("weir test %s:\n%s", dir, out)
		}
	}
	if tested < 2 {
		t.Errorf("%d examples carry tests, want at least 2", tested)
	}
}

// TestWeirTestBrokenTransform breaks a transform of the quickstart: weir
// test fails with the difference at the failing expectation's
// file:line:col and its source line, and exit status 1 (an error).
func TestWeirTestBrokenTransform(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, "../../examples/quickstart", dir)
	p := filepath.Join(dir, "pipeline.hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), `alert = "${record.service} took ${record.duration_ms}ms: ${record.msg}"`,
		`alert = "${record.service} took ${record.duration_ms} ms: ${record.msg}"`, 1)
	if broken == string(b) {
		t.Fatal("the quickstart's alert template changed: update this test")
	}
	if err := os.WriteFile(p, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runWeir(t, "", "test", dir)
	if err == nil || err.Error() != "1 of 4 tests failed" {
		t.Fatalf("weir test of a broken transform: err %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(out, `test "slow requests are flagged" (stream.slow) ... FAIL`) || !strings.Contains(out, "3 passed, 1 failed") {
		t.Errorf("stdout:\n%s", out)
	}
	tests := filepath.Join(dir, "tests.hcl")
	line, col := findInFile(t, tests, `alert = "search took 900ms: query"`)
	for _, want := range []string{
		tests + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col) + `: error: Output differs: test "slow requests are flagged": output 1 (fields): field "alert" is "search took 900 ms: query", want "search took 900ms: query".`,
		`fields    = { alert = "search took 900ms: query" }`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	// --format json: the same failure, machine-readable.
	out, _, err = runWeir(t, "", "test", "--format", "json", dir)
	if err == nil {
		t.Fatal("weir test --format json of a broken transform passed")
	}
	var rep struct {
		Passed, Failed int
		Tests          []struct {
			Name     string
			Passed   bool
			Failures []struct {
				File         string
				Line, Column int
				Summary      string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Passed != 3 || rep.Failed != 1 {
		t.Fatalf("json report: %s", out)
	}
	for _, tr := range rep.Tests {
		if tr.Name != "slow requests are flagged" {
			continue
		}
		if tr.Passed || len(tr.Failures) != 1 || tr.Failures[0].File != tests || tr.Failures[0].Line != line || tr.Failures[0].Column != col {
			t.Errorf("json report of the failing test: %+v", tr)
		}
	}
}

// TestWeirTestBadBlocks: a bad test block is reported by weir test and
// weir validate with its location; weir test without test blocks fails.
func TestWeirTestBadBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, "../../examples/quickstart", dir)
	bad := filepath.Join(dir, "tests.hcl")
	if err := os.WriteFile(bad, []byte("test \"x\" {\n  target = stream.slwo\n  input {\n    value = \"a\"\n  }\n  no_output = true\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"test", "validate"} {
		_, stderr, err := runWeir(t, "", cmd, dir)
		want := bad + `:2:12: error: Reference to undeclared stream: No stream named "slwo" is declared. Did you mean "slow"?`
		if err == nil || !strings.Contains(stderr, want) {
			t.Errorf("weir %s: err %v, stderr:\n%s", cmd, err, stderr)
		}
	}
	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runWeir(t, "", "test", dir); err == nil || !strings.Contains(err.Error(), "no test blocks") {
		t.Errorf("weir test without tests: %v", err)
	}
}

// TestWeirKindsTest: weir kinds documents the test block with its input
// and output blocks.
func TestWeirKindsTest(t *testing.T) {
	t.Parallel()
	if list := mustWeir(t, "", "kinds"); !regexpLine(list, `block test\s+A unit test of the transform steps .*weir test without a broker\.`) {
		t.Errorf("weir kinds lacks the test block:\n%s", list)
	}
	ref := mustWeir(t, "", "kinds", "test")
	for _, want := range []string{`test "<name>" { ... }`, "target  (expression; required)", "Block input { ... } (any number, in order):",
		"Block output { ... } (any number, in order):", "dead_letter  (bool; default false)"} {
		if !strings.Contains(ref, want) {
			t.Errorf("weir kinds test lacks %q:\n%s", want, ref)
		}
	}
	if md := mustWeir(t, "", "kinds", "--markdown", "test"); !strings.Contains(md, "### block `output` (any number, in order)") {
		t.Errorf("weir kinds --markdown test:\n%s", md)
	}
}

func findInFile(t *testing.T, path, s string) (line, col int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if j := strings.Index(l, s); j >= 0 {
			return i + 1, len([]rune(l[:j])) + 1
		}
	}
	t.Fatalf("%s lacks %q", path, s)
	return 0, 0
}

// TestWeirTestNonASCII: a difference in a non-ASCII value is reported at
// its column in characters, and the snippet's underline sits under it.
func TestWeirTestNonASCII(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, "../../examples/app-logs-to-elk", dir)
	tests := filepath.Join(dir, "tests.hcl")
	b, err := os.ReadFile(tests)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), `fields = { level = "info", msg = "Grüße aus Köln → 東京" }`, `fields = { level = "info", msg = "Grüße aus Köln → 大阪" }`, 1)
	if src == string(b) {
		t.Fatal("examples/app-logs-to-elk/tests.hcl changed: update this test")
	}
	if err := os.WriteFile(tests, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runWeir(t, "", "test", dir)
	if err == nil {
		t.Fatal("weir test passed with a wrong expectation")
	}
	line, col := findInFile(t, tests, `msg = "Grüße aus Köln → 大阪"`)
	want := tests + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col) + `: error: Output differs: test "a line without a level counts as info": output 1 (fields): field "msg" is "Grüße aus Köln → 東京", want "Grüße aus Köln → 大阪".`
	if !strings.Contains(stderr, want) {
		t.Fatalf("stderr lacks %q:\n%s", want, stderr)
	}
	// The underline starts under the m of msg (columns are characters).
	lines := strings.Split(stderr, "\n")
	for i, l := range lines {
		if strings.Contains(l, `| `) && strings.Contains(l, `msg = "Grüße aus Köln → 大阪"`) && i+1 < len(lines) {
			under := lines[i+1]
			bar := strings.Index(under, "| ")
			if bar < 0 || len([]rune(under[bar+2:]))-len([]rune(strings.TrimLeft(under[bar+2:], " "))) != col-1 || !strings.Contains(under, "^") {
				t.Errorf("underline %q is not under column %d of %q", under, col, l)
			}
			return
		}
	}
	t.Errorf("no snippet of the expectation in:\n%s", stderr)
}
