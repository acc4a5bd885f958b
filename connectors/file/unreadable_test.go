package file

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
)

// nobody is the unprivileged uid/gid the child source runs as, so that
// permission bits apply (root ignores chmod 000).
const nobody = 65534

// TestUnreadableChild is the child process of TestUnreadableFiles: it runs
// the file source as nobody until SIGTERM, logging JSON to stderr and
// printing its metrics to stdout whenever they change.
func TestUnreadableChild(t *testing.T) {
	if os.Getenv("WEIR_UNREADABLE_CHILD") == "" {
		t.Skip("child process of TestUnreadableFiles")
	}
	fmt.Printf("CHILD uid=%d\n", os.Getuid())
	lg, _ := zap.NewProduction()
	cl, err := sr.NewClient(sr.URLs(os.Getenv("WEIR_REGISTRY")))
	if err != nil {
		t.Fatal(err)
	}
	src, err := New(Options{Topic: "unreadable", Include: []string{filepath.Join(os.Getenv("WEIR_DIR"), "*.log")},
		Encoder: &AvroEncoder{Registry: cl}, Host: "testhost", RescanInterval: 50 * time.Millisecond,
		PollInterval: 10 * time.Millisecond, RotateWait: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ms := connectors.NewMetricSet(nil)
	m := ms.For("unreadable")
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	done := make(chan struct{})
	go func() { // metrics reporter
		last := ""
		for {
			cur := fmt.Sprintf("METRICS permission=%v opened=%v\n",
				counter(m.ErrorCounter("permission")), counter(m.EventCounter("file_opened")))
			if cur != last {
				os.Stdout.WriteString(cur)
				last = cur
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer close(done)
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{os.Getenv("WEIR_BROKER")}}, Metrics: ms, Logger: lg}
	if err := rt.RunSource(ctx, "unreadable", src, connectors.SourceOptions{Topic: "unreadable", CommitInterval: 100 * time.Millisecond}); err != nil {
		t.Fatalf("source: %v", err)
	}
}

// copyExecutable copies the running test binary into a fresh directory
// that nobody can traverse (the go build cache's directories are 0700).
func copyExecutable(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "weir-unreadable-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	bin := filepath.Join(dir, "file.test")
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Unreadable files (issue 7): run as nobody, a chmod 000 file among good
// ones is logged (path and permission error) and counted, the good files
// are read completely and exactly once, the source does not crash, a file
// made unreadable after it was opened keeps being read through its open
// descriptor, and once the bad file is made readable the next rescan
// picks it up.
func TestUnreadableFiles(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root to start the source as an unprivileged uid (so that chmod 000 applies and can be undone)")
	}
	b := testbroker.Start(t)
	reg := b.Registry(t)
	b.CreateTopic("unreadable", 1, nil)
	dir, err := os.MkdirTemp("", "weir-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	appendLines(t, p("good1.log"), "g1", 0, 300)
	appendLines(t, p("good2.log"), "g2", 0, 300)
	appendLines(t, p("mid.log"), "m", 0, 100)
	appendLines(t, p("secret.log"), "s", 0, 200)
	if err := os.Chmod(p("secret.log"), 0); err != nil {
		t.Fatal(err)
	}

	var out testkit.Buffer
	cmd := exec.Command(copyExecutable(t), "-test.run=^TestUnreadableChild$")
	cmd.Env = append(os.Environ(), "WEIR_UNREADABLE_CHILD=1", "WEIR_BROKER="+b.Addr, "WEIR_REGISTRY="+reg, "WEIR_DIR="+dir)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the source as uid %d: %v", nobody, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("child output:\n%s", out.String())
		}
	})
	alive := func() {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("the source exited early (%v); output:\n%s", err, out.String())
		default:
		}
	}

	e := &env{t: t, b: b, reg: reg, serd: newSerde(newSRClient(t, reg))}
	has := func(evs []event, prefix string, from, to int) bool {
		m := messages(evs)
		for i := from; i < to; i++ {
			if m[fmt.Sprintf("%s line %06d with some padding to look like a log line", prefix, i)] == 0 {
				return false
			}
		}
		return true
	}
	// The good files (and mid.log) are read; secret.log is logged and counted.
	testbroker.CheckFor(t, 15*time.Second, func() error {
		alive()
		o := out.String()
		if !strings.Contains(o, fmt.Sprintf("CHILD uid=%d", nobody)) {
			return fmt.Errorf("child not running as uid %d yet", nobody)
		}
		if !strings.Contains(o, "METRICS permission=1 ") {
			return fmt.Errorf("permission error not counted yet")
		}
		evs := e.events("unreadable")
		if !has(evs, "g1", 0, 300) || !has(evs, "g2", 0, 300) || !has(evs, "m", 0, 100) {
			return fmt.Errorf("%d events, good files not read completely yet", len(evs))
		}
		return nil
	})
	var logged bool
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "cannot read file") && strings.Contains(line, p("secret.log")) &&
			strings.Contains(line, `"problem":"permission"`) && strings.Contains(line, "permission denied") {
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no log line naming %s and the permission error; output:\n%s", p("secret.log"), out.String())
	}
	for _, ev := range e.events("unreadable") {
		if strings.HasSuffix(ev.File, "secret.log") {
			t.Fatalf("event from the unreadable file: %+v", ev)
		}
	}

	// mid.log becomes unreadable after it was opened: the open descriptor
	// keeps reading what is appended.
	if err := os.Chmod(p("mid.log"), 0); err != nil {
		t.Fatal(err)
	}
	appendLines(t, p("mid.log"), "m", 100, 200)
	appendLines(t, p("good1.log"), "g1", 300, 400)

	// secret.log becomes readable: a rescan opens it.
	if err := os.Chmod(p("secret.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	testbroker.CheckFor(t, 15*time.Second, func() error {
		alive()
		evs := e.events("unreadable")
		if !has(evs, "s", 0, 200) || !has(evs, "m", 100, 200) || !has(evs, "g1", 300, 400) {
			return fmt.Errorf("%d events, secret.log / appended lines not all read yet", len(evs))
		}
		return nil
	})

	// Clean stop, then every line exactly once.
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("child exit: %v; output:\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the source did not stop within 10s of SIGTERM")
	}
	evs := e.events("unreadable")
	checkLines(t, evs, "g1", 0, 400)
	checkLines(t, evs, "g2", 0, 300)
	checkLines(t, evs, "m", 0, 200)
	checkLines(t, evs, "s", 0, 200)
	if want := 400 + 300 + 200 + 200; len(evs) != want {
		t.Fatalf("%d events, want %d", len(evs), want)
	}
	// The permission problem was logged once (not on every rescan).
	if n := strings.Count(out.String(), `"problem":"permission"`); n != 1 {
		t.Errorf("permission problem logged %d times, want once", n)
	}
}
