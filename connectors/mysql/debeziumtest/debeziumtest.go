package debeziumtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"weir/internal/mvnpeer"
	"weir/internal/testkit"
)

// Heap is the JVM heap of the engine.
const Heap = "384m"

// Config says what the engine captures.
type Config struct {
	Host      string
	Port      int
	User      string
	Password  string
	Databases []string // database.include.list
	ServerID  uint32   // database.server.id, unique among the server's replicas
	// Extra Debezium connector properties (override the launcher's).
	Extra map[string]string
}

// Event is one Debezium change event as the launcher writes it. Values
// are as Debezium gives them: json.Number for numbers, strings (decimals,
// base64 binary, ZonedTimestamp, enums, JSON), bools (BIT(1)), nil.
type Event struct {
	DB       string            `json:"db"`
	Table    string            `json:"table"`
	Op       string            `json:"op"`       // r, c, u, d
	Snapshot string            `json:"snapshot"` // source.snapshot: true, first, last, false, ...
	Key      map[string]any    `json:"key"`
	Before   map[string]any    `json:"before"`
	After    map[string]any    `json:"after"`
	Types    map[string]string `json:"types"` // column → "INT64 io.debezium.time.MicroTime"
}

// Engine is a running Debezium embedded engine.
type Engine struct {
	cmd     *exec.Cmd
	share   *mvnpeer.Share // class-data archive use (internal/mvnpeer, cds.go)
	stdin   io.WriteCloser
	dir     string
	logPath string
	exited  chan struct{}
	once    sync.Once

	mu      sync.Mutex
	events  []Event
	stopped string // the launcher's "stopped" control line, if any
	bad     error  // a line that did not parse
}

// Available reports why the engine cannot run here ("" when it can).
func Available() string {
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (install Java 17 and Maven to run the Debezium differential tests)"
		}
	}
	return ""
}

// javaDir is the Maven project next to this file.
func javaDir() string {
	return filepath.Join(mvnpeer.SourceDir(), "java")
}

// Build compiles the launcher when it is missing or older than its
// sources and returns the classpath to run it with.
func Build() (string, error) {
	return mvnpeer.Project{Dir: javaDir(), Launcher: "weir/debeziumtest/Launcher.class"}.Build()
}

// Start builds the launcher if needed, starts the engine and waits until
// its connector task runs (the snapshot then starts at once). The engine
// stops when tb ends. It skips tb when java or mvn is missing (fails when
// CI=true).
func Start(tb testing.TB, cfg Config) *Engine {
	tb.Helper()
	if testing.Short() {
		tb.Skip("debeziumtest: starts a Debezium engine (JVM): not run with -short")
	}
	if why := Available(); why != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("debeziumtest: %s (CI=true: Debezium is required)", why)
		}
		tb.Skipf("debeziumtest: %s", why)
	}
	e, err := start(cfg)
	if err != nil {
		tb.Fatalf("debeziumtest: %v", err)
	}
	tb.Cleanup(e.Stop)
	return e
}

func start(cfg Config) (*Engine, error) {
	cp, err := Build()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "weir-debeziumtest-")
	if err != nil {
		return nil, err
	}
	props := map[string]string{
		"database.hostname":     cfg.Host,
		"database.port":         strconv.Itoa(cfg.Port),
		"database.user":         cfg.User,
		"database.password":     cfg.Password,
		"database.include.list": strings.Join(cfg.Databases, ","),
		"database.server.id":    strconv.FormatUint(uint64(cfg.ServerID), 10),
	}
	for k, v := range cfg.Extra {
		props[k] = v
	}
	// The first engine of a build writes its class-data archive when Stop
	// ends it (internal/mvnpeer, cds.go).
	share := mvnpeer.ShareArchive(cp, true)
	args := append([]string{"-Xms64m", "-Xmx" + Heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}, share.Args...)
	args = append(args, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", cp, "weir.debeziumtest.Launcher", dir)
	for k, v := range props {
		args = append(args, k+"="+v)
	}
	cmd := exec.Command("java", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	e := &Engine{cmd: cmd, share: share, stdin: stdin, dir: dir, logPath: filepath.Join(dir, "launcher.log"), exited: make(chan struct{})}
	logf, err := os.Create(e.logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		share.Done(false)
		return nil, fmt.Errorf("starting java: %w", err)
	}
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		once := sync.Once{}
		for sc.Scan() {
			e.line(sc.Bytes(), func() { once.Do(func() { close(started) }) })
		}
		cmd.Wait()
		logf.Close()
		close(e.exited)
	}()
	select {
	case <-started:
		return e, nil
	case <-e.exited:
		err := fmt.Errorf("launcher exited before its connector task started (%s):\n%s", e.stoppedLine(), e.logTail())
		os.RemoveAll(dir)
		share.Done(false)
		return nil, err
	case <-time.After(120 * time.Second):
		err := fmt.Errorf("connector task not started within 120s:\n%s", e.logTail())
		e.Stop()
		return nil, err
	}
}

