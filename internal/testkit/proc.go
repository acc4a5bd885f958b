package testkit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is a child process of a test (a `weir broker`, say) whose stdout
// and stderr are appended line by line to a log file, watched for the
// JSON log line that says it is ready.
type Proc struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	started chan struct{}
	desc    string // for errors: what, its ready line and its log
	ready   string
	logPath string
}

// StartProc runs bin with args and appends its output to logPath
// (created if missing, so a restarted process continues the same log),
// watching for a JSON line whose "msg" is ready (see WaitReady). It
// returns as soon as the process runs.
func StartProc(bin string, args []string, logPath, ready string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan if the test process dies
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		logf.Close()
		pr.Close()
		pw.Close()
		return nil, err
	}
	pw.Close()
	p := &Proc{cmd: cmd, exited: make(chan struct{}), started: make(chan struct{}), desc: bin, ready: ready, logPath: logPath}
	go func() {
		defer logf.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := false
		for sc.Scan() {
			logf.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg string }
			if !once && json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == ready {
				once = true
				close(p.started)
			}
		}
		pr.Close()
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// WaitReady waits until the process has logged its ready line; it
// fails when the process exits first or timeout passes (the process is
// then left running: Kill it).
func (p *Proc) WaitReady(timeout time.Duration) error {
	select {
	case <-p.started:
		return nil
	case <-p.exited:
		return fmt.Errorf("%s exited before logging %q (log %s)", p.desc, p.ready, p.logPath)
	case <-time.After(timeout):
		return fmt.Errorf("%s did not log %q within %v (log %s)", p.desc, p.ready, timeout, p.logPath)
	}
}

// Kill sends the process SIGKILL and waits until it is gone and its
// output is in the log.
func (p *Proc) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Exited is closed once the process has exited and its output is in
// the log.
func (p *Proc) Exited() <-chan struct{} { return p.exited }
