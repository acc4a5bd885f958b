// Package weirbin builds the weir command for tests that run it as a
// process (`weir run`, `weir broker`): once per test process, into a
// temporary folder removed by Cleanup.
package weirbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	bin  string
	err  error
)

// Build returns the path of a weir binary built from this module's
// cmd/weir, building it at the first call of the process, or the one
// named by $WEIR_TEST_BIN (scripts/test sets it to the bin/weir it has
// just built from the same tree, so the test processes do not link
// their own).
// With -short it skips the test (a heavy peer, as the other helpers that
// start one).
func Build(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds and runs the weir binary: not run with -short")
	}
	once.Do(func() {
		if prebuilt := os.Getenv("WEIR_TEST_BIN"); prebuilt != "" {
			if _, err = os.Stat(prebuilt); err == nil {
				bin = prebuilt
			}
			return
		}
		if dir, err = os.MkdirTemp("", "weir-bin-"); err != nil {
			return
		}
		bin = filepath.Join(dir, "weir")
		out, e := exec.Command("go", "build", "-o", bin, "weir/cmd/weir").CombinedOutput()
		if e != nil {
			err = fmt.Errorf("go build weir/cmd/weir: %v\n%s", e, out)
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Cleanup removes the binary built by Build (call it from TestMain after
// m.Run).
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
