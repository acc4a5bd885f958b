package eostest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
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
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testkit"
	"weir/internal/txntest"
	"weir/internal/weirbin"
	"weir/internal/weircluster"
)

// TestStreamsWordCountExactlyOnce runs the Kafka Streams 4.4 word count
// (java/.../WordCount.java, processing.guarantee=exactly_once_v2) while
// lines are produced, kills the application with SIGKILL mid-stream and
// starts it again over the same state directory, and (on weir's
// 3-broker cluster of `weir broker` processes; Apache Kafka here is one
// node) kills a broker with SIGKILL mid-stream and restarts it. The
// output topic read with read_committed must then hold, for every word,
// the counts 1, 2, ... n exactly once each and in order (the record
// cache is off, so every count is forwarded): a repeated or missing
// count is a duplicate or a loss.
func TestStreamsWordCountExactlyOnce(t *testing.T) {
	var cluster *weircluster.Cluster
	eachTarget(t, "streams/wordcount", func(t *testing.T) []string {
		cluster = weircluster.Start(t, weirbin.Build(t), 3, "--config", "default.replication.factor=3", "--config", "min.insync.replicas=2")
		return cluster.Seeds()
	}, func(t *testing.T, target string, seeds []string) {
		var bk *brokerKill
		if target == "weir" {
			id := 1 + rand.IntN(3)
			bk = &brokerKill{
				kill: func() {
					t.Logf("killing broker %d (SIGKILL)", id)
					cluster.Kill(id)
				},
				start: func() { cluster.Start(id) },
			}
		}
		wordCount(t, seeds, bk)
	})
}

// brokerKill kills one broker of the cluster under test and starts it again.
type brokerKill struct{ kill, start func() }

var progress atomic.Int64 // output records seen by the running test's monitor

func waitProgress(t *testing.T, what string) {
	t.Helper()
	from := progress.Load()
	testkit.CheckFor(t, 2*time.Minute, func() error {
		if n := progress.Load(); n < from+200 {
			return fmt.Errorf("%s: %d output records since, want 200", what, n-from)
		}
		return nil
	})
}

func wordCount(t *testing.T, seeds []string, bk *brokerKill) {
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	in, out, app := "wc-in-"+suffix, "wc-out-"+suffix, "wc-"+suffix
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(in), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if t.Failed() {
			logTransactions(t, seeds, app, in, out, app+"-counts-repartition", app+"-counts-changelog")
		}
	})
	createTopics(t, cl, 3, in, out)
	// Streams' group leader fails with MissingSourceTopicException if its
	// broker does not know the input yet: wait until every broker does.
	waitTopicEverywhere(t, cl, in, out)

	// The input: lines of four words from a small vocabulary, counted here.
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima")
	const lines, perBatch = 3000, 10
	want := map[string]int64{}
	var text []string
	rng := rand.New(rand.NewPCG(1, 2))
	for range lines {
		var l []string
		for range 4 {
			w := words[rng.IntN(len(words))]
			want[w]++
			l = append(l, strings.ToUpper(w[:1])+w[1:])
		}
		text = append(text, strings.Join(l, " "))
	}

	// A monitor reads the output (read_committed) to see progress.
	progress.Store(0)
	// Its client log is kept if the test fails.
	monLog, err := os.Create(filepath.Join(t.TempDir(), "monitor.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer monLog.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the output monitor's client log is kept in %s", testkit.Keep("wordcount-failed", monLog.Name()))
		}
	})
	mon, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(out), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithLogger(kgo.BasicLogger(monLog, kgo.LogLevelInfo, nil)))
	if err != nil {
		t.Fatal(err)
	}
	monCtx, monStop := context.WithCancel(ctx)
	var monDone sync.WaitGroup
	monDone.Add(1)
	go func() {
		defer monDone.Done()
		for monCtx.Err() == nil {
			progress.Add(int64(mon.PollFetches(monCtx).NumRecords()))
		}
	}()
	defer func() { monStop(); monDone.Wait(); mon.Close() }()

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	appRun := 0
	startApp := func() *exec.Cmd {
		appRun++
		return startWordCount(t, seeds, app, in, out, state, filepath.Join(dir, fmt.Sprintf("wordcount-%d.log", appRun)))
	}
	appCmd := startApp()
	defer func() { appCmd.Process.Signal(syscall.SIGKILL); appCmd.Wait() }()

	// The producer, paced, sends the lines in four quarters, each only
	// once the test allows it (limit): the application's kill, the
	// broker's kill and the broker's restart each come before the next
	// quarter, so there is always input left to process after them (on
	// a loaded machine the application can otherwise finish the whole
	// input while a broker is down, and nothing is left to show that it
	// goes on after the restart).
	produced := make(chan error, 1)
	var sent, limit atomic.Int64
	limit.Store(lines / 4)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < lines; i += perBatch {
			for {
				select {
				case <-ctx.Done():
					produced <- ctx.Err()
					return
				case <-tick.C:
				}
				if int64(i+perBatch) <= limit.Load() {
					break
				}
			}
			var rs []*kgo.Record
			for _, l := range text[i : i+perBatch] {
				rs = append(rs, kgo.StringRecord(l))
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				produced <- fmt.Errorf("producing line %d: %w", i, err)
				return
			}
			sent.Store(int64(i + perBatch))
		}
		produced <- nil
	}()

	waitProgress(t, "word count running")
	t.Logf("killing the Streams application (SIGKILL) after %d output records, %d of %d lines produced", progress.Load(), sent.Load(), lines)
	appCmd.Process.Signal(syscall.SIGKILL)
	appCmd.Wait()
	appCmd = startApp()
	limit.Store(lines / 2)
	waitProgress(t, "word count restarted")
	if bk != nil {
		t.Logf("killing a broker after %d output records, %d of %d lines produced", progress.Load(), sent.Load(), lines)
		bk.kill()
		limit.Store(3 * lines / 4)
		waitProgress(t, "processing with a broker down")
		bk.start()
		t.Logf("broker restarted after %d output records, %d of %d lines produced", progress.Load(), sent.Load(), lines)
	}
	limit.Store(lines)
	if bk != nil {
		waitProgress(t, "broker restarted")
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	total := int64(lines * 4)
	testkit.CheckFor(t, 3*time.Minute, func() error {
		if n := progress.Load(); n < total {
			return fmt.Errorf("%d of %d counts in the output", n, total)
		}
		return nil
	})

	// Read the output again from the start, read_committed.
	got := map[string][]int64{}
	for _, r := range txntest.ReadCommitted(t, seeds[0], out) {
		if len(r.Value) != 8 {
			t.Fatalf("output record %s has a %d-byte value, want a long", r.Key, len(r.Value))
		}
		var v int64
		for _, b := range r.Value {
			v = v<<8 | int64(b)
		}
		got[string(r.Key)] = append(got[string(r.Key)], v)
	}
	for _, w := range words {
		seq := got[w]
		for i, v := range seq {
			if v != int64(i+1) {
				t.Errorf("counts of %q read_committed: %d at position %d (%v...), want 1..%d once each",
					w, v, i+1, seq[max(0, i-3):min(len(seq), i+4)], want[w])
				break
			}
		}
		if int64(len(seq)) != want[w] {
			t.Errorf("counts of %q read_committed: %d counts, want %d", w, len(seq), want[w])
		}
	}
	if len(got) != len(words) {
		t.Errorf("output words %d, want %d", len(got), len(words))
	}
}

