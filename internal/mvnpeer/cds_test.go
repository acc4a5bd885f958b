package mvnpeer

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShareArchive: a cached build's classpath lists its launcher.jar
// (made from classes/) and lib jars one by one; the first dumping launch
// gets -XX:ArchiveClassesAtExit while a second one at the same time gets
// nothing (one writer); the archive is kept only when the launch went
// well; later launches map it with -Xshare:auto.
func TestShareArchive(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("java is not installed: CI needs Java 17 for the test peers")
		}
		t.Skip("no java: no archive")
	}
	dir := t.TempDir()
	for name, text := range map[string]string{
		"complete": "", "classes/weir/x/Launcher.class": "bytecode", "lib/b.jar": "b", "lib/a.jar": "a",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cp := cachedClasspath(dir)
	sep := string(os.PathListSeparator)
	want := strings.Join([]string{filepath.Join(dir, "launcher.jar"), filepath.Join(dir, "lib", "a.jar"), filepath.Join(dir, "lib", "b.jar")}, sep)
	if cp != want {
		t.Fatalf("classpath %s, want %s", cp, want)
	}
	zr, err := zip.OpenReader(filepath.Join(dir, "launcher.jar"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	zr.Close()
	if got := strings.Join(names, " "); got != "weir/ weir/x/ weir/x/Launcher.class" {
		t.Fatalf("launcher.jar holds %s", got)
	}

	if s := ShareArchive(cp, false); s.Dumping || len(s.Args) != 0 {
		t.Fatalf("no archive, no dump: %+v", s)
	}
	if s := ShareArchive("/x/classes"+sep+"/x/lib/*", true); s.Dumping || len(s.Args) != 0 {
		t.Fatalf("a classpath not from the cache: %+v", s)
	}
	first := ShareArchive(cp, true)
	if !first.Dumping || !strings.HasPrefix(first.Args[0], "-XX:ArchiveClassesAtExit="+dir) {
		t.Fatalf("first launch: %+v", first)
	}
	if second := ShareArchive(cp, true); second.Dumping || len(second.Args) != 0 {
		t.Fatalf("a second launch while the first dumps: %+v", second)
	}
	tmp := strings.TrimPrefix(first.Args[0], "-XX:ArchiveClassesAtExit=")
	if err := os.WriteFile(tmp, []byte("archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	first.Done(false) // the JVM failed: its archive is dropped
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("failed launch's archive kept: %v", err)
	}
	third := ShareArchive(cp, true)
	if !third.Dumping {
		t.Fatalf("lock not released: %+v", third)
	}
	if err := os.WriteFile(strings.TrimPrefix(third.Args[0], "-XX:ArchiveClassesAtExit="), []byte("archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	third.Done(true)
	mapped := ShareArchive(cp, true)
	if mapped.Dumping || len(mapped.Args) != 3 || !strings.HasPrefix(mapped.Args[0], "-XX:SharedArchiveFile="+dir) || mapped.Args[1] != "-Xshare:auto" {
		t.Fatalf("archive made: %+v", mapped)
	}
	if b, err := os.ReadFile(strings.TrimPrefix(mapped.Args[0], "-XX:SharedArchiveFile=")); err != nil || string(b) != "archive" {
		t.Fatalf("archive %q %v", b, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "cds-*"))
	if len(left) != 1 {
		t.Fatalf("files left beside the archive: %v", left)
	}
}
