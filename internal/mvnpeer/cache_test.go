package mvnpeer

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCache: a build saved under its key is restored into a fresh copy of
// the project (launcher newer than the sources, so Build takes it as
// current without Maven), and a changed source or pom gives another key.
func TestCache(t *testing.T) {
	t.Setenv("WEIR_MVNPEER_CACHE", t.TempDir())
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	project := func(root string) Project { // root/peer/java, as a clone holds it
		dir := filepath.Join(root, "peer", "java")
		write(filepath.Join(dir, "pom.xml"), "<project/>")
		write(filepath.Join(dir, "src", "main", "java", "weir", "x", "Launcher.java"), "class Launcher {}")
		return Project{Dir: dir, Launcher: "weir/x/Launcher.class"}
	}
	built := project(t.TempDir())
	mod := built.Dir
	write(filepath.Join(mod, "target", "classes", "weir", "x", "Launcher.class"), "bytecode")
	write(filepath.Join(mod, "target", "lib", "dep.jar"), "jar")
	key, err := built.key(mod)
	if err != nil {
		t.Fatal(err)
	}
	save(key, mod)

	fresh := project(t.TempDir())
	if fresh.upToDate(fresh.Dir) {
		t.Fatal("a project without target/ is up to date")
	}
	if k, _ := fresh.key(fresh.Dir); k != key {
		t.Fatalf("same sources, keys %s and %s", key, k)
	}
	cp, err := fresh.Build() // restored from the cache: no mvn run
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(fresh.Dir, "target", "lib", "dep.jar")); err != nil || string(b) != "jar" {
		t.Fatalf("restored lib: %q %v (classpath %s)", b, err, cp)
	}

	write(filepath.Join(fresh.Dir, "src", "main", "java", "weir", "x", "Launcher.java"), "class Launcher { int x; }")
	if k, _ := fresh.key(fresh.Dir); k == key {
		t.Fatal("a changed source kept the key")
	}
	write(filepath.Join(built.Dir, "pom.xml"), "<project><!-- changed --></project>")
	if k, _ := built.key(mod); k == key {
		t.Fatal("a changed pom.xml kept the key")
	}
}

// TestSourceDir: the folder of the calling file, with or without
// -trimpath (go test runs in the package's folder).
func TestSourceDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got := SourceDir(); got != wd {
		t.Fatalf("SourceDir() = %s, want %s", got, wd)
	}
}
