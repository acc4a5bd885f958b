package file

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/sr"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/internal/kafkaclient"
	"weir/internal/txntest"
)

// The child process of TestKillDashNine runs the file source against the
// test's broker until it is killed (re-exec of the test binary).
func TestMain(m *testing.M) {
	if os.Getenv("WEIR_FILE_CHILD") != "" {
		os.Exit(childMain())
	}
	code := m.Run()
	txntest.Stop()
	os.Exit(code)
}

func childMain() int {
	lg, _ := zap.NewProduction()
	cl, err := sr.NewClient(sr.URLs(os.Getenv("WEIR_REGISTRY")))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	topic := os.Getenv("WEIR_TOPIC")
	src, err := New(Options{Topic: topic, Include: []string{filepath.Join(os.Getenv("WEIR_DIR"), "*.log*")},
		Encoder: &AvroEncoder{Registry: cl}, RescanInterval: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond,
		RotateWait: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{os.Getenv("WEIR_BROKER")}}, Logger: lg}
	opts := connectors.SourceOptions{Topic: topic, CommitInterval: 500 * time.Millisecond, ExactlyOnce: os.Getenv("WEIR_EXACTLY_ONCE") != ""}
	if err := rt.RunSource(ctx, topic, src, opts); err != nil {
		lg.Error("source failed", zap.Error(err))
		return 1
	}
	return 0
}

// TestKillDashNineExactlyOnce kills an at-least-once file source -9
// twice while it tails 1,000,000 lines through rotations; the topic must
// hold each line once (the destination scan's best effort: see
// connectors/offsets.go; TestKillDashNineTransactions is the guarantee).
func TestKillDashNineExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 lines")
	}
	b := testbroker.Start(t)
	killDashNine(t, b, b.Addr, false)
}

// TestKillDashNineTransactions is TestKillDashNineExactlyOnce with the
// source exactly-once (each commit interval's lines and positions in one
// transaction), against Apache Kafka 4.4 and weir (once it supports
// transactions): read with read_committed, the topic holds each line
// exactly once.
func TestKillDashNineTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 lines, Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			b := tb.Weir
			if b == nil {
				b = testbroker.Start(t) // the schema registry
			}
			killDashNine(t, b, tb.Addr, true)
		})
	}
}

// killRuns numbers the kill tests of this process: each has its own
// topic and connector name (the Apache Kafka of txntest is shared, so a
// repeated run, -count=N, starts afresh).
var killRuns atomic.Int32

