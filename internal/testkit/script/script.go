package script

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// Run runs every file matching pattern (e.g. "testdata/*.txt") as
// a data-driven script, each in its own parallel subtest named after the
// file. A script is a sequence of
//
//	command key=value ...
//	----
//	the output the command must produce
//
// separated by blank lines; lines starting with # are comments. newRun
// makes a fresh harness (the state machine under test) for one file and
// returns the function that runs one command, given its position
// (file:line, for error messages) and its fields (command name first),
// and returns its output. A mismatch fails the
// test with a diff; `go test -run <Test> -rewrite` rewrites the expected
// output from the actual one, to be reviewed as a diff.
//
// The format and the reader are cockroachdb/datadriven's: it reads
// multi-line outputs (between "----\n----" pairs), names the file and
// line of a mismatch, and rewrites files in place.
func Run(t *testing.T, pattern string, newRun func(t *testing.T) func(pos string, fields []string) string) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts match %s (%v)", pattern, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			run := newRun(t)
			datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
				if d.Input != "" {
					t.Fatalf("%s: %q: a command is one line, followed by ----", d.Pos, d.Input)
				}
				return run(d.Pos, strings.Fields(d.FullCmd()))
			})
		})
	}
}
