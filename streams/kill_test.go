package streams

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/partition"
)

// Crash tests: every application instance is a child process (this test
// binary re-executed with killChildEnv set), so a kill is a real SIGKILL
// of a process in the middle of processing, with whatever it had buffered,
// flushed or half-committed at that instant. The broker stays in the test
// process; children reach it over TCP.

const killChildEnv = "WEIR_STREAMS_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(killChildEnv) != "" {
		killChildMain()
		return
	}
	os.Exit(m.Run())
}

// killChildConfig is what a child instance runs (JSON in killChildEnv).
type killChildConfig struct {
	Broker         string
	AppID          string
	StateDir       string
	Topology       string // "count" or "groupby" (killTopology)
	CommitInterval time.Duration
	ExactlyOnce    bool
}

// childStatus is one progress line a child prints on stdout ("status "
// + JSON) every statusEvery: its live tasks' metrics and the changelog
// records its restores read over its life.
type childStatus struct {
	Tasks    []TaskMetrics
	Restored int64
	Final    bool // the last line, printed after Run returned
}

const statusEvery = 50 * time.Millisecond

// Topologies of the crash tests.
//
// count:   events (key = the counted key) → GroupByKey → Count("counts") → counts
// groupby: gevents (key = a sequence number, value = "<counted key>/<seq>")
//
//	→ GroupBy(the key in the value) → <app>-gcounts-repartition
//	→ Count("gcounts") → gcounts
func killTopology(name string) (*Topology, error) {
	bld := NewBuilder()
	// x: the exactly-once tests' topics (kill_eos_test.go), apart from
	// the others' on a shared broker.
	x := ""
	if strings.HasPrefix(name, "x") {
		name, x = name[1:], "x"
	}
	switch name {
	case "count":
		Count(GroupByKey(From(bld, x+"events", String(), Bytes()), String(), Bytes()), "counts").
			ToStream().To(x+"counts", String(), Int64())
	case "groupby":
		s := From(bld, x+"gevents", String(), String())
		g := GroupBy(s, func(_ string, v string) string { k, _, _ := strings.Cut(v, "/"); return k }, String(), String())
		Count(g, "gcounts").ToStream().To(x+"gcounts", String(), Int64())
	default:
		return nil, fmt.Errorf("unknown topology %q", name)
	}
	return bld.Build()
}

// killChildMain runs one instance until SIGTERM (clean stop: commit,
// checkpoint, leave, exit 0) or SIGKILL.
func killChildMain() {
	var cc killChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(killChildEnv)), &cc); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		os.Exit(2)
	}
	tp, err := killTopology(cc.Topology)
	if err != nil {
		fmt.Fprintln(os.Stderr, "topology:", err)
		os.Exit(2)
	}
	lcfg := zap.NewDevelopmentConfig()
	lcfg.Level = zap.NewAtomicLevelAt(zapcore.InfoLevel)
	lg, _ := lcfg.Build()
	cfg := Config{
		ApplicationID:  cc.AppID,
		Client:         kafkaclient.Options{Brokers: []string{cc.Broker}, Extra: []kgo.Opt{kgo.HeartbeatInterval(100 * time.Millisecond), kgo.SessionTimeout(6 * time.Second)}},
		StateDir:       cc.StateDir,
		CommitInterval: cc.CommitInterval,
		Logger:         lg,
		ExactlyOnce:    cc.ExactlyOnce,
		// Short, so a killed instance's transaction is aborted soon.
		TransactionTimeout: 5 * time.Second,
	}
	if os.Getenv("WEIR_STREAMS_DEBUG") != "" {
		cfg.Client.Extra = append(cfg.Client.Extra, kgo.WithLogger(kzapLogger{lg}))
	}
	a, err := New(tp, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "new:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	report := func(final bool) {
		b, _ := json.Marshal(childStatus{Tasks: a.Metrics(), Restored: a.restored.Load(), Final: final})
		out.WriteString("status ")
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	runDone, reporterDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(reporterDone)
		tick := time.NewTicker(statusEvery)
		defer tick.Stop()
		for {
			select {
			case <-runDone:
				return
			case <-tick.C:
				report(false)
			}
		}
	}()
	err = a.Run(ctx)
	close(runDone)
	<-reporterDone
	report(true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// appProc is a child instance as the test sees it: the process and the
// last status it printed.
type appProc struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	logPath string

	mu    sync.Mutex
	lines int
	cur   []TaskMetrics
	// tasks: the latest snapshot of every task the child ever reported
	// (a task's counters start again when it is reassigned).
	tasks map[string]TaskMetrics
	// grew: the tasks whose Processed grew since the previous line.
	grew      map[string]bool
	frozenCur []TaskMetrics
	frozenAll map[string]TaskMetrics
	// restores: per task, the snapshot with the most changelog records
	// restored. A task that moves away and back is a new incarnation
	// whose counters start at 0 (and which may resume from the checkpoint
	// it just wrote, restoring nothing): tasks keeps only the latest, so
	// an earlier takeover's restore would be lost from it.
	restores       map[string]TaskMetrics
	frozenRestores map[string]TaskMetrics
	// restored: changelog records the child restored over its life.
	restored int64
	// stateDir, appID: where the child keeps its stores
	// (<stateDir>/<appID>/<task>/<store>, a clean close's checkpoint
	// beside each as <store>.checkpoint).
	stateDir, appID string
	// onLine, if set (setOnLine), is called by the reader goroutine after
	// each status line has been taken in, outside mu: a condition on what
	// one line shows (a task processing, say) is seen there at every line,
	// where a poll of the latest line would miss the lines printed between
	// two polls.
	onLine func()
}