func (e *Engine) line(b []byte, started func()) {
	var c struct {
		Control string `json:"control"`
	}
	if bytes.HasPrefix(b, []byte(`{"control"`)) && json.Unmarshal(b, &c) == nil {
		switch c.Control {
		case "started":
			started()
		case "stopped":
			e.mu.Lock()
			e.stopped = string(b)
			e.mu.Unlock()
		}
		return
	}
	var ev Event
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	err := d.Decode(&ev)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		if e.bad == nil {
			e.bad = fmt.Errorf("launcher line %q: %v", b, err)
		}
		return
	}
	e.events = append(e.events, ev)
}

func (e *Engine) stoppedLine() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped == "" {
		return "no stop report"
	}
	return e.stopped
}

func (e *Engine) logTail() string {
	b, _ := os.ReadFile(e.logPath)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

// Events returns a copy of the events received so far, in the order
// Debezium emitted them. It returns an error when the engine stopped or
// wrote a line that does not parse.
func (e *Engine) Events() ([]Event, error) {
	e.mu.Lock()
	evs := append([]Event(nil), e.events...)
	bad, stopped := e.bad, e.stopped
	e.mu.Unlock()
	if bad != nil {
		return evs, bad
	}
	select {
	case <-e.exited:
		return evs, fmt.Errorf("debezium engine exited (%s):\n%s", stopped, e.logTail())
	default:
	}
	if stopped != "" {
		return evs, fmt.Errorf("debezium engine stopped: %s\n%s", stopped, e.logTail())
	}
	return evs, nil
}

// WaitSnapshot waits until Debezium has emitted the last record of its
// snapshot (source.snapshot "last"; a snapshot of empty tables emits
// none, so have a row to snapshot) and returns the events so far. Changes
// made before that may be in the snapshot rather than streamed.
func (e *Engine) WaitSnapshot(tb testing.TB, timeout time.Duration) []Event {
	tb.Helper()
	var evs []Event
	err := testkit.Poll(timeout, func() error {
		var err error
		if evs, err = e.Events(); err != nil {
			return testkit.Stop(err)
		}
		for _, ev := range evs {
			if ev.Snapshot == "last" {
				return nil
			}
		}
		return fmt.Errorf("snapshot not done (%d events)", len(evs))
	})
	if err != nil {
		tb.Fatalf("debeziumtest: %v; engine log:\n%s", err, e.logTail())
	}
	return evs
}

// Log is the tail of the engine's log (stderr).
func (e *Engine) Log() string { return e.logTail() }

// Stop closes the engine's stdin (it shuts down cleanly), kills it after
// 30s, and removes its work directory.
func (e *Engine) Stop() {
	e.once.Do(func() {
		e.stdin.Close()
		select {
		case <-e.exited:
		case <-time.After(e.share.ExitWait(30 * time.Second)):
			e.cmd.Process.Kill()
			<-e.exited
		}
		e.share.Done(e.cmd.ProcessState.Success())
		os.RemoveAll(e.dir)
	})
}
