package searchtest

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"weir/internal/mvnpeer"
	"weir/internal/testkit"
)

// Flavor names a search server the launcher can run.
type Flavor string

// The servers available from Maven Central.
const (
	Elasticsearch7 Flavor = "elasticsearch7" // Elasticsearch 7.17 (sends X-Elastic-Product)
	Elasticsearch8 Flavor = "elasticsearch8" // Elasticsearch 8.15, security off (core server + netty4 only)
	OpenSearch2    Flavor = "opensearch2"    // OpenSearch 2.19 (data streams in core)
)

// startTimeout bounds a server's start (JVM up, HTTP address reported,
// cluster yellow). About 3 s on a quiet machine; a node sharing two loaded
// cores with other JVMs and a CPU hog has been seen to need over 90 s, and
// a slow start is not what these tests are about.
const startTimeout = 5 * time.Minute

// Heap is the JVM heap of every server.
const Heap = "512m"

// Server is one running search node.
type Server struct {
	// URL is the HTTP endpoint, http://127.0.0.1:PORT.
	URL    string
	Flavor Flavor

	cmd    *exec.Cmd
	share  *mvnpeer.Share // class-data archive use (internal/mvnpeer, cds.go)
	stdin  io.WriteCloser
	home   string
	exited chan struct{}
	once   sync.Once
}

var (
	mu     sync.Mutex
	shared = map[Flavor]*Server{}
	failed = map[Flavor]error{}
)

// Main runs the tests of a package and stops the shared servers
// afterwards. Call it from TestMain: func TestMain(m *testing.M) { searchtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops every shared server (Main does it).
func StopShared() {
	mu.Lock()
	defer mu.Unlock()
	for f, s := range shared {
		s.Stop()
		delete(shared, f)
	}
}

// Available reports why servers cannot run here ("" when they can).
func Available() string {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (install Java 17 and Maven to run the search-server tests)"
		}
	}
	return ""
}

func require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("searchtest: starts a search server (JVM): not run with -short")
	}
	if why := Available(); why != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("search server needed under CI: %s", why)
		}
		t.Skipf("skipping: %s", why)
	}
}

// Shared returns the search server of flavor f shared by the tests of this
// process, starting it on first use. Tests must use index names of their
// own. It skips the test when java or mvn is missing (fails under CI).
func Shared(t testing.TB, f Flavor) *Server {
	t.Helper()
	require(t)
	mu.Lock()
	defer mu.Unlock()
	if s := shared[f]; s != nil {
		return s
	}
	if err := failed[f]; err != nil {
		t.Fatalf("search server %s failed to start earlier: %v", f, err)
	}
	s, err := start(f, nil)
	if err != nil {
		failed[f] = err
		t.Fatalf("starting search server %s: %v", f, err)
	}
	shared[f] = s
	return s
}

// Dedicated starts a server of flavor f with extra node settings
// (key=value, e.g. thread_pool.write.queue_size) for one test; it is
// stopped when the test ends.
func Dedicated(t testing.TB, f Flavor, settings map[string]string) *Server {
	t.Helper()
	require(t)
	s, err := start(f, settings)
	if err != nil {
		t.Fatalf("starting search server %s: %v", f, err)
	}
	t.Cleanup(s.Stop)
	return s
}

// javaDir is the Maven project next to this file.
func javaDir() string {
	return filepath.Join(mvnpeer.SourceDir(), "java")
}

// Build compiles the launcher of flavor f when it is missing or older than
// its sources and returns the classpath to run it with.
func Build(f Flavor) (string, error) {
	return mvnpeer.Project{Dir: javaDir(), Module: string(f), Launcher: "weir/searchtest/Launcher.class"}.Build()
}