// setOnLine sets the function called after each status line (nil: none).
func (p *appProc) setOnLine(fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onLine = fn
}

// checkpointed returns the tasks of which p holds a clean checkpoint: it
// owned them, closed them cleanly when they moved away, and would resume
// their stores from that checkpoint rather than from an empty directory.
func (p *appProc) checkpointed() map[string]bool {
	out := map[string]bool{}
	cps, _ := filepath.Glob(filepath.Join(p.stateDir, p.appID, "*", "*.checkpoint"))
	for _, cp := range cps {
		out[filepath.Base(filepath.Dir(cp))] = true
	}
	return out
}

func startAppProc(t *testing.T, name string, cc killChildConfig) *appProc {
	t.Helper()
	cc.StateDir = t.TempDir()
	b, _ := json.Marshal(cc)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+string(b))
	p := &appProc{name: name, cmd: cmd, done: make(chan struct{}), logPath: filepath.Join(t.TempDir(), name+".log"),
		tasks: make(map[string]TaskMetrics), restores: make(map[string]TaskMetrics), stateDir: cc.StateDir, appID: cc.AppID}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "status ")
			if !ok {
				continue
			}
			var st childStatus
			if json.Unmarshal([]byte(line), &st) != nil {
				continue
			}
			p.mu.Lock()
			p.lines++
			if !st.Final { // the final line, after Run, lists no task
				p.grew = map[string]bool{}
				for _, m := range st.Tasks {
					if prev, ok := p.tasks[m.Task]; ok && m.Processed > prev.Processed {
						p.grew[m.Task] = true
					}
				}
				p.cur = st.Tasks
			}
			for _, m := range st.Tasks {
				p.tasks[m.Task] = m
				if m.Restored > p.restores[m.Task].Restored {
					p.restores[m.Task] = m
				}
			}
			p.restored = st.Restored
			onLine := p.onLine
			p.mu.Unlock()
			if onLine != nil {
				onLine()
			}
		}
	}()
	go func() { <-read; cmd.Wait(); logf.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			b, _ := os.ReadFile(p.logPath)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("%s log (tail):\n%s", name, b)
		}
	})
	return p
}

// status returns the child's current tasks (its last line), how many
// lines it printed, and the latest snapshot of every task it ever had.
func (p *appProc) status() (cur []TaskMetrics, lines int, all map[string]TaskMetrics) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.cur), p.lines, maps.Clone(p.tasks)
}

// freeze keeps the current status for checks after the stop (frozen).
func (p *appProc) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozenCur, p.frozenAll, p.frozenRestores = slices.Clone(p.cur), maps.Clone(p.tasks), maps.Clone(p.restores)
}

// forget clears the child's task history (status's all).
func (p *appProc) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.tasks)
	clear(p.restores)
}

// frozen returns what status returned at freeze.
func (p *appProc) frozen() (cur []TaskMetrics, all map[string]TaskMetrics) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozenCur, p.frozenAll
}

// busy reports whether the child's last line shows a task for which
// match is true processing: with a backlog, or with records processed
// since the line before.
func (p *appProc) busy(match func(task string) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.cur, func(m TaskMetrics) bool { return match(m.Task) && (m.Lag > 0 || p.grew[m.Task]) })
}

func (p *appProc) owns() []string {
	cur, _, _ := p.status()
	ids := make([]string, 0, len(cur))
	for _, m := range cur {
		ids = append(ids, m.Task)
	}
	slices.Sort(ids)
	return ids
}

