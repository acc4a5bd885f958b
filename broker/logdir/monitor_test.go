package logdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"weir/broker/brokertest/smallfs"
	"weir/broker/log"
	"weir/broker/log/vfs"
	"weir/broker/metadata"
	"weir/internal/testkit"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err  error
		want metadata.StorageState
	}{
		{nil, metadata.StorageOK},
		{errors.New("timeout"), metadata.StorageOK},
		{fmt.Errorf("log x: append: %w", log.ErrCorruptBatch), metadata.StorageOK},
		{fmt.Errorf("log x: append: %w: %w", log.ErrDiskFull, vfs.ErrNoSpace), metadata.StorageFull},
		{&os.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}, metadata.StorageFull},
		{&os.PathError{Op: "write", Path: "f", Err: syscall.EDQUOT}, metadata.StorageFull},
		{fmt.Errorf("read: %w", &os.PathError{Op: "read", Path: "f", Err: syscall.EIO}), metadata.StorageFailed},
		{&os.PathError{Op: "open", Path: "f", Err: syscall.EROFS}, metadata.StorageFailed},
		// Offline because a failed write could not be cut back: failed,
		// whatever the write's own error was.
		{fmt.Errorf("log x: %w: %w", log.ErrOffline, fmt.Errorf("write failed (%w) and cutting it back failed: %w", vfs.ErrNoSpace, syscall.EIO)), metadata.StorageFailed},
	} {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

type states struct {
	mu  sync.Mutex
	got []metadata.StorageState
}

func (s *states) add(st metadata.StorageState) {
	s.mu.Lock()
	s.got = append(s.got, st)
	s.mu.Unlock()
}

func (s *states) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.got {
		if st == metadata.StorageOK {
			st = "ok"
		}
		out = append(out, string(st))
	}
	return fmt.Sprint(out)
}

// A real full disk: the write's ENOSPC makes the directory full; probes
// fail while it is; freeing space makes it writable again within a probe
// interval. An I/O error then makes it failed for good.
func TestMonitorFullThenWritableThenFailed(t *testing.T) {
	fs := smallfs.Mount(t, 4<<20)
	m := New(Config{Dir: fs.Dir, ProbeInterval: 20 * time.Millisecond, ProbeBytes: 256 << 10})
	defer m.Close()
	var seen states
	m.Watch(seen.add)
	fs.Fill(64 << 10)
	err := os.WriteFile(filepath.Join(fs.Dir, "x"), make([]byte, 128<<10), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write to a full disk: %v", err)
	}
	if st := m.Report(err); st != metadata.StorageFull {
		t.Fatalf("Report(ENOSPC) = %q", st)
	}
	m.Report(err) // the same state again: no new notification
	if st, cause := m.State(); st != metadata.StorageFull || !errors.Is(cause, syscall.ENOSPC) {
		t.Fatalf("state %q (%v)", st, cause)
	}
	// Still full after several probes (the probe does not fit).
	time.Sleep(100 * time.Millisecond)
	if st, _ := m.State(); st != metadata.StorageFull {
		t.Fatalf("left the full state with the disk full: %q", st)
	}
	// A probe may be in flight (every 20 ms it creates its file, fails and
	// removes it): polled, so only a file left behind fails.
	testkit.CheckFor(t, 5*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(fs.Dir, ProbeFile)); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("a failed probe left its file: %v", err)
		}
		return nil
	})
	os.Remove(filepath.Join(fs.Dir, "x"))
	fs.Free()
	testkit.CheckFor(t, 10*time.Second, func() error {
		if st, _ := m.State(); st != metadata.StorageOK {
			return fmt.Errorf("state %q, want %q", st, metadata.StorageOK)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(fs.Dir, ProbeFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the probe left its file: %v", err)
	}
	// Unrelated errors change nothing; EIO fails the directory, and
	// nothing brings it back (a restart does).
	m.Report(errors.New("connection reset"))
	m.Report(&os.PathError{Op: "read", Path: "seg", Err: syscall.EIO})
	m.Report(&os.PathError{Op: "write", Path: "seg", Err: syscall.ENOSPC})
	if st, _ := m.State(); st != metadata.StorageFailed {
		t.Fatalf("after EIO: %q", st)
	}
	if got, want := seen.String(), "[full ok failed]"; got != want {
		t.Fatalf("notified %s, want %s", got, want)
	}
}
