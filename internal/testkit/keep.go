package testkit

import (
	"os"
	"path/filepath"
)

// Keep copies files (logs of a failed test) into a new folder under the
// system's temporary directory, which outlives the test's own t.TempDir,
// and returns the folder's path for the test to log, or the error that
// prevented it. Missing files are skipped.
func Keep(name string, files ...string) string {
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return err.Error()
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
				return err.Error()
			}
		}
	}
	return dir
}