func (p *appProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill is kill -9.
func (p *appProc) kill() {
	if p.exited() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks the child to stop cleanly (SIGTERM) and checks it exited 0.
func (p *appProc) stop(t *testing.T) {
	t.Helper()
	if p.exited() {
		t.Fatalf("%s exited early: %v", p.name, p.cmd.ProcessState)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not stop within 60s of SIGTERM", p.name)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%s exited with %d after SIGTERM", p.name, code)
	}
}

// killRun is one crash scenario: start instances, feed the first part of
// the input with backpressure, SIGKILL one instance mid-stream, feed the
// second part, add a new instance once the survivors have taken over,
// feed the rest, wait until everything is committed, stop cleanly.
type killRun struct {
	t         *testing.T
	b         killBroker
	adm       *kadm.Client
	cc        killChildConfig
	input     string
	internal  []string // internal input topics (repartition) to wait on
	storeTask func(task string) bool
	recs      []*kgo.Record
	instances int // at the start
	// steady: kill only once the victim has committed input of phase 2
	// (a crash at a random point of its commit cycle); otherwise at the
	// first sign it processes phase 2 (before its first commit of it, so
	// it always leaves uncommitted, already written records behind).
	steady bool

	procs    []*appProc
	victim   *appProc
	added    *appProc
	survive  []*appProc
	vicTasks []string
	// vicCommitted: the victim's last committed input offsets (read after
	// the kill while the group still had it as a member).
	vicCommitted map[int32]int64
	killedAt     int64 // records produced when the victim was killed
	// survCheckpoints: the tasks of which each survivor held a clean
	// checkpoint at the kill (it owned them before the victim did).
	survCheckpoints map[*appProc]map[string]bool
	// afterTakeover, if set, runs once the survivors have caught up with
	// the second part of the input, before the new instance joins.
	afterTakeover func()
	// zombie: the victim is stopped (SIGSTOP) instead of killed, and
	// continued (SIGCONT) once the survivors have taken over its tasks:
	// a zombie with an open transaction, which must be fenced; it then
	// rejoins the group and stays until the end.
	zombie bool
}

func (r *killRun) committed(ctx context.Context, topic string) (map[int32]int64, error) {
	com, err := r.adm.FetchOffsets(ctx, r.cc.AppID)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	com.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			out[o.Partition] = o.At
		}
	})
	return out, nil
}

