package smallfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFillFreeResizeReadOnly(t *testing.T) {
	fs := Mount(t, 1<<20)
	if a := fs.Available(); a < 900<<10 || a > 1<<20 {
		t.Fatalf("fresh 1 MiB tmpfs: %d bytes available", a)
	}
	fs.Fill(64 << 10)
	if a := fs.Available(); a < 60<<10 || a > 68<<10 {
		t.Fatalf("after Fill(64 KiB): %d bytes available", a)
	}
	p := filepath.Join(fs.Dir, "data")
	err := os.WriteFile(p, make([]byte, 128<<10), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 128 KiB with 64 KiB free: %v, want ENOSPC", err)
	}
	os.Remove(p)
	fs.Free()
	if err := os.WriteFile(p, make([]byte, 128<<10), 0o644); err != nil {
		t.Fatalf("after Free: %v", err)
	}
	fs.Resize(2 << 20)
	if a := fs.Available(); a < 1800<<10 {
		t.Fatalf("after Resize(2 MiB): %d bytes available", a)
	}
	fs.ReadOnly()
	if err := os.WriteFile(p+"2", []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("write on read-only remount: %v, want EROFS", err)
	}
	fs.ReadWrite()
	if err := os.WriteFile(p+"2", []byte("x"), 0o644); err != nil {
		t.Fatalf("after ReadWrite: %v", err)
	}
}