// startWordCount starts the Streams application and waits until it is
// RUNNING.
func startWordCount(t *testing.T, seeds []string, app, in, out, state, logPath string) *exec.Cmd {
	t.Helper()
	cp, err := Classpath()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	java, _ := Java(cp, "256m", false) // killed: it cannot write the archive
	cmd := exec.Command("java", append(java, "weir.eostest.WordCount", strings.Join(seeds, ","), app, in, out, state)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("last lines of %s (whole log in %s):\n%s", filepath.Base(logPath), testkit.Keep("wordcount-failed", logPath), testkit.LastLines(string(b), 60))
		}
	})
	testkit.CheckFor(t, 2*time.Minute, func() error {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), "STATE ERROR") {
			return testkit.Stop(fmt.Errorf("word count failed:\n%s", testkit.LastLines(string(b), 40)))
		}
		if !strings.Contains(string(b), "STATE RUNNING") {
			return fmt.Errorf("word count not RUNNING yet")
		}
		return nil
	})
	return cmd
}

// logTransactions logs, for a failed test, what a stalled exactly-once
// application leaves to look at: the end and last stable offsets of its
// topics, its group's lag, and the state of every transaction the
// coordinators know (a transaction that never ends holds the last stable
// offset, and so every read_committed reader, where it began).
func logTransactions(t *testing.T, seeds []string, app string, topics ...string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Log(err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topics...)
	lso, err2 := adm.ListCommittedOffsets(ctx, topics...)
	var offs []string
	ends.Each(func(e kadm.ListedOffset) {
		l, _ := lso.Lookup(e.Topic, e.Partition)
		offs = append(offs, fmt.Sprintf("%s/%d end %d stable %d", e.Topic, e.Partition, e.Offset, l.Offset))
	})
	slices.Sort(offs)
	t.Logf("offsets (%v, %v): %s", err, err2, strings.Join(offs, ", "))
	if lags, err := adm.Lag(ctx, app); err == nil {
		for _, l := range lags {
			t.Logf("group %s: state %s, total lag %d, lag %v", l.Group, l.State, l.Lag.Total(), l.Lag)
		}
	} else {
		t.Logf("group %s: %v", app, err)
	}
	txns, err := adm.DescribeTransactions(ctx)
	if err != nil {
		t.Logf("transactions: %v", err)
	}
	for _, d := range txns.Sorted() {
		t.Logf("transaction %s: coordinator %d, state %s, producer %d/%d, started %v, timeout %d ms, partitions %v, err %v",
			d.TxnID, d.Coordinator, d.State, d.ProducerID, d.ProducerEpoch, time.UnixMilli(d.StartTimestamp).Format("15:04:05.000"), d.TimeoutMillis, d.Topics, d.Err)
	}
}

// waitTopicEverywhere waits until every broker answers Metadata for the
// topics with a leader for each partition.
func waitTopicEverywhere(t *testing.T, cl *kgo.Client, topics ...string) {
	t.Helper()
	testkit.CheckFor(t, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req := kmsg.NewPtrMetadataRequest()
		for _, tp := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(tp)
			req.Topics = append(req.Topics, rt)
		}
		first, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, b := range first.Brokers {
			resp, err := req.RequestWith(ctx, cl.Broker(int(b.NodeID)))
			if err != nil {
				return fmt.Errorf("broker %d: %w", b.NodeID, err)
			}
			for _, tp := range resp.Topics {
				if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
					return fmt.Errorf("broker %d: topic %s: %w", b.NodeID, *tp.Topic, err)
				}
				if len(tp.Partitions) == 0 {
					return fmt.Errorf("broker %d: topic %s has no partitions yet", b.NodeID, *tp.Topic)
				}
				for _, p := range tp.Partitions {
					if p.Leader < 0 || p.ErrorCode != 0 {
						return fmt.Errorf("broker %d: %s-%d has no leader yet", b.NodeID, *tp.Topic, p.Partition)
					}
				}
			}
		}
		return nil
	})
}
