package smallfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// FS is a mounted tmpfs owned by one test.
type FS struct {
	// Dir is the mount point (an empty directory under the test's temp dir).
	Dir string

	tb      testing.TB
	ballast string
}

// Mount mounts a tmpfs of size bytes (rounded up to pages by the kernel)
// on a fresh directory and unmounts it when tb ends. It skips tb when the
// process is not root, and fails it then if CI is "true".
func Mount(tb testing.TB, size int64) *FS {
	tb.Helper()
	if err := usable(); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("smallfs: %v (CI=true: the disk-full tests must run; run them as root)", err)
		}
		tb.Skipf("smallfs: %v", err)
	}
	dir := filepath.Join(tb.TempDir(), "smallfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := run("mount", "-t", "tmpfs", "-o", "size="+strconv.FormatInt(size, 10)+",mode=0755", "tmpfs", dir); err != nil {
		tb.Fatalf("smallfs: mount tmpfs of %d bytes on %s: %v", size, dir, err)
	}
	f := &FS{Dir: dir, tb: tb, ballast: filepath.Join(dir, ".smallfs-ballast")}
	// Registered after TempDir's cleanup, so it runs first (cleanups are LIFO).
	tb.Cleanup(func() {
		if err := run("umount", dir); err != nil {
			// Something still holds a file open (a child not yet reaped):
			// detach now; the kernel frees the tmpfs when the last user goes.
			if err2 := run("umount", "-l", dir); err2 != nil {
				tb.Errorf("smallfs: umount %s: %v; umount -l: %v", dir, err, err2)
			}
		}
	})
	return f
}

func usable() error {
	if os.Geteuid() != 0 {
		return errors.New("mounting a tmpfs needs root")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		return fmt.Errorf("mount(8) not found: %w", err)
	}
	return nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Available reports the bytes an unprivileged writer can still allocate.
func (f *FS) Available() int64 {
	f.tb.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(f.Dir, &st); err != nil {
		f.tb.Fatalf("smallfs: statfs %s: %v", f.Dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// Fill writes a ballast file so that about leave bytes stay free (never
// fewer than the file system's block rounding allows). Filling again grows
// or shrinks the ballast; Free removes it.
func (f *FS) Fill(leave int64) {
	f.tb.Helper()
	cur := int64(0)
	if st, err := os.Stat(f.ballast); err == nil {
		cur = st.Size()
	}
	target := cur + f.Available() - leave
	if target < 0 {
		target = 0
	}
	if err := writeBallast(f.ballast, cur, target); err != nil {
		f.tb.Fatalf("smallfs: fill %s leaving %d bytes: %v", f.Dir, leave, err)
	}
}

// writeBallast grows or shrinks the file at path to size bytes of real
// (allocated) data: tmpfs counts only written pages.
func writeBallast(path string, cur, size int64) error {
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer fh.Close()
	if size <= cur {
		return fh.Truncate(size)
	}
	buf := make([]byte, 1<<20)
	for off := cur; off < size; {
		n := int64(len(buf))
		if size-off < n {
			n = size - off
		}
		w, err := fh.WriteAt(buf[:n], off)
		off += int64(w)
		if err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil // as full as it gets
			}
			return err
		}
	}
	return nil
}

// Free removes the ballast written by Fill.
func (f *FS) Free() {
	f.tb.Helper()
	if err := os.Remove(f.ballast); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.tb.Fatalf("smallfs: free %s: %v", f.Dir, err)
	}
}

// Resize changes the file system's size in place (mount -o remount,size=N).
// Shrinking below what is in use fails.
func (f *FS) Resize(size int64) {
	f.tb.Helper()
	if err := run("mount", "-o", "remount,size="+strconv.FormatInt(size, 10), f.Dir); err != nil {
		f.tb.Fatalf("smallfs: resize %s to %d bytes: %v", f.Dir, size, err)
	}
}

// ReadOnly remounts the file system read-only: writes then fail with
// EROFS, as after the kernel remounts a disk read-only on an I/O error.
func (f *FS) ReadOnly() {
	f.tb.Helper()
	if err := run("mount", "-o", "remount,ro", f.Dir); err != nil {
		f.tb.Fatalf("smallfs: remount %s read-only: %v", f.Dir, err)
	}
}

// ReadWrite undoes ReadOnly.
func (f *FS) ReadWrite() {
	f.tb.Helper()
	if err := run("mount", "-o", "remount,rw", f.Dir); err != nil {
		f.tb.Fatalf("smallfs: remount %s read-write: %v", f.Dir, err)
	}
}