func start(f Flavor, settings map[string]string) (*Server, error) {
	cp, err := Build(f)
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "weir-searchtest-"+string(f)+"-")
	if err != nil {
		return nil, err
	}
	// The first server of a build writes its class-data archive when
	// Stop ends it (internal/mvnpeer, cds.go).
	share := mvnpeer.ShareArchive(cp, true)
	args := append(append([]string{"-Xms" + Heap, "-Xmx" + Heap, "-XX:+UseSerialGC"}, jit()...), share.Args...)
	args = append(args, "-Djava.awt.headless=true", "-Dlog4j2.disable.jmx=true", "-cp", cp, "weir.searchtest.Launcher", home)
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, k+"="+settings[k])
	}
	cmd := exec.Command("java", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan server if the test process dies
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(home, "launcher.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(home)
		share.Done(false)
		return nil, fmt.Errorf("starting java: %w", err)
	}
	s := &Server{Flavor: f, cmd: cmd, share: share, stdin: stdin, home: home, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "WEIR-SEARCHTEST http="); ok {
				addr <- a
			}
		}
		cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	fail := func(err error) (*Server, error) {
		s.Stop()
		return nil, err
	}
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case <-s.exited:
		log, _ := os.ReadFile(logf.Name())
		os.RemoveAll(home)
		share.Done(false)
		return nil, fmt.Errorf("%s launcher exited before listening:\n%s", f, tail(log, 4000))
	case <-time.After(startTimeout):
		log, _ := os.ReadFile(logf.Name())
		return fail(fmt.Errorf("%s launcher did not report its HTTP address within %v:\n%s", f, startTimeout, tail(log, 2000)))
	}
	err = testkit.Poll(startTimeout, func() error {
		st, _, err := s.do("GET", "/_cluster/health?wait_for_status=yellow&timeout=5s", nil)
		if err == nil && st != 200 {
			err = fmt.Errorf("status %d", st)
		}
		return err
	})
	if err != nil {
		return fail(fmt.Errorf("%s at %s not healthy: %w", f, s.URL, err))
	}
	return s, nil
}

// HeavyIndexing makes the servers this process starts from then on run
// with the JVM's full tiered compilation (C2). A package whose tests index
// hundreds of thousands of documents sets it in its TestMain, before its
// first server starts: there C2's compiling pays for itself
// (examples/app-logs-to-elk's kill -9 test, a million documents: 173 → 152
// CPU-s, 112 → 92 s; connectors/mysql, 200,000 rows, gains nothing: 163 →
// 181 CPU-s).
var HeavyIndexing bool

// jit is the server's JIT options: tests stop at C1
// (-XX:TieredStopAtLevel=1), since C2 compiling Elasticsearch's hot
// paths costs more CPU than a test's few thousand documents win back
// (connectors/elasticsearch's tests: the search servers' CPU 40 → 21 s,
// the package's 42 → 23); benchmarks (-test.bench) and HeavyIndexing keep
// the JVM's full tiered compilation, as BENCHMARKS.md's figures were
// measured with it.
func jit() []string {
	if f := flag.Lookup("test.bench"); HeavyIndexing || f != nil && f.Value.String() != "" {
		return nil
	}
	return []string{"-XX:TieredStopAtLevel=1"}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Stop shuts the server down (closing its stdin; killing it after 20s)
// and removes its data directory.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(s.share.ExitWait(20 * time.Second)):
			s.cmd.Process.Kill()
			<-s.exited
		}
		s.share.Done(s.cmd.ProcessState.Success())
		os.RemoveAll(s.home)
	})
}

// PID is the server's process id (to read its CPU time in benchmarks).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Kill stops the server abruptly (SIGKILL), for tests of an unavailable
// destination.
func (s *Server) Kill() {
	s.cmd.Process.Kill()
	<-s.exited
	s.Stop()
}

func (s *Server) do(method, path string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Do sends one request and returns the status and body; transport errors
// fail the test.
func (s *Server) Do(t testing.TB, method, path string, body []byte) (int, []byte) {
	t.Helper()
	st, b, err := s.do(method, path, body)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, s.URL, path, err)
	}
	return st, b
}

// MustDo is Do that fails the test on a status >= 300.
func (s *Server) MustDo(t testing.TB, method, path string, body []byte) []byte {
	t.Helper()
	st, b := s.Do(t, method, path, body)
	if st >= 300 {
		t.Fatalf("%s %s%s: status %d: %s", method, s.URL, path, st, b)
	}
	return b
}
