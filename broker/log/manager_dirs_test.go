package log

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"weir/broker/log/vfs"
)

// New partitions go to the usable directory holding the fewest
// partitions (ties: the first listed), as Kafka's LogManager.nextLogDirs;
// a directory that is not usable takes none; deleting a partition frees
// its place.
func TestManagerDirsPlacement(t *testing.T) {
	mem := vfs.NewMem()
	var mu sync.Mutex
	unusable := map[string]bool{}
	m, err := NewManagerDirs(mem, []string{"/a", "/b", "/c"}, ManagerOptions{DirUsable: func(d string) bool {
		mu.Lock()
		defer mu.Unlock()
		return !unusable[d]
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	open := func(topic string, p int32) string {
		t.Helper()
		if _, err := m.Open(topic, p, smallCfg()); err != nil {
			t.Fatal(err)
		}
		d, ok := m.DirOf(topic, p)
		if !ok {
			t.Fatalf("%s-%d: no directory", topic, p)
		}
		if fi, err := mem.Stat(path.Join(d, fmt.Sprintf("%s-%d", topic, p))); err != nil || !fi.IsDir() {
			t.Fatalf("%s-%d not on disk in %s: %v", topic, p, d, err)
		}
		return d
	}
	var got []string
	for p := int32(0); p < 6; p++ {
		got = append(got, open("t", p))
	}
	if want := []string{"/a", "/b", "/c", "/a", "/b", "/c"}; !slices.Equal(got, want) {
		t.Fatalf("placement %v, want %v", got, want)
	}
	// /a cannot take writes: the next ones go to /b and /c only.
	mu.Lock()
	unusable["/a"] = true
	mu.Unlock()
	if d1, d2 := open("u", 0), open("u", 1); d1 != "/b" || d2 != "/c" {
		t.Fatalf("with /a unusable: %s %s", d1, d2)
	}
	mu.Lock()
	unusable["/a"] = false
	mu.Unlock()
	// /a has 2, /b 3, /c 3: the next two go to /a (2 then 3 -> tie, first).
	if d := open("v", 0); d != "/a" {
		t.Fatalf("least used: %s, want /a", d)
	}
	if d := open("v", 1); d != "/a" {
		t.Fatalf("tie: %s, want the first, /a", d)
	}
	if err := m.Delete("t", 1); err != nil { // in /b
		t.Fatal(err)
	}
	if d := open("w", 0); d != "/b" {
		t.Fatalf("after deleting from /b: %s", d)
	}
	if ps := m.PartitionsIn("/b"); len(ps) != 3 {
		t.Fatalf("PartitionsIn(/b) = %v", ps)
	}
	for _, d := range []string{"/a", "/b", "/c"} {
		unusable[d] = true
	}
	if _, err := m.Open("x", 0, smallCfg()); err == nil || !strings.Contains(err.Error(), ErrNoLogDir.Error()) {
		t.Fatalf("no usable directory: %v", err)
	}
}

// At startup a partition is found in whichever directory holds it, and
// reopened there (never placed again); a partition in two directories is
// refused, as Kafka refuses it.
func TestManagerDirsExisting(t *testing.T) {
	mem := vfs.NewMem()
	m, err := NewManagerDirs(mem, []string{"/a", "/b"}, ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		l, err := m.Open("t", p, smallCfg())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, valueBatch(t, 1, 10, 1))
	}
	where := map[int32]string{}
	for p := int32(0); p < 4; p++ {
		where[p], _ = m.DirOf("t", p)
	}
	m.Close()
	// Reversed order of directories: placement would differ, discovery
	// must not.
	for _, load := range []bool{true, false} {
		m, err = NewManagerDirs(mem, []string{"/b", "/a"}, ManagerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if load {
			if err := m.LoadExisting(nil); err != nil {
				t.Fatal(err)
			}
		}
		for p := int32(0); p < 4; p++ {
			l, err := m.Open("t", p, smallCfg())
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := m.DirOf("t", p); d != where[p] || l.EndOffset() != 1 {
				t.Fatalf("load=%v t-%d: in %s with end offset %d, was in %s with 1", load, p, d, l.EndOffset(), where[p])
			}
		}
		m.Close()
	}
	if err := mem.MkdirAll("/b/t-0"); err != nil { // t-0 is in /a
		t.Fatal(err)
	}
	m, err = NewManagerDirs(mem, []string{"/a", "/b"}, ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Existing(); err == nil || !strings.Contains(err.Error(), "two log directories") {
		t.Fatalf("duplicate partition: %v", err)
	}
	if _, err := NewManagerDirs(mem, []string{"/a", "/a/"}, ManagerOptions{}); err == nil {
		t.Fatal("accepted a repeated directory")
	}
}

// failListFS fails listing (and creating) one directory, as a disk that
// died while the broker was down.
type failListFS struct {
	vfs.FS
	bad string
}

func (f failListFS) List(dir string) ([]string, error) {
	if dir == f.bad {
		return nil, &os.PathError{Op: "readdirent", Path: dir, Err: syscall.EIO}
	}
	return f.FS.List(dir)
}

func (f failListFS) Stat(name string) (os.FileInfo, error) {
	if strings.HasPrefix(name, f.bad+"/") {
		return nil, &os.PathError{Op: "stat", Path: name, Err: syscall.EIO}
	}
	return f.FS.Stat(name)
}

// A directory that cannot be listed at startup is reported failed and the
// manager goes on with the others: their partitions open where they are;
// a partition found in none of them is refused rather than created empty
// (it may be in the unreadable one, Kafka's rule too) and reported as in
// that directory. With every directory unreadable the manager fails.
func TestManagerDirsUnreadableAtStartup(t *testing.T) {
	mem := vfs.NewMem()
	m, err := NewManagerDirs(mem, []string{"/a", "/b"}, ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		if _, err := m.Open("t", p, smallCfg()); err != nil {
			t.Fatal(err)
		}
	}
	m.Close()
	var failed []string
	m, err = NewManagerDirs(failListFS{mem, "/b"}, []string{"/a", "/b"}, ManagerOptions{OnDirFailed: func(dir string, err error) {
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("OnDirFailed(%s, %v): not the EIO", dir, err)
		}
		failed = append(failed, dir)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.LoadExisting(nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(failed, []string{"/b"}) {
		t.Fatalf("OnDirFailed calls: %v", failed)
	}
	for _, p := range []int32{0, 2} { // in /a
		if _, err := m.Open("t", p, smallCfg()); err != nil {
			t.Fatalf("t-%d in the readable directory: %v", p, err)
		}
	}
	for _, p := range []int32{1, 3, 9} { // in /b, or nowhere
		if _, err := m.Open("t", p, smallCfg()); !errors.Is(err, ErrOffline) {
			t.Fatalf("t-%d with /b unreadable: %v, want ErrOffline", p, err)
		}
	}
	if got := m.PartitionsIn("/b"); len(got) != 3 {
		t.Fatalf("PartitionsIn(/b) = %v, want the 3 refused", got)
	}
	if got := m.PartitionsIn("/a"); len(got) != 2 {
		t.Fatalf("PartitionsIn(/a) = %v", got)
	}
	if err := m.Delete("t", 9); err != nil {
		t.Fatal(err)
	}
	if got := m.PartitionsIn("/b"); len(got) != 2 {
		t.Fatalf("PartitionsIn(/b) after deleting t-9 = %v", got)
	}
	// One directory: listing is not tried before LoadExisting, which
	// fails.
	one, err := NewManagerDirs(failListFS{mem, "/b"}, []string{"/b"}, ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if err := one.LoadExisting(nil); err == nil {
		t.Fatal("the only directory unreadable: no error")
	}
}
