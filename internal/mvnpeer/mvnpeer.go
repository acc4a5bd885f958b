package mvnpeer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// Project is a Maven launcher to build.
type Project struct {
	// Dir holds pom.xml (the parent of Module, when there is one) and the
	// .build.lock file that serialises builds across test processes.
	Dir string
	// Module is the subdirectory of Dir built with -pl ("" builds Dir).
	Module string
	// Launcher is the compiled main class under target/classes, e.g.
	// "weir/searchtest/Launcher.class": the build is current when it is
	// newer than the module's pom.xml and sources.
	Launcher string
}

var mu sync.Mutex // Build within one process

// Build compiles the project when its launcher is missing or older than
// its sources (offline first, then from Maven Central) and returns the
// classpath to run it with: the cached build's jars, listed one by one
// (ShareArchive, cds.go), or target/classes and target/lib/* without a
// cache.
func (p Project) Build() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	mod := filepath.Join(p.Dir, p.Module)
	if _, err := os.Stat(filepath.Join(mod, "pom.xml")); err != nil {
		return "", fmt.Errorf("no Maven launcher at %s: %w", mod, err)
	}
	lock, err := os.OpenFile(filepath.Join(p.Dir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	key, err := p.key(mod)
	if err != nil {
		return "", err
	}
	// The cached build's classpath (explicit jars, for class-data
	// sharing: cds.go), else target/'s.
	classpath := func() string {
		if root := cacheRoot(); root != "" {
			if cp := cachedClasspath(filepath.Join(root, key)); cp != "" {
				return cp
			}
		}
		return filepath.Join(mod, "target", "classes") + string(os.PathListSeparator) + filepath.Join(mod, "target", "lib", "*")
	}
	if p.upToDate(mod) {
		return classpath(), nil
	}
	if restore(key, mod) && p.upToDate(mod) {
		return classpath(), nil
	}
	args := []string{"-q", "-B", "-f", filepath.Join(p.Dir, "pom.xml")}
	if p.Module != "" {
		args = append(args, "-pl", p.Module)
	}
	args = append(args, "package", "-DskipTests")
	out, err := exec.Command("mvn", append([]string{"-o"}, args...)...).CombinedOutput()
	if err != nil { // not all artifacts in ~/.m2 yet: resolve from Maven Central
		out, err = exec.Command("mvn", args...).CombinedOutput()
	}
	if err != nil {
		return "", fmt.Errorf("mvn package of %s: %v\n%s", mod, err, out)
	}
	if !p.upToDate(mod) {
		return "", fmt.Errorf("mvn package of %s left no launcher in target/", mod)
	}
	save(key, mod)
	return classpath(), nil
}

// upToDate: target/lib holds jars and the compiled launcher is newer than
// the pom and the sources.
func (p Project) upToDate(mod string) bool {
	class, err := os.Stat(filepath.Join(mod, "target", "classes", filepath.FromSlash(p.Launcher)))
	if err != nil {
		return false
	}
	if jars, _ := filepath.Glob(filepath.Join(mod, "target", "lib", "*.jar")); len(jars) == 0 {
		return false
	}
	stale := false
	filepath.Walk(filepath.Join(mod, "src"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.ModTime().After(class.ModTime()) {
			stale = true
		}
		return nil
	})
	if fi, err := os.Stat(filepath.Join(mod, "pom.xml")); err != nil || fi.ModTime().After(class.ModTime()) {
		stale = true
	}
	return !stale
}

// SourceDir is the folder of the Go source file that calls it: where a
// test peer's package keeps its Maven project. Built with -trimpath (as
// scripts/test builds, so that compiled packages are shared between
// clones), the runtime names that file relative to the module
// ("weir/internal/kafkapeer/kafkapeer.go"): the folder is then found
// under the module's root, the nearest folder above the working
// directory (a test's package folder) whose go.mod declares module weir.
func SourceDir() string {
	_, file, _, _ := runtime.Caller(1)
	dir := filepath.Dir(file)
	if filepath.IsAbs(dir) {
		return dir
	}
	rel, ok := strings.CutPrefix(filepath.ToSlash(dir), modulePath+"/")
	if !ok {
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		return dir
	}
	for d := wd; ; d = filepath.Dir(d) {
		if mod, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && declares(mod, modulePath) {
			return filepath.Join(d, filepath.FromSlash(rel))
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

const modulePath = "weir"

// declares: the go.mod text mod has the line "module path".
func declares(mod []byte, path string) bool {
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}
