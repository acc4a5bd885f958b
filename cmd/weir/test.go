package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"weir/pipelines"
)

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		pf := &pipelineFlags{}
		var format string
		cmd := &cobra.Command{
			Use:   "test [PATH...]",
			Short: "Run the test blocks of pipeline files, without a broker (exit 1 on a failure)",
			Long: `Load pipeline files (a folder means all its *.hcl files) and run their test
blocks, as Vector's "vector test" runs a configuration's unit tests: each test
gives input records to a source, a stream or a transform block, runs them
through the same transform code weir run uses (value decoding, the steps,
select_key, Avro or JSON encoding for the destination topic, dead letters;
an aggregating stream's topology on the streams test driver), and checks the records that come out against its output blocks in
order (value: exact; fields: a subset; key, topic, timestamp, headers;
condition: expressions over record; dead_letter and error), or that none
come out (no_output = true).

Each test prints "ok" or "FAIL"; each difference is reported at the
file:line:col of the expectation that failed, with its source line. No
broker, registry or connector is started.`,
			Example: `  weir test examples/quickstart
  weir test pipeline.hcl tests.hcl -var env=prod
  weir test --format json examples/`,
			RunE: func(cmd *cobra.Command, args []string) error {
				if format != "text" && format != "json" {
					return fmt.Errorf("--format %q: want text or json", format)
				}
				opts := pf.options()
				opts.Tests = true
				cfg, err := loadPipelines(cmd.ErrOrStderr(), args, opts)
				if err != nil {
					return err
				}
				results := pipelines.RunTests(cmd.Context(), cfg)
				failed := 0
				for i := range results {
					if !results[i].Passed() {
						failed++
					}
				}
				if format == "json" {
					if err := writeTestJSON(cmd.OutOrStdout(), results); err != nil {
						return err
					}
				} else {
					writeTestText(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, results)
				}
				if len(results) == 0 {
					return fmt.Errorf("no test blocks in the pipeline files")
				}
				if failed > 0 {
					return fmt.Errorf("%d of %d tests failed", failed, len(results))
				}
				return nil
			},
		}
		pf.add(cmd)
		cmd.Flags().StringVar(&format, "format", "text", "output format: text, or json (one object with every test's result and failures)")
		return cmd
	})
}

// writeTestText prints one line per test on out and the failures'
// diagnostics (with source snippets) on errw, then a summary line.
func writeTestText(out, errw io.Writer, cfg *pipelines.Config, results []pipelines.TestResult) {
	passed := 0
	for _, r := range results {
		status := "ok"
		if r.Passed() {
			passed++
		} else {
			status = "FAIL"
		}
		fmt.Fprintf(out, "test %q (%s) ... %s\n", r.Test.Name, r.Test.Target, status)
		if !r.Passed() {
			writeDiags(errw, cfg, r.Diags)
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", passed, len(results)-passed)
}

type testJSON struct {
	Name     string        `json:"name"`
	Target   string        `json:"target"`
	Location string        `json:"location"`
	Passed   bool          `json:"passed"`
	Outputs  int           `json:"outputs"`
	Failures []diagJSONOut `json:"failures"`
}

type diagJSONOut struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Summary string `json:"summary"`
	Detail  string `json:"detail"`
}

func writeTestJSON(w io.Writer, results []pipelines.TestResult) error {
	out := struct {
		Passed int        `json:"passed"`
		Failed int        `json:"failed"`
		Tests  []testJSON `json:"tests"`
	}{Tests: []testJSON{}}
	for _, r := range results {
		t := testJSON{Name: r.Test.Name, Target: r.Test.Target, Passed: r.Passed(), Outputs: len(r.Outputs),
			Location: fmt.Sprintf("%s:%d:%d", r.Test.Range.Filename, r.Test.Range.Start.Line, r.Test.Range.Start.Column),
			Failures: []diagJSONOut{}}
		if t.Passed {
			out.Passed++
		} else {
			out.Failed++
		}
		for _, d := range r.Diags {
			if d.Severity != hcl.DiagError {
				continue
			}
			j := diagJSONOut{Summary: d.Summary, Detail: d.Detail}
			if d.Subject != nil {
				j.File, j.Line, j.Column = d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column
			}
			t.Failures = append(t.Failures, j)
		}
		out.Tests = append(out.Tests, t)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