// killDashNine runs the kill test against the broker at addr (b serves
// the schema registry; it is the broker too when addr is b.Addr).
func killDashNine(t *testing.T, b *testbroker.Broker, addr string, exactlyOnce bool) {
	reg := b.Registry(t)
	topic := fmt.Sprintf("e2e-%d", killRuns.Add(1))
	dir := t.TempDir()
	logDir, err := os.MkdirTemp("", "weir-file-kill-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // kept for a failure: the message names it
		if !t.Failed() {
			os.RemoveAll(logDir)
		}
	})
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), 4, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("creating %s: %v %v", topic, err, resp.Err)
	}
	start := func(n int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no orphan if the test process dies
		cmd.Env = append(os.Environ(), "WEIR_FILE_CHILD=1", "WEIR_BROKER="+addr, "WEIR_REGISTRY="+reg, "WEIR_DIR="+dir, "WEIR_TOPIC="+topic)
		if exactlyOnce {
			cmd.Env = append(cmd.Env, "WEIR_EXACTLY_ONCE=1")
		}
		f, err := os.Create(filepath.Join(logDir, fmt.Sprintf("child%d.log", n)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr, cmd.Stdout = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); f.Close() })
		return cmd
	}
	adm := kadm.NewClient(cl)
	records := func() int64 {
		ends, err := adm.ListEndOffsets(context.Background(), topic)
		if err != nil {
			return -1
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	const files, perFile, rotateEvery = 4, 250_000, 40_000
	written := make(chan error, 1)
	go func() { written <- writeApp(dir, files, perFile, rotateEvery) }()

	child := start(0)
	for kill := 1; kill <= 2; kill++ {
		target := int64(kill * 300_000)
		testbroker.CheckFor(t, 120*time.Second, func() error {
			if n := records(); n < target {
				return fmt.Errorf("%d records, waiting for %d before kill -9", n, target)
			}
			return nil
		})
		child.Process.Signal(syscall.SIGKILL)
		child.Wait()
		t.Logf("killed the source with -9 at %d records", records())
		child = start(kill)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	total := int64(files * perFile)
	committed := func() int64 { // what read_committed consumers can read
		ends, err := adm.ListCommittedOffsets(context.Background(), topic)
		if err != nil {
			return -1
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	var evs []event
	e := &env{t: t, b: b, reg: reg}
	scl, _ := sr.NewClient(sr.URLs(reg))
	e.serd = newSerde(scl)
	testbroker.CheckFor(t, 180*time.Second, func() error {
		if !exactlyOnce {
			if n := records(); n < total {
				return fmt.Errorf("%d of %d records", n, total)
			}
			return nil
		}
		// The log also holds aborted records and markers: count the
		// committed ones.
		if n := committed(); n < total {
			return fmt.Errorf("last stable offsets add up to %d, waiting for %d records committed", n, total)
		}
		if evs = e.decode(txntest.ReadCommitted(t, addr, topic)); int64(len(evs)) < total {
			return fmt.Errorf("%d of %d records committed", len(evs), total)
		}
		return nil
	})
	// Stop cleanly, then check the topic holds every line exactly once.
	child.Process.Signal(syscall.SIGTERM)
	if err := child.Wait(); err != nil {
		t.Errorf("child exit: %v", err)
	}
	if exactlyOnce {
		evs = e.decode(txntest.ReadCommitted(t, addr, topic))
		t.Logf("%d records in the log (with aborted ones and markers) for %d committed", records(), len(evs))
	} else {
		evs = e.decode(testbroker.ReadAllAt(t, addr, topic))
	}
	seen := make(map[string]int, len(evs))
	for _, ev := range evs {
		seen[ev.Message]++
	}
	missing, dups := 0, 0
	var where lineRanges
	for f := 0; f < files; f++ {
		for i := 0; i < perFile; i++ {
			switch n := seen[appLine(f, i)]; n {
			case 0:
				missing++
				where.add(f, i, "missing")
			case 1:
			default:
				dups++
				where.add(f, i, fmt.Sprintf("%d times", n))
			}
		}
	}
	if missing > 0 || dups > 0 || len(evs) != int(total) {
		t.Fatalf("%d events for %d lines: %d missing, %d duplicated: %s (child logs in %s)", len(evs), total, missing, dups, where, logDir)
	}
}

// lineRanges describes runs of lines (file, line numbers) in one state
// for a failure message.
type lineRanges struct {
	runs []lineRun
}

type lineRun struct {
	file, from, to int
	state          string
}

func (r *lineRanges) add(f, i int, state string) {
	if n := len(r.runs); n > 0 {
		last := &r.runs[n-1]
		if last.file == f && last.to == i-1 && last.state == state {
			last.to = i
			return
		}
	}
	r.runs = append(r.runs, lineRun{f, i, i, state})
}

func (r lineRanges) String() string {
	var b []byte
	for i, run := range r.runs {
		if i == 20 {
			b = fmt.Appendf(b, " and %d more runs", len(r.runs)-i)
			break
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, "app%d lines %d-%d %s", run.file, run.from, run.to, run.state)
	}
	return string(b)
}

func appLine(f, i int) string {
	return fmt.Sprintf("app%d %07d lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod", f, i)
}

// writeApp writes perFile lines to each of files log files, rotating each
// every rotateEvery lines, alternately by rename and by copytruncate.
func writeApp(dir string, files, perFile, rotateEvery int) error {
	out := make([]*os.File, files)
	path := func(f int) string { return filepath.Join(dir, fmt.Sprintf("app%d.log", f)) }
	for f := range out {
		var err error
		if out[f], err = os.OpenFile(path(f), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
	}
	rot := 0
	const chunk = 1000
	for i := 0; i < perFile; i += chunk {
		for f := 0; f < files; f++ {
			var b []byte
			for j := i; j < i+chunk && j < perFile; j++ {
				b = append(b, appLine(f, j)...)
				b = append(b, '\n')
			}
			if _, err := out[f].Write(b); err != nil {
				return err
			}
			if (i+chunk)%rotateEvery != 0 {
				continue
			}
			rot++
			rotated := fmt.Sprintf("%s.%d", path(f), rot)
			if rot%2 == 0 { // rename, then a new file
				if err := os.Rename(path(f), rotated); err != nil {
					return err
				}
				out[f].Close()
				var err error
				if out[f], err = os.OpenFile(path(f), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
					return err
				}
				continue
			}
			// copytruncate (the copy appears atomically under its name)
			data, err := os.ReadFile(path(f))
			if err != nil {
				return err
			}
			tmp := filepath.Join(dir, fmt.Sprintf("copy%d.tmp", rot))
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				return err
			}
			if err := os.Rename(tmp, rotated); err != nil {
				return err
			}
			if err := out[f].Truncate(0); err != nil {
				return err
			}
		}
		time.Sleep(8 * time.Millisecond)
	}
	for _, f := range out {
		f.Close()
	}
	return nil
}
