package connectors

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/txntest"
)

// staticChildEnv holds the JSON staticChildConfig of a sink task run in a
// re-executed test binary (see TestMain).
const staticChildEnv = "WEIR_CONNECTORS_STATIC_CHILD"

type staticChildConfig struct {
	Broker, Topic, Group, Instance, Out string
}

func TestMain(m *testing.M) {
	if os.Getenv(staticChildEnv) != "" {
		staticChildMain()
		return
	}
	if os.Getenv(eosChildEnv) != "" {
		eosChildMain()
		return
	}
	code := m.Run()
	txntest.Stop()
	os.Exit(code)
}

// staticChildMain runs a static sink task writing to a file until killed.
func staticChildMain() {
	var cc staticChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(staticChildEnv)), &cc); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	lg, _ := zap.NewDevelopment()
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{cc.Broker}, Extra: []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string { return time.Now().Format("15:04:05.000 ") }))}}, Logger: lg}
	err := rt.RunSink(ctx, "static", &fileSink{path: cc.Out}, SinkOptions{Topics: []string{cc.Topic}, Group: cc.Group,
		InstanceID: cc.Instance, FlushInterval: 100 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "sink:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// fileSink appends the value of every flushed record to a file, one a
// line (a kill -9 keeps what was written: the page cache survives it).
type fileSink struct {
	path    string
	f       *os.File
	pending []*kgo.Record
}

func (s *fileSink) Open(context.Context, SinkContext) (err error) {
	s.f, err = os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	return err
}

func (s *fileSink) Write(_ context.Context, rs []*kgo.Record) error {
	s.pending = append(s.pending, rs...)
	return nil
}

func (s *fileSink) Flush(context.Context) error {
	w := bufio.NewWriter(s.f)
	for _, r := range s.pending {
		w.Write(r.Value)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return err
	}
	s.pending = nil
	return nil
}

func (s *fileSink) Close() error { return s.f.Close() }

// startStaticChild runs a static sink task in a child process; the
// returned function kills it with SIGKILL (idempotent).
func startStaticChild(t *testing.T, cc staticChildConfig) (kill func()) {
	t.Helper()
	b, _ := json.Marshal(cc)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), staticChildEnv+"="+string(b))
	logPath := cc.Out + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	var once sync.Once
	kill = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
		})
	}
	t.Cleanup(func() {
		kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s (tail):\n%s", filepath.Base(logPath), b)
		}
	})
	return kill
}