func (r *killRun) ends(ctx context.Context, topic string) (map[int32]int64, error) {
	ends, err := r.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// caughtUp: the group has committed the end of the input and internal
// topics.
func (r *killRun) caughtUp(ctx context.Context) error {
	for i, topic := range append([]string{r.input}, r.internal...) {
		var err error
		if r.cc.ExactlyOnce {
			err = groupCaughtUpTxn(ctx, r.adm, r.cc.Broker, r.cc.AppID, topic, i > 0)
		} else {
			err = groupCaughtUp(ctx, r.adm, r.cc.AppID, topic)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ownership checks that the live children together own every task
// exactly once (as of their last status lines) and returns task → owner.
func (r *killRun) ownership(live []*appProc, want int) (map[string]*appProc, error) {
	own := map[string]*appProc{}
	for _, p := range live {
		for _, id := range p.owns() {
			if o := own[id]; o != nil {
				return nil, fmt.Errorf("task %s owned by %s and %s", id, o.name, p.name)
			}
			own[id] = p
		}
	}
	if len(own) != want {
		return nil, fmt.Errorf("%d tasks owned, want %d", len(own), want)
	}
	return own, nil
}

func (r *killRun) run() {
	t, ctx := r.t, context.Background()
	tops, err := r.adm.ListTopics(ctx, r.input)
	if err != nil {
		t.Fatal(err)
	}
	parts := int32(len(tops[r.input].Partitions))
	nTasks := int(parts) * (1 + len(r.internal))
	for i := range r.instances {
		r.procs = append(r.procs, startAppProc(t, fmt.Sprintf("instance-%d", i), r.cc))
	}
	n := len(r.recs)
	p2 := n * 7 / 10

	// Phase 1: a fifth of the input, until every instance owns tasks and
	// the group has committed all of it (so every task, the victim's
	// included, has committed state in its changelogs).
	prod := r.b.Client(partition.Option(), kgo.MaxBufferedRecords(100_000), kgo.ProducerBatchMaxBytes(1<<20))
	p1 := n / 5
	if err := produceErr(ctx, prod, r.recs[:p1]); err != nil {
		t.Fatal(err)
	}
	testbroker.CheckFor(t, 90*time.Second, func() error {
		for _, p := range r.procs {
			if p.exited() {
				return fmt.Errorf("%s exited: %v", p.name, p.cmd.ProcessState)
			}
			if len(p.owns()) == 0 {
				return fmt.Errorf("%s owns no task yet", p.name)
			}
		}
		if _, err := r.ownership(r.procs, nTasks); err != nil {
			return err
		}
		return r.caughtUp(ctx)
	})

	end1, err := r.ends(ctx, r.input)
	if err != nil {
		t.Fatal(err)
	}

	// Phase 2: the next half of the input, in the background, at most a
	// tenth of the input ahead of the group's commits until the kill. The
	// kill comes at the first status line, printed after phase 2 began,
	// in which an instance shows it is processing an input task (a
	// backlog, or records processed since its line before; with steady,
	// only once it has committed phase 2 input on each of its input
	// tasks): it is in the middle of its work, not idle after a commit,
	// and the producer is still feeding.
	//
	// Every line is judged as it comes in (appProc.onLine), and the kill
	// is sent from there. An instance processes in bursts, one per poll,
	// between its commits; a burst shows in the one line printed after
	// it, and the next line, 50 ms later, shows none. A poll of the
	// latest line every 100 ms sees each burst's line by chance only: on
	// a fast machine phase 2 takes a handful of bursts, and polls have
	// missed them all (the producer finished, no instance was ever seen
	// processing).
	var produced atomic.Int64
	var killed atomic.Bool
	var prodErr error // set before prodDone closes
	prodDone := make(chan struct{})
	pctx, pcancel := context.WithCancel(ctx)
	defer func() { pcancel(); <-prodDone }()
	lines0 := map[*appProc]int{}
	for _, p := range r.procs {
		_, lines0[p], _ = p.status()
	}
	go func() {
		defer close(prodDone)
		var mu sync.Mutex
		var first error
		acked := func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}
		window := int64(n / 10)
		for lo := p1; lo < p2; lo += 5_000 {
			// Until the kill, stay within window records of the
			// group's commits, so input is still flowing at the kill.
			for !killed.Load() {
				com, err := r.committed(pctx, r.input)
				if err != nil {
					prodErr = err
					return
				}
				var sum int64
				for _, c := range com {
					sum += c
				}
				if int64(lo)-sum <= window {
					break
				}
				select {
				case <-pctx.Done():
					prodErr = pctx.Err()
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
			for _, rec := range r.recs[lo:min(lo+5_000, p2)] {
				prod.Produce(pctx, rec, acked)
			}
			produced.Store(int64(min(lo+5_000, p2)))
		}
		err := prod.Flush(pctx)
		mu.Lock()
		defer mu.Unlock()
		prodErr = cmp.Or(err, first)
	}()
	isInput := func(id string) bool { return strings.HasPrefix(id, r.input+"-") }
	// armed: the instances that may be killed. With steady, those that
	// have committed phase 2 input on each of their input tasks (the poll
	// below reads the commits; once armed, an instance stays armed);
	// otherwise all.
	armed := map[*appProc]*atomic.Bool{}
	for _, p := range r.procs {
		armed[p] = new(atomic.Bool)
		armed[p].Store(!r.steady)
	}
	// The kill, done by the reader goroutine of the victim's first line
	// showing it processing once armed; victimDone closes when it and
	// what the line showed are recorded.
	var victimSet atomic.Bool
	var vcur []TaskMetrics
	victimDone := make(chan struct{})
	for _, p := range r.procs {
		p.setOnLine(func() {
			if _, lines, _ := p.status(); lines <= lines0[p]+1 || !armed[p].Load() || !p.busy(isInput) {
				return
			}
			if !victimSet.CompareAndSwap(false, true) {
				return
			}
			if r.zombie {
				p.cmd.Process.Signal(syscall.SIGSTOP)
			} else {
				// Not p.kill: it waits for the reader, which is here.
				p.cmd.Process.Signal(syscall.SIGKILL)
			}
			r.killedAt = produced.Load()
			killed.Store(true)
			r.victim = p
			vcur, _, _ = p.status()
			r.vicTasks = p.owns()
			close(victimDone)
		})
	}
	testbroker.CheckFor(t, 60*time.Second, func() error {
		select {
		case <-victimDone:
			return nil
		default:
		}
		if r.steady {
			com, err := r.committed(ctx, r.input)
			if err != nil {
				return err
			}
		procs:
			for _, p := range r.procs {
				// It committed phase 2 input on every input task.
				for _, id := range p.owns() {
					if pid, ok := strings.CutPrefix(id, r.input+"-"); ok {
						n, _ := strconv.Atoi(pid)
						if com[int32(n)] <= end1[int32(n)] {
							continue procs
						}
					}
				}
				armed[p].Store(true)
			}
		}
		select {
		case <-prodDone:
			return fmt.Errorf("the producer finished (error: %v) and no status line showed an instance processing", prodErr)
		default:
		}
		return errors.New("no status line has shown an instance processing an input task yet")
	})
	for _, p := range r.procs {
		p.setOnLine(nil)
		if p != r.victim {
			r.survive = append(r.survive, p)
		}
	}
	if !r.zombie {
		r.victim.kill() // waits until it is gone
	}
	r.survCheckpoints = map[*appProc]map[string]bool{}
	for _, p := range r.survive {
		p.forget() // from here on, their task history is what followed the kill
		r.survCheckpoints[p] = p.checkpointed()
	}
	// The victim's last commits: read now, while the group still has it
	// as a member (its session lasts 6s), so no other instance can have
	// committed its partitions since.
	if r.vicCommitted, err = r.committed(ctx, r.input); err != nil {
		t.Fatal(err)
	}
	dg, err := r.adm.DescribeGroups(ctx, r.cc.AppID)
	if err != nil {
		t.Fatal(err)
	}
	if m := len(dg[r.cc.AppID].Members); m != r.instances {
		t.Fatalf("group has %d members right after the kill, want %d (the victim's session should last 6s)", m, r.instances)
	}
	var vlag int64
	for _, m := range vcur {
		vlag += m.Lag
	}
	how := "SIGKILLed"
	if r.zombie {
		how = "SIGSTOPped"
	}
	t.Logf(how+" %s owning %v with %d records produced of %d (lag of its tasks at its last status: %d); input offsets committed at the kill %v, at the end of phase 1 %v",
		r.victim.name, r.vicTasks, r.killedAt, p2, vlag, r.vicCommitted, end1)
	if r.killedAt >= int64(p2) {
		t.Fatalf("the producer had finished (%d records) before the kill: input was not flowing", r.killedAt)
	}

	// The survivors take over the victim's tasks (after its session
	// expires) and catch up with the second part of the input.
	testbroker.CheckFor(t, 90*time.Second, func() error {
		select {
		case <-prodDone:
			if prodErr != nil {
				t.Fatalf("producing: %v", prodErr)
			}
		default:
			return fmt.Errorf("producer at %d of %d", produced.Load(), p2)
		}
		if _, err := r.ownership(r.survive, nTasks); err != nil {
			return fmt.Errorf("survivors: %w", err)
		}
		return r.caughtUp(ctx)
	})
	if r.afterTakeover != nil {
		r.afterTakeover()
	}
	if r.zombie {
		// Continued, the zombie finds its transaction fenced and its
		// membership gone: it either stops with the error (fail-stop)
		// or aborts, rejoins and works on.
		r.victim.cmd.Process.Signal(syscall.SIGCONT)
		t.Logf("SIGCONT %s: a zombie whose tasks moved on", r.victim.name)
		testbroker.CheckFor(t, 90*time.Second, func() error {
			if r.victim.exited() {
				return nil
			}
			dg, err := r.adm.DescribeGroups(ctx, r.cc.AppID)
			if err != nil {
				return err
			}
			if g := dg[r.cc.AppID]; len(g.Members) != len(r.survive)+1 || g.State != "Stable" {
				return fmt.Errorf("%s is alive and the group has %d members (%s), want %d", r.victim.name, len(g.Members), g.State, len(r.survive)+1)
			}
			return nil
		})
		if r.victim.exited() {
			b, _ := os.ReadFile(r.victim.logPath)
			_, why, _ := strings.Cut(string(b), "\nrun: ")
			t.Logf("the zombie %s stopped (%v): %s", r.victim.name, r.victim.cmd.ProcessState, strings.TrimSpace(why))
		} else {
			t.Logf("the zombie %s rejoined the group", r.victim.name)
			r.survive = append(r.survive, r.victim)
		}
	}

	// A new instance joins; once the assignment settles (every task owned
	// once, the new instance's restores done) the rest of the input goes
	// in, partly to its tasks.
	r.added = startAppProc(t, fmt.Sprintf("instance-%d", r.instances), r.cc)
	live := append(slices.Clone(r.survive), r.added)
	testbroker.CheckFor(t, 90*time.Second, func() error {
		if _, err := r.ownership(live, nTasks); err != nil {
			return err
		}
		cur, _, _ := r.added.status()
		restoring := 0
		for _, m := range cur {
			if r.storeTask(m.Task) {
				restoring++
				if m.RestoreTotal == 0 || m.Restored < m.RestoreTotal {
					return fmt.Errorf("%s: task %s restored %d of %d changelog records", r.added.name, m.Task, m.Restored, m.RestoreTotal)
				}
			}
		}
		if restoring == 0 {
			return fmt.Errorf("%s owns no task with a store yet (owns %v)", r.added.name, r.added.owns())
		}
		return nil
	})
	if err := produceErr(ctx, prod, r.recs[p2:]); err != nil {
		t.Fatal(err)
	}
	testbroker.CheckFor(t, 90*time.Second, func() error {
		for _, p := range live {
			if p.exited() {
				return fmt.Errorf("%s exited: %v", p.name, p.cmd.ProcessState)
			}
		}
		if err := r.caughtUp(ctx); err != nil {
			return err
		}
		cur, _, _ := r.added.status()
		for _, m := range cur {
			if strings.HasPrefix(m.Task, r.input+"-") && m.Processed == 0 {
				return fmt.Errorf("%s: task %s has processed nothing yet", r.added.name, m.Task)
			}
		}
		return nil
	})
	// Stopping one instance moves its tasks to the others: what the
	// checks look at is the state before the stops.
	for _, p := range live {
		p.freeze()
	}
	for _, p := range live {
		p.stop(t)
	}
}

// countInput returns n records of topic, each keyed by one of keys keys
// (drawn with the PCG seeded seed, seed+1), and the count of each key:
// the input of the count topology.
func countInput(topic string, n, keys int, seed uint64) ([]*kgo.Record, map[string]int64) {
	want := make(map[string]int64, keys)
	recs := make([]*kgo.Record, n)
	rnd := rand.New(rand.NewPCG(seed, seed+1))
	for i := range recs {
		k := "key-" + strconv.Itoa(rnd.IntN(keys))
		want[k]++
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte("v")}
	}
	return recs, want
}

// groupByInput is countInput for the groupby topology: each record is
// keyed by its sequence number, its value "<counted key>/<sequence>"
// (seqOf reads the sequence back).
func groupByInput(topic string, n, keys int, seed uint64) ([]*kgo.Record, map[string]int64) {
	want := make(map[string]int64, keys)
	recs := make([]*kgo.Record, n)
	rnd := rand.New(rand.NewPCG(seed, seed+1))
	for i := range recs {
		k := "key-" + strconv.Itoa(rnd.IntN(keys))
		want[k]++
		seq := strconv.Itoa(i)
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(seq), Value: []byte(k + "/" + seq)}
	}
	return recs, want
}

// seqOf returns the input sequence number a groupby record carries in
// its value, if it is one of n.
func seqOf(value []byte, n int) (int, bool) {
	_, seq, ok := strings.Cut(string(value), "/")
	i, err := strconv.Atoi(seq)
	return i, ok && err == nil && i >= 0 && i < n
}

// phase3Counts returns, per input partition, the records of the last
// 30% of recs (produced after the added instance joined).
func phase3Counts(recs []*kgo.Record) map[int32]int64 {
	out := map[int32]int64{}
	for _, rec := range recs[len(recs)*7/10:] {
		out[rec.Partition]++
	}
	return out
}

// produceErr produces recs and waits for every acknowledgement.
func produceErr(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) error {
	var mu sync.Mutex
	var first error
	for _, r := range recs {
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	return first
}

// checkRestores checks the changelog restores the parent can observe:
// each of the victim's tasks with a store, at its new owner, read its
// changelog (to its end: from an empty directory, or from the new owner's
// own checkpoint of the task when it had owned it before the victim, in
// which case there may be nothing past the checkpoint to read: the
// victim was killed before it flushed anything to that changelog);
// each of the added instance's tasks read its changelog,
// processed records, and processed only the input after the position its
// previous owner committed (so its state before that came from the
// changelog, not from recomputing the partition).
func (r *killRun) checkRestores(phase3 map[int32]int64) {
	t := r.t
	taken := 0
	for _, id := range r.vicTasks {
		if !r.storeTask(id) {
			continue
		}
		var by *appProc
		var m TaskMetrics
		for _, p := range r.survive {
			p.mu.Lock()
			mm, ok := p.frozenRestores[id]
			p.mu.Unlock()
			if ok && mm.Restored > 0 && (by == nil || mm.Restored > m.Restored) {
				by, m = p, mm
			}
		}
		if by == nil {
			// A survivor that resumed the task from its own checkpoint,
			// with no changelog record past it, restored 0 records.
			for _, p := range r.survive {
				_, all := p.frozen()
				if mm, ok := all[id]; ok && r.survCheckpoints[p][id] && mm.Restored == mm.RestoreTotal {
					by, m = p, mm
				}
			}
			if by == nil {
				t.Errorf("the victim's task %s: no survivor reports a changelog restore for it (checkpoints at the kill: %v)", id, r.checkpointNames())
				continue
			}
			taken++
			t.Logf("the victim's task %s: %s resumed it from the checkpoint it wrote when the task moved to %s; no changelog record past it (the victim flushed none)",
				id, by.name, r.victim.name)
			continue
		}
		taken++
		t.Logf("the victim's task %s: %s restored %d changelog records, skipped %d replayed input records already in the restored state",
			id, by.name, m.Restored, m.SkippedReplayed)
	}
	if taken == 0 && slices.ContainsFunc(r.vicTasks, r.storeTask) {
		t.Error("no task of the victim was restored by a survivor")
	}
	// The added instance's tasks at its last status before the stops (a
	// task it was given and lost again in a rebalance is only logged).
	cur, all := r.added.frozen()
	restored := 0
	for _, m := range cur {
		id := m.Task
		if !r.storeTask(id) {
			continue
		}
		restored++
		if m.Restored == 0 || m.Restored < m.RestoreTotal {
			t.Errorf("%s: task %s restored %d of %d changelog records", r.added.name, id, m.Restored, m.RestoreTotal)
		}
		if pid, ok := strings.CutPrefix(id, r.input+"-"); ok {
			p, _ := strconv.Atoi(pid)
			if m.Processed == 0 || m.Processed > phase3[int32(p)] {
				t.Errorf("%s: task %s processed %d input records; want 1..%d (only what was produced after it joined)", r.added.name, id, m.Processed, phase3[int32(p)])
			}
		}
		t.Logf("%s: task %s restored %d changelog records, then processed %d records", r.added.name, id, m.Restored, m.Processed)
	}
	for id, m := range all {
		if !slices.ContainsFunc(cur, func(c TaskMetrics) bool { return c.Task == id }) {
			t.Logf("%s: task %s was moved away again after restoring %d of %d changelog records", r.added.name, id, m.Restored, m.RestoreTotal)
		}
	}
	if restored == 0 {
		t.Errorf("%s ended with no task with a store (owned %v)", r.added.name, cur)
	}
	var life []string
	for _, p := range append(slices.Clone(r.procs), r.added) {
		p.mu.Lock()
		life = append(life, fmt.Sprintf("%s %d", p.name, p.restored))
		p.mu.Unlock()
	}
	t.Logf("changelog records restored over each instance's life (state directories start empty): %s", strings.Join(life, ", "))
}

// checkpointNames describes survCheckpoints for a failure message.
func (r *killRun) checkpointNames() string {
	var parts []string
	for _, p := range r.survive {
		ids := slices.Sorted(maps.Keys(r.survCheckpoints[p]))
		parts = append(parts, fmt.Sprintf("%s %v", p.name, ids))
	}
	return strings.Join(parts, ", ")
}

// TestCountExactAcrossKillAndScaleOut is the acceptance test: a
// per-key count over 1,000,000 records with three instances, each a child
// process; one is killed with SIGKILL mid-stream (while the producer is
// feeding input and the instances are working through a backlog), and
// once the survivors have taken over its tasks a fourth instance joins,
// takes tasks, restores their stores from the changelogs into an empty
// state directory, and counts the last 30% of the input on top.
//
// Duplicates: none in the counts. The input of a count task is replayed
// from its changelog's last marker (which is written, with the entries
// before it, before the offsets are committed), records before the marker
// are skipped, and entries after it are discarded at restore, so every
// input record is counted exactly once whatever the crash point. The
// output topic may carry repeated updates for a key (at-least-once: the
// victim's updates after its last commit are emitted again by the new
// owner), but each is a true running count, so the test checks that no
// update ever exceeds the number produced for its key and that the last
// value of every key equals it.
//
// Restores are checked from the children's reported task metrics: every
// task of the victim was restored by a survivor from its changelog, and
// the added instance restored its tasks and then processed only records
// produced after it joined, so their exact counts prove the earlier state
// came from the changelog.
func TestCountExactAcrossKillAndScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 records through a broker and four child processes")
	}
	const (
		n     = 1_000_000
		keys  = 10_000
		parts = 6
	)
	start := time.Now()
	r, _, want := countKillRun(t, atLeastOnce, "wc", n, keys, parts, 5)
	r.run()

	r.checkRestores(phase3Counts(r.recs))

	var updates int
	maxSeen := map[string]int64{}
	got := map[string]int64{}
	for _, rec := range r.b.ReadAll("counts") {
		v, err := Int64().Decode(rec.Value)
		if err != nil {
			t.Fatalf("counts: %v", err)
		}
		k := string(rec.Key)
		got[k] = v
		maxSeen[k] = max(maxSeen[k], v)
		updates++
	}
	if len(got) != len(want) {
		t.Fatalf("counts for %d keys, want %d", len(got), len(want))
	}
	var wrong int
	for k, v := range want {
		if got[k] != v || maxSeen[k] > v {
			if wrong < 5 {
				t.Errorf("key %s: last count %d, highest %d, want %d", k, got[k], maxSeen[k], v)
			}
			wrong++
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d keys have wrong counts", wrong, len(want))
	}
	t.Logf("exact counts for %d keys from %d records (%d count updates in the output) in %s", len(got), n, updates, time.Since(start).Round(time.Millisecond))
}

// TestGroupByCountAcrossKill is the repartitioned variant: the key is
// taken from the value (GroupBy), so each record goes through the
// repartition topic <app>-gcounts-repartition before the count. Two
// instances, one SIGKILLed mid-stream, a third added later.
//
// Duplicates: none in the counts. The repartition topic itself is
// at-least-once: records the victim's upstream (gevents) tasks processed
// after their last commit and whose repartition writes reached the broker
// are written again by the new owner, which replays from the committed
// offset. Each copy carries the same source position (input partition,
// offset, sequence) as its original, and the count task skips positions
// it has applied (dedupe.go). Each input record carries its sequence
// number in its value, so the test reads the repartition topic and checks:
//   - every input record is there at least once and at most twice, and
//     some twice (the kill left uncommitted, written records behind);
//   - every duplicated record comes from an input partition the victim
//     owned when it was killed, at or after the offset it had last
//     committed there;
//   - once the survivor has caught up, its count tasks report as many
//     skipped duplicates as the repartition topic holds copies (every
//     copy was seen and skipped, none twice);
//   - each key's final count equals the records produced for it: exact.
//
// Whether the kill leaves uncommitted repartition writes behind depends
// on when it lands (on a fast machine the victim may have committed all
// it processed): a run without any proves nothing about them, though its
// other checks hold, so the scenario is run again, up to five times. Alone
// the first run proves it (4 of 4); in a full quiet suite beside two
// other packages, three runs in a row once did not (2026-12-03).
func TestGroupByCountAcrossKill(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 records through a broker and three child processes")
	}
	const attempts = 5
	for i := 1; i <= attempts; i++ {
		var proved bool
		if !t.Run(fmt.Sprintf("attempt%d", i), func(t *testing.T) { proved = groupByCountAcrossKill(t) }) {
			return
		}
		if proved {
			return
		}
	}
	t.Fatalf("in %d runs the kill never left uncommitted repartition writes behind: the skipping of copies was not tested", attempts)
}

// groupByCountAcrossKill runs TestGroupByCountAcrossKill's scenario once;
// proved reports whether the kill left copies in the repartition topic.
func groupByCountAcrossKill(t *testing.T) (proved bool) {
	const (
		n     = 200_000
		keys  = 2_000
		parts = 4
	)
	start := time.Now()
	r, _, want, repart := groupByKillRun(t, atLeastOnce, n, keys, parts, 7)
	b, recs, isRepart := r.b, r.recs, r.storeTask
	// copies counts each input record's copies in the repartition topic.
	copies := func() []int { return copiesOf(t, b.ReadAll(repart), n, repart) }
	extra := func(copies []int) (e int64) {
		for _, c := range copies {
			e += int64(max(c-1, 0))
		}
		return e
	}
	var takeoverExtra, takeoverSkips int64
	r.afterTakeover = func() {
		// The replays are done (the group committed the end of both
		// topics): every copy is in the repartition topic and was read
		// by a survivor's count task since the kill (their task history
		// starts at the kill; no duplicate exists before it).
		takeoverExtra = extra(copies())
		testbroker.CheckFor(t, 30*time.Second, func() error {
			takeoverSkips = 0
			for _, p := range r.survive {
				_, _, all := p.status()
				for id, m := range all {
					if isRepart(id) {
						takeoverSkips += m.SkippedDuplicates
					}
				}
			}
			if takeoverSkips != takeoverExtra {
				return fmt.Errorf("survivors skipped %d duplicates; the repartition topic holds %d copies", takeoverSkips, takeoverExtra)
			}
			return nil
		})
	}
	r.run()

	r.checkRestores(phase3Counts(recs))

	victimOwned := map[int32]bool{}
	for _, id := range r.vicTasks {
		if pid, ok := strings.CutPrefix(id, "gevents-"); ok {
			var p int32
			fmt.Sscan(pid, &p)
			victimOwned[p] = true
		}
	}
	var ndup int
	var bad int
	for i, c := range copies() {
		rec := recs[i]
		switch {
		case c == 0:
			t.Errorf("input record %d (gevents/%d@%d) is missing from %s", i, rec.Partition, rec.Offset, repart)
			bad++
		case c > 2:
			t.Errorf("input record %d (gevents/%d@%d) is %d times in %s: more than one crash's worth", i, rec.Partition, rec.Offset, c, repart)
			bad++
		case c == 2:
			ndup++
			if !victimOwned[rec.Partition] || rec.Offset < r.vicCommitted[rec.Partition] {
				t.Errorf("input record %d (gevents/%d@%d) is duplicated in %s, but the victim owned %v with commits %v",
					i, rec.Partition, rec.Offset, repart, r.vicTasks, r.vicCommitted)
				bad++
			}
		}
		if bad > 10 {
			t.FailNow()
		}
	}
	if ndup == 0 {
		t.Logf("no record is twice in %s: the kill left no uncommitted repartition writes, so this run proves nothing about them", repart)
	}
	if int64(ndup) != takeoverExtra {
		t.Errorf("%s holds %d copies at the end, %d when the survivor had caught up: copies written after the takeover", repart, ndup, takeoverExtra)
	}
	got := readLastValues(t, b, "gcounts")
	if len(got) != len(want) {
		t.Fatalf("counts for %d keys, want %d", len(got), len(want))
	}
	var wrong int
	for k, v := range want {
		if got[k] != v {
			if wrong < 5 {
				t.Errorf("key %s: count %d, want %d", k, got[k], v)
			}
			wrong++
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d keys have wrong counts", wrong, len(want))
	}
	t.Logf("exact counts for %d keys: %d of %d input records were written twice to %s, all from the victim's uncommitted input (partitions %v from offsets %v), and the survivor skipped %d copies; %s",
		len(got), ndup, n, repart, r.vicTasks, r.vicCommitted, takeoverSkips, time.Since(start).Round(time.Millisecond))
	return ndup > 0
}
