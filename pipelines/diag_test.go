package pipelines_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"weir/pipelines"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files of testdata/invalid")

func loadOne(name string, src []byte) (*pipelines.Config, hcl.Diagnostics) {
	return pipelines.LoadSources([]pipelines.SourceFile{{Name: name, Src: src}}, filepath.Dir(name),
		pipelines.Options{LookupEnv: func(string) (string, bool) { return "", false }})
}

// TestInvalidGolden loads every testdata/invalid/*.hcl file and compares
// its diagnostics (file:line:col: severity: message, sorted) with the
// .golden file next to it. Regenerate with go test -run TestInvalidGolden -rewrite.
func TestInvalidGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/invalid/*.hcl")
	if err != nil || len(files) < 30 {
		t.Fatalf("want at least 30 invalid pipeline files, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".hcl"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, diags := loadOne(f, src)
			if !diags.HasErrors() {
				t.Fatalf("%s loaded without errors", f)
			}
			pipelines.SortDiagnostics(diags)
			var b strings.Builder
			for _, d := range diags {
				if d.Subject == nil && d.Severity == hcl.DiagError {
					t.Errorf("diagnostic without a location: %s", pipelines.DiagLine(d))
				}
				b.WriteString(pipelines.DiagLine(d))
				b.WriteByte('\n')
			}
			got := b.String()
			golden := strings.TrimSuffix(f, ".hcl") + ".golden"
			if *rewrite {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostics of %s differ from %s\n--- got\n%s--- want\n%s", f, golden, got, want)
			}
		})
	}
}

// TestAllErrorsInOneRun checks that a file with many mistakes reports
// each of them, not only the first.
func TestAllErrorsInOneRun(t *testing.T) {
	t.Parallel()
	f := "testdata/invalid/many_errors.hcl"
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	_, diags := loadOne(f, src)
	lines := map[int]bool{}
	for _, d := range diags {
		if d.Subject != nil {
			lines[d.Subject.Start.Line] = true
		}
	}
	for _, l := range []int{6, 7, 13, 15, 18, 21, 22, 27, 28} {
		if !lines[l] {
			t.Errorf("no diagnostic on line %d of %s; got:\n%s", l, f, diagText(diags))
		}
	}
}

func diagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(pipelines.DiagLine(d) + "\n")
	}
	return b.String()
}

func TestWriteDiagnosticsSnippet(t *testing.T) {
	t.Parallel()
	f := "testdata/invalid/typo_attribute.hcl"
	src, _ := os.ReadFile(f)
	cfg, diags := loadOne(f, src)
	var b strings.Builder
	if err := pipelines.WriteDiagnostics(&b, cfg.Files, diags, false); err != nil {
		t.Fatal(err)
	}
	want := f + `:2:3: error: Unsupported argument: An argument named "partitons" is not expected here. Did you mean "partitions"?
  |
2 |   partitons = 3
  |   ^^^^^^^^^

`
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// FuzzLoad feeds arbitrary bytes through the parser and validator: it
// must never panic, and a file that loads without errors must have a
// graph.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/invalid/*.hcl")
	seeds = append(seeds, "testdata/valid.hcl")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, diags := loadOne("fuzz.hcl", src)
		if !diags.HasErrors() && (cfg == nil || cfg.Graph == nil) {
			t.Fatal("no graph for a valid config")
		}
		var b strings.Builder
		if cfg != nil {
			_ = pipelines.WriteDiagnostics(&b, cfg.Files, diags, false)
		}
	})
}

// TestBalancerSetting: sinks and streams name their consumer group's
// assignment strategy; unset means the runtime's default.
func TestBalancerSetting(t *testing.T) {
	t.Parallel()
	src := []byte(`
topic "a" {}
topic "b" {}
stream "s" {
  from     = [topic.a]
  to       = "b"
  balancer = "roundrobin"
}
sink "stdout" "out" {
  from     = [topic.b]
  balancer = "range"
}
sink "stdout" "plain" {
  from = [topic.b]
}
`)
	cfg, diags := loadOne("balancer.hcl", src)
	if diags.HasErrors() {
		t.Fatal(diagText(diags))
	}
	if got := cfg.Streams[0].Balancer; got != "roundrobin" {
		t.Errorf("stream balancer %q, want roundrobin", got)
	}
	if got := cfg.Sinks[0].Balancer; got != "range" {
		t.Errorf("sink balancer %q, want range", got)
	}
	if got := cfg.Sinks[1].Balancer; got != "" {
		t.Errorf("sink without balancer: %q, want empty (default)", got)
	}
}