// TestSinkTaskStaticMemberRestart: two sink tasks with instance ids share
// a topic in child processes; each in turn is killed with SIGKILL (no
// commit, no LeaveGroup) and restarted with the same instance id. The
// restarted task takes the dead member's place at once (its old member id
// fenced) and the group consumes everything produced meanwhile well
// before the dead member's 45 s session timeout would have passed.
// Nothing is lost: every produced value is in the tasks' output.
func TestSinkTaskStaticMemberRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("child processes killed and restarted")
	}
	b := testbroker.Start(t)
	const topic, group = "static", "static-sinks"
	b.CreateTopic(topic, 4, nil)
	cl := b.Client()
	adm := kadm.NewClient(cl)
	dir := t.TempDir()
	produced := 0
	produce := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for i := 0; i < n; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(produced)), Value: []byte(fmt.Sprintf("v%d", produced))})
			produced++
		}
		if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// waitAll waits until the group has committed every produced record
	// (the tasks flush before they commit) and returns how long it took.
	waitAll := func(timeout time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		testbroker.CheckFor(t, timeout, func() error {
			if n := committed(t, b, group); n != int64(produced) {
				return fmt.Errorf("group %s committed %d of %d", group, n, produced)
			}
			return nil
		})
		return time.Since(start)
	}
	type memberState struct {
		id         string
		partitions []int32
	}
	members := func() (string, map[string]memberState) { // group state, instance id → member
		t.Helper()
		gs, err := adm.DescribeGroups(context.Background(), group)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]memberState{}
		for _, m := range gs[group].Members {
			if m.InstanceID == nil {
				continue
			}
			ms := memberState{id: m.MemberID}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, at := range a.Topics {
					ms.partitions = append(ms.partitions, at.Partitions...)
				}
			}
			out[*m.InstanceID] = ms
		}
		return gs[group].State, out
	}
	// lagged returns the partitions whose committed offset is behind
	// their end.
	lagged := func() map[int32]bool {
		t.Helper()
		ends, err := adm.ListEndOffsets(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]bool{}
		ends.Each(func(o kadm.ListedOffset) {
			if c, _ := cs.Lookup(o.Topic, o.Partition); c.At < o.Offset {
				out[o.Partition] = true
			}
		})
		return out
	}
	// balanced waits for a Stable group of a and b with two partitions
	// each.
	balanced := func() map[string]memberState {
		t.Helper()
		var ms map[string]memberState
		testbroker.CheckFor(t, 30*time.Second, func() error {
			var state string
			state, ms = members()
			if state != "Stable" || len(ms) != 2 || len(ms["a"].partitions) != 2 || len(ms["b"].partitions) != 2 {
				return fmt.Errorf("group %s, members by instance id: %v; want a and b with 2 partitions each", state, ms)
			}
			return nil
		})
		return ms
	}

	run := 0
	start := func(inst string) func() {
		run++
		return startStaticChild(t, staticChildConfig{Broker: b.Addr, Topic: topic, Group: group, Instance: inst,
			Out: filepath.Join(dir, fmt.Sprintf("%s-%d.out", inst, run))})
	}
	produce(2000)
	kills := map[string]func(){"a": start("a"), "b": start("b")}
	waitAll(60 * time.Second)
	ms := balanced()

	for _, inst := range []string{"a", "b"} {
		other := map[string]string{"a": "b", "b": "a"}[inst]
		kills[inst]()
		produce(2000) // every partition gets records, the dead task's too
		// The live task consumes its partitions; the dead one's wait.
		testbroker.CheckFor(t, 30*time.Second, func() error {
			l := lagged()
			for _, p := range ms[other].partitions {
				if l[p] {
					return fmt.Errorf("live instance %s has not committed partition %d yet", other, p)
				}
			}
			for _, p := range ms[inst].partitions {
				if !l[p] {
					return fmt.Errorf("partition %d of the killed instance %s is committed to its end", p, inst)
				}
			}
			return nil
		})
		restarted := time.Now()
		kills[inst] = start(inst)
		took := waitAll(60 * time.Second)
		t.Logf("instance %s restarted after kill -9: its partitions %v consumed %v later", inst, ms[inst].partitions, took.Round(time.Millisecond))
		// A dynamic member would wait out the dead one's session
		// timeout (kgo's default 45 s) before its partitions moved.
		if took > 15*time.Second {
			t.Errorf("instance %s: the restarted static member took %v to consume its partitions, want well under the 45 s session timeout", inst, took)
		}
		old := ms[inst].id
		ms = balanced()
		if ms[inst].id == old {
			t.Errorf("after restarting %s (%v ago): member id %s unchanged, want a new one (the old one fenced)", inst, time.Since(restarted), old)
		}
	}

	// Nothing lost: every value is in some task's output (values the
	// killed tasks flushed but did not commit come again; that is fine).
	seen := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.out"))
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			seen[sc.Text()] = true
		}
		fh.Close()
	}
	for i := 0; i < produced; i++ {
		if !seen[fmt.Sprintf("v%d", i)] {
			t.Fatalf("value v%d of %d is in no task's output", i, produced)
		}
	}
}

// TestSinkTaskStaticMemberCleanStop: a static task that stops cleanly
// commits and does not leave the group: its member stays (partitions
// wait for the restart), and the restart with the same id takes its
// place (a new member id, still one member).
func TestSinkTaskStaticMemberCleanStop(t *testing.T) {
	b := testbroker.Start(t)
	b.CreateTopic("static-stop", 2, nil)
	produceN(t, b.Client(), "static-stop", 100, func(int) bool { return false })
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}}
	adm := kadm.NewClient(b.Client())
	describe := func() kadm.DescribedGroup {
		var gs kadm.DescribedGroups
		// A fresh broker's coordinator may still be loading: not yet.
		testbroker.CheckFor(t, 10*time.Second, func() error {
			var err error
			gs, err = adm.DescribeGroups(context.Background(), "weir-connect-stop")
			if err == nil {
				err = gs["weir-connect-stop"].Err
			}
			return err
		})
		return gs["weir-connect-stop"]
	}
	// runOnce runs the sink until its group is Stable with a new member
	// and it has stored want records, then stops it cleanly.
	runOnce := func(prev string, want int) string {
		sink := &memSink{}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			errc <- rt.RunSink(ctx, "stop", sink, SinkOptions{Topics: []string{"static-stop"}, InstanceID: "stop-1",
				FlushInterval: 50 * time.Millisecond})
		}()
		testbroker.CheckFor(t, 30*time.Second, func() error {
			if g := describe(); g.State != "Stable" || len(g.Members) != 1 || g.Members[0].MemberID == prev {
				return fmt.Errorf("group %s with members %+v (the previous run's id %q)", g.State, g.Members, prev)
			}
			if n := sink.count(); n < want {
				return fmt.Errorf("stored %d of %d records", n, want)
			}
			return nil
		})
		cancel()
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		g := describe()
		if len(g.Members) != 1 || g.Members[0].InstanceID == nil || *g.Members[0].InstanceID != "stop-1" {
			t.Fatalf("after a clean stop the group is %s with members %+v, want the static member still there", g.State, g.Members)
		}
		return g.Members[0].MemberID
	}
	first := runOnce("", 100)
	if n := committed(t, b, "weir-connect-stop"); n != 100 {
		t.Fatalf("committed %d after the clean stop, want 100", n)
	}
	// The restart replaces the remaining member (the wait above needs
	// a new member id in a Stable group of one).
	runOnce(first, 0)
}
