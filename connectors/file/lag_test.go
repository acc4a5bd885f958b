package file

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/connectors"
	"weir/internal/testkit"
)

// TestCopytruncateBehindReader: a reader far behind the writer when a
// copytruncate rotation happens finds the file truncated and written again
// past its read offset before its next scan. It must not take the new
// content at that offset for the rest of the old file: every line of the
// old content (now in the copy) and of the new one arrives exactly once.
func TestCopytruncateBehindReader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	const lines = 20000
	if err := os.WriteFile(path, paddedLines("old", lines), 0o644); err != nil {
		t.Fatal(err)
	}
	src, poll, seen := pollSource(t, filepath.Join(dir, "app.log*"), 100, nil)
	if n := poll(); n == 0 || n >= lines {
		t.Fatalf("first poll returned %d records; the test needs the reader part way through the file", n)
	}
	// copytruncate, then the writer goes on well past the reader's offset.
	copytruncate(t, path, lines)
	poll() // no scan is due: the reader meets the new content at its offset
	readOldAndNewOnce(t, src, poll, seen, lines)
}

// TestCopytruncateBetweenOpenAndFirstRead: a file is identified by its
// first bytes when it is opened, and read from offset 0 afterwards; a
// copytruncate rotation in between (the copy taking the identified
// content, the original written again) must not let the new content pass
// for the identified file: read under the old identity, its lines would
// carry positions that the copy then resumes from, skipping as much of
// the old content and repeating the new (the "3084 missing, 3084
// duplicated" of TestKillDashNineTransactions: one read buffer).
func TestCopytruncateBetweenOpenAndFirstRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	const lines = 20000
	if err := os.WriteFile(path, paddedLines("old", lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var oldKey string
	src, poll, seen := pollSource(t, filepath.Join(dir, "app.log*"), 0, func(r connectors.SourceRecord, msg string) {
		if r.SourcePartition == oldKey && !strings.HasPrefix(msg, "old ") {
			t.Fatalf("%q read under the identity of the old content (%s)", msg, oldKey)
		}
	})
	src.now = time.Now()
	src.rescan() // opens app.log: identified by the old content's first bytes
	if len(src.files) != 1 || src.files[0].readOff != 0 {
		t.Fatalf("after the first scan: %d files open", len(src.files))
	}
	oldKey = src.files[0].key
	// copytruncate before the first read.
	copytruncate(t, path, lines)
	poll() // no scan is due: the first read finds the new content
	readOldAndNewOnce(t, src, poll, seen, lines)
}

// paddedLines is n log lines "<prefix> line <i> with some padding ...".
func paddedLines(prefix string, n int) []byte {
	var b []byte
	for i := range n {
		b = fmt.Appendf(b, "%s line %06d with some padding to look like a log line\n", prefix, i)
	}
	return b
}

// copytruncate rotates path as logrotate's copytruncate does, path
// holding n "old" lines: the copy (path.1) takes them and path is
// written again, truncated (the same inode), with n "new" lines.
func copytruncate(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.WriteFile(path+".1", paddedLines("old", n), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, paddedLines("new", n), 0o644); err != nil { // O_TRUNC: same inode
		t.Fatal(err)
	}
}

// readOldAndNewOnce lets src rescan often and polls (poll counts the
// messages in seen) until every line of the copytruncate's old and new
// content (n each) arrived, and checks that each arrived once.
func readOldAndNewOnce(t *testing.T, src *Source, poll func() int, seen map[string]int, n int) {
	t.Helper()
	src.o.RescanInterval = 10 * time.Millisecond
	testkit.CheckFor(t, 20*time.Second, func() error {
		poll()
		if len(seen) < 2*n {
			return fmt.Errorf("%d distinct lines of %d", len(seen), 2*n)
		}
		return nil
	})
	checkEachOnce(t, seen, map[string]int{"old": n, "new": n})
}

// checkEachOnce checks that every line of paddedLines(prefix, n), for
// each prefix and n of lines, arrived once (seen counts the messages).
func checkEachOnce(t *testing.T, seen map[string]int, lines map[string]int) {
	t.Helper()
	for prefix, n := range lines {
		for i := range n {
			msg := fmt.Sprintf("%s line %06d with some padding to look like a log line", prefix, i)
			if c := seen[msg]; c != 1 {
				t.Fatalf("%q arrived %d times", msg, c)
			}
		}
	}
}

// A copytruncate copy that the source opens while it is still empty
// (os.WriteFile creates, then writes) is identified again at its first
// read, when it holds a whole fingerprint: a copy of the open original is
// not read until the original is truncated, then resumes at the
// original's position. Before, its lines were read again as a new file's
// (TestTailRotationsAndSmallFiles: a line seen twice, 1 run in ~50).
func TestCopyOpenedWhileEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	if err := os.WriteFile(path, paddedLines("old", 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	src, poll, seen := pollSource(t, filepath.Join(dir, "app.log*"), 0, nil)
	src.now = time.Now()
	src.rescan()
	waitSeen := func(n int) {
		testkit.CheckFor(t, 20*time.Second, func() error {
			poll()
			if len(seen) < n {
				return fmt.Errorf("%d distinct lines of %d", len(seen), n)
			}
			return nil
		})
	}
	waitSeen(2000)
	// The copy is opened while empty, then written.
	f, err := os.Create(path + ".1")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	src.rescan()
	if len(src.files) != 2 {
		t.Fatalf("after the scan: %d files open, want the original and the empty copy", len(src.files))
	}
	if err := os.WriteFile(path+".1", paddedLines("old", 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	poll() // the copy is read now if it is taken for a new file
	// The original is truncated and written again.
	if err := os.WriteFile(path, paddedLines("new", 100), 0o644); err != nil {
		t.Fatal(err)
	}
	waitSeen(2100)
	poll()
	checkEachOnce(t, seen, map[string]int{"old": 2000, "new": 100})
}

// pollSource opens a file source on include driven by the test (no
// scans but the ones the test makes: rescan interval an hour; records
// per batch batchRecords, 0 for the default) and returns a poll that
// counts each message it gets in seen (after check, if given, saw its
// record) and returns how many records it got.
func pollSource(t *testing.T, include string, batchRecords int, check func(r connectors.SourceRecord, msg string)) (src *Source, poll func() int, seen map[string]int) {
	t.Helper()
	src, err := New(Options{Topic: "t", Include: []string{include}, Encoder: JSONEncoder{},
		BatchRecords: batchRecords, RescanInterval: time.Hour, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(context.Background(), rawTestCtx{connectors.NewTestMetrics("open")}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	seen = map[string]int{}
	poll = func() int {
		out, err := src.Poll(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out {
			var ev struct{ Message string }
			if err := json.Unmarshal(r.Value, &ev); err != nil {
				t.Fatalf("%s: %v", r.Value, err)
			}
			if check != nil {
				check(r, ev.Message)
			}
			seen[ev.Message]++
		}
		return len(out)
	}
	return src, poll, seen
}
