package mvnpeer

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Class-data sharing (AppCDS). Most of the CPU a peer's JVM spends
// starting is loading, parsing and verifying the classes of its jars
// (measured on Kafka's tools: 0.83 CPU-s a run without an archive, 0.40
// with one). A build kept in the cache gets one dynamic archive per JDK
// (-XX:ArchiveClassesAtExit), written by the first JVM that runs on it
// and exits normally, and every later JVM maps it
// (-XX:SharedArchiveFile). CDS needs the classpath spelled out, in the
// same order at dump and use time, and no directory on it: Build returns
// the cache folder's launcher.jar (the compiled launcher classes) and its
// lib/*.jar in name order.

// launcherJar is the jar of target/classes in a cache folder.
const launcherJar = "launcher.jar"

// cachedClasspath is the classpath of the build cached in dir (a folder
// with "complete"): its launcher.jar, made from classes/ when missing,
// then lib/*.jar in name order; "" when there is no usable one.
func cachedClasspath(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		return ""
	}
	jar := filepath.Join(dir, launcherJar)
	if _, err := os.Stat(jar); err != nil {
		if err := writeJar(filepath.Join(dir, "classes"), jar); err != nil {
			return ""
		}
	}
	jars, err := filepath.Glob(filepath.Join(dir, "lib", "*.jar"))
	if err != nil || len(jars) == 0 {
		return ""
	}
	return strings.Join(append([]string{jar}, jars...), string(os.PathListSeparator))
}

// writeJar zips the tree classes into jar (a temporary file renamed into
// place, so that a concurrent reader sees none or all of it).
func writeJar(classes, jar string) error {
	f, err := os.CreateTemp(filepath.Dir(jar), filepath.Base(jar)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(classes, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == classes {
			return err
		}
		rel, _ := filepath.Rel(classes, path)
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			_, err := zw.Create(name + "/")
			return err
		}
		w, err := zw.Create(name)
		if err != nil {
			return err
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		_, err = io.Copy(w, in)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", jar, err)
	}
	return os.Rename(f.Name(), jar)
}

// Share is how one JVM launch uses its build's class-data archive.
type Share struct {
	// Args go on the java command line before the main class: map the
	// archive (-Xshare:auto: one the JVM cannot use is ignored), or write
	// it at exit (Dumping), and in both cases no CDS log lines on stdout,
	// which tests parse.
	Args []string
	// Dumping: this JVM writes the archive when it exits normally (a
	// server must then be stopped so that it exits, not killed).
	Dumping bool

	tmp, path, lock string
}

// ShareArchive returns the CDS options of a JVM run on classpath cp
// (from Build). When the build has no archive yet for this JDK and dump
// is set, this JVM is the one that writes it (unless another is doing so:
// a lock file, stale after lockStale); Done must then be called after it
// exited. Without a cached build (cp not from the cache) Args is empty.
func ShareArchive(cp string, dump bool) *Share {
	s := &Share{}
	first, _, _ := strings.Cut(cp, string(os.PathListSeparator))
	if filepath.Base(first) != launcherJar {
		return s
	}
	id := jdkID()
	if id == "" {
		return s
	}
	dir := filepath.Dir(first)
	s.path = filepath.Join(dir, "cds-"+id+".jsa")
	quiet := "-Xlog:cds*=off"
	if _, err := os.Stat(s.path); err == nil {
		s.Args = []string{"-XX:SharedArchiveFile=" + s.path, "-Xshare:auto", quiet}
		return s
	}
	if !dump || !lockArchive(s.path+".lock") {
		return s
	}
	s.lock = s.path + ".lock"
	s.tmp = fmt.Sprintf("%s.tmp-%d-%d", s.path, os.Getpid(), time.Now().UnixNano())
	s.Args = []string{"-XX:ArchiveClassesAtExit=" + s.tmp, quiet}
	s.Dumping = true
	return s
}

// JavaOptions is the java command line, up to the main class, of a
// test peer JVM on classpath cp (from Build) with heap heap: C1 only and
// the serial collector (peers run briefly: the JIT's and GC's threads
// would cost more CPU than they win back), s's archive options, Kafka's
// log4j2 at WARN, the classpath. Options may follow it before the main
// class.
func JavaOptions(heap, cp string, s *Share) []string {
	opts := append([]string{"-Xmx" + heap, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}, s.Args...)
	return append(opts, "-Dlog4j2.level=WARN", "-cp", cp)
}

// ExitWait is how long to wait for a server JVM asked to stop before
// killing it: normal, or longer when it writes the archive as it exits.
func (s *Share) ExitWait(normal time.Duration) time.Duration {
	if s.Dumping {
		return max(normal, 2*time.Minute)
	}
	return normal
}

// Done ends a dumping launch after its JVM exited: the archive it wrote
// becomes the build's when ok (the JVM did what it was run for), else it
// is dropped; the lock is released.
func (s *Share) Done(ok bool) {
	if !s.Dumping {
		return
	}
	if fi, err := os.Stat(s.tmp); ok && err == nil && fi.Size() > 0 {
		os.Rename(s.tmp, s.path)
	}
	os.Remove(s.tmp)
	os.Remove(s.lock)
	s.Dumping = false
}

// lockStale is when a dump lock left by a killed test process is
// ignored.
const lockStale = 10 * time.Minute

func lockArchive(lock string) bool {
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		fi, serr := os.Stat(lock)
		if serr != nil || time.Since(fi.ModTime()) < lockStale {
			return false
		}
		os.Remove(lock)
		if f, err = os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err != nil {
			return false
		}
	}
	f.Close()
	return true
}

var (
	jdkOnce sync.Once
	jdk     string
)

// jdkID names the java command's JDK (its resolved path, size and
// modification time): an archive is only valid for the JVM that wrote
// it, so another JDK gets its own.
func jdkID() string {
	jdkOnce.Do(func() {
		java, err := exec.LookPath("java")
		if err != nil {
			return
		}
		if java, err = filepath.EvalSymlinks(java); err != nil {
			return
		}
		// libjvm.so is the JVM itself; the java launcher where it is
		// not found.
		lib := filepath.Join(filepath.Dir(filepath.Dir(java)), "lib", "server", "libjvm.so")
		if lib, err := filepath.EvalSymlinks(lib); err == nil {
			java = lib
		}
		fi, err := os.Stat(java)
		if err != nil {
			return
		}
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", java, fi.Size(), fi.ModTime().UnixNano()))
		jdk = hex.EncodeToString(h[:])[:12]
	})
	return jdk
}
