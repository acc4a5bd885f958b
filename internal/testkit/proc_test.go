package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStartProc(t *testing.T) {
	t.Parallel()
	sh := "/bin/sh"
	log := filepath.Join(t.TempDir(), "p.log")
	// Ready after a first line, then keeps running until killed.
	p, err := StartProc(sh, []string{"-c", `echo starting; echo '{"msg":"ready","n":1}'; exec sleep 60`}, log, "ready")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
		t.Fatal("exited while it should run")
	default:
	}
	p.Kill()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "starting\n{\"msg\":\"ready\",\"n\":1}\n" {
		t.Fatalf("log %q", got)
	}

	// A restart appends to the same log; a process that exits before it
	// is ready is an error naming the log.
	if p, err = StartProc(sh, []string{"-c", `echo '{"msg":"other"}'; exit 3`}, log, "ready"); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(10 * time.Second); err == nil || !strings.Contains(err.Error(), "exited before") || !strings.Contains(err.Error(), log) {
		t.Fatalf("early exit: %v", err)
	}
	<-p.Exited()
	if b, _ := os.ReadFile(log); !strings.HasSuffix(string(b), "{\"msg\":\"other\"}\n") || !strings.HasPrefix(string(b), "starting\n") {
		t.Fatalf("log after the restart %q", b)
	}

	// Not ready in time: the error says so and the process is left to Kill.
	if p, err = StartProc(sh, []string{"-c", "exec sleep 60"}, log, "ready"); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(200 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not log") {
		t.Fatalf("timeout: %v", err)
	}
	p.Kill()

	if _, err := StartProc(filepath.Join(t.TempDir(), "missing"), nil, log, "ready"); err == nil {
		t.Fatal("a missing binary started")
	}
}
