package connectors

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/internal/txntest"
)

// eosChildEnv holds the JSON eosChildConfig of an exactly-once counter
// source run in a re-executed test binary (see TestMain).
const eosChildEnv = "WEIR_CONNECTORS_EOS_CHILD"

type eosChildConfig struct {
	Broker, Topic string
	Parts, Limit  int
}

// eosChildMain runs an exactly-once counter source until killed.
func eosChildMain() {
	var cc eosChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(eosChildEnv)), &cc); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	lg, _ := zap.NewDevelopment()
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{cc.Broker}}, Logger: lg}
	src := &counterSource{parts: cc.Parts, limit: cc.Limit, pace: time.Millisecond}
	if err := rt.RunSource(ctx, "counter", src, SourceOptions{Topic: cc.Topic, ExactlyOnce: true, CommitInterval: 300 * time.Millisecond}); err != nil {
		fmt.Fprintln(os.Stderr, "source:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// committedValues returns the record values of topic per key, in offset
// order, as a read_committed consumer sees them.
// committedValues groups recs' values by key (source partition).
// Callers read with txntest.ReadCommittedSettled once the source has
// stopped: a commit's markers are written after EndTxn answers (Apache
// Kafka writes them asynchronously), so the last stable offset may not
// cover the last commit yet.
func committedValues(recs []*kgo.Record) map[string][]string {
	out := map[string][]string{}
	for _, r := range recs {
		out[string(r.Key)] = append(out[string(r.Key)], string(r.Value))
	}
	return out
}

func createTopic(tb testing.TB, addr, topic string, partitions int32) {
	tb.Helper()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}})
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		tb.Fatalf("creating %s: %v", topic, err)
	}
}

// An exactly-once source stores positions and records in transactions:
// a restart resumes after the committed positions, a refused record is
// dead-lettered inside the transaction, and a read_committed consumer
// sees every record once, in order.
func TestExactlyOnceSourceRestores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			topic, offsets := "eos-dst-"+t.Name()[strings.LastIndexByte(t.Name(), '/')+1:], "eos-offsets-"+tb.Name
			createTopic(t, tb.Addr, topic, 3)
			rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{tb.Addr}}, Logger: zap.NewNop(), OffsetsTopic: offsets}
			opts := SourceOptions{Topic: topic, CommitInterval: 50 * time.Millisecond, ExactlyOnce: true}
			src := &counterSource{parts: 3, limit: 200, big: map[int]int{17: 2 << 20}}
			runSource(t, rt, src, opts)
			if len(src.restored) != 0 {
				t.Fatalf("first run restored %v", src.restored)
			}
			src2 := &counterSource{parts: 3, limit: 300}
			runSource(t, rt, src2, opts)
			for i := 0; i < 3; i++ {
				if p := src2.restored[fmt.Sprintf("sp%d", i)]; len(p) != 8 || binary.BigEndian.Uint64(p) != 199 {
					t.Fatalf("restored sp%d = %x, want 199", i, p)
				}
			}
			got := committedValues(txntest.ReadCommittedSettled(t, tb.Addr, topic))
			// sp0's record 17 is too large: dead-lettered, in the transaction.
			if len(got["sp0"]) != 299 || got["sp0"][17] != "sp0-18" {
				t.Fatalf("sp0: %d records (want 299 without record 17)", len(got["sp0"]))
			}
			got["sp0"] = append(append(got["sp0"][:17:17], "sp0-17"), got["sp0"][17:]...)
			checkExactlyOnce(t, got, 3, 300)
			dl := txntest.ReadCommitted(t, tb.Addr, deadletter.Topic("counter"))
			if len(dl) != 1 || !strings.HasPrefix(string(dl[0].Value), "sp0-17") {
				t.Fatalf("%d dead letters, want sp0-17", len(dl))
			}
			if n := len(txntest.ReadCommitted(t, tb.Addr, offsets)); n == 0 {
				t.Fatal("no committed position in the offsets topic")
			}
		})
	}
}

// A zombie of the task (a producer with the task's transactional id)
// left records and positions in an open transaction: the task's start
// fences it and aborts the transaction, restores the committed positions
// (not the zombie's), and the zombie cannot commit afterwards.
func TestExactlyOnceSourceFencesZombie(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			topic, offsets := "zombie-dst", "zombie-offsets"
			createTopic(t, tb.Addr, topic, 2)
			rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{tb.Addr}}, OffsetsTopic: offsets}
			opts := SourceOptions{Topic: topic, CommitInterval: 50 * time.Millisecond, ExactlyOnce: true}
			runSource(t, rt, &counterSource{parts: 2, limit: 50}, opts)

			zombie, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{tb.Addr}}, kgo.TransactionalID("weir-source-counter"))
			if err != nil {
				t.Fatal(err)
			}
			defer zombie.Close()
			if err := zombie.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			var recs []*kgo.Record
			for n := 50; n < 80; n++ {
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("sp0"), Value: []byte(fmt.Sprintf("sp0-%d", n)),
					Headers: []kgo.RecordHeader{{Key: SourceHeader, Value: appendSourceHeader(nil, "counter", "sp0", uint64(n+1), binary.BigEndian.AppendUint64(nil, uint64(n)))}}})
			}
			v, _ := json.Marshal(storedPos{Seq: 80, Pos: binary.BigEndian.AppendUint64(nil, 79)})
			pos := &kgo.Record{Topic: offsets, Key: positionKey("counter", "sp0"), Value: v}
			ctx := context.Background()
			if err := zombie.ProduceSync(ctx, append(recs, pos)...).FirstErr(); err != nil {
				t.Fatal(err)
			}

			src2 := &counterSource{parts: 2, limit: 100}
			runSource(t, rt, src2, opts)
			if p := src2.restored["sp0"]; binary.BigEndian.Uint64(p) != 49 {
				t.Fatalf("restored sp0 = %d, want 49 (the zombie's 79 was never committed)", binary.BigEndian.Uint64(p))
			}
			checkExactlyOnce(t, committedValues(txntest.ReadCommittedSettled(t, tb.Addr, topic)), 2, 100)
			err = zombie.EndTransaction(ctx, kgo.TryCommit)
			if err == nil {
				t.Fatal("the fenced zombie committed its transaction")
			}
			t.Logf("zombie's commit: %v", err)
			for _, want := range []error{kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidTxnState, kerr.TransactionAbortable} {
				if strings.Contains(err.Error(), want.Error()) {
					return
				}
			}
			t.Fatalf("zombie's commit failed with %v, want a fencing error", err)
		})
	}
}

// An exactly-once counter source in a child process is killed -9 twice
// mid-stream: read_committed, the topic holds every record exactly once,
// in order, while the log also holds the aborted records of the kills.
func TestExactlyOnceSourceKillDashNine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka and kills child processes")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			const parts, limit = 4, 40_000
			topic := "kill-dst"
			createTopic(t, tb.Addr, topic, 3)
			logDir := t.TempDir()
			start := func(n int) *exec.Cmd {
				cfg, _ := json.Marshal(eosChildConfig{Broker: tb.Addr, Topic: topic, Parts: parts, Limit: limit})
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), eosChildEnv+"="+string(cfg))
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
			cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{tb.Addr}})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			written := func() int64 { // every record in the log, aborted ones too
				ends, err := adm.ListEndOffsets(context.Background(), topic)
				if err != nil {
					return -1
				}
				var n int64
				ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
				return n
			}
			child := start(0)
			for kill := 1; kill <= 2; kill++ {
				target := int64(kill * parts * limit / 3)
				testbroker.CheckFor(t, 120*time.Second, func() error {
					if n := written(); n < target {
						return fmt.Errorf("%d records in the log, waiting for %d before kill -9", n, target)
					}
					return nil
				})
				child.Process.Signal(syscall.SIGKILL)
				child.Wait()
				t.Logf("killed the source with -9 at %d records in the log", written())
				child = start(kill)
			}
			var got map[string][]string
			testbroker.CheckFor(t, 180*time.Second, func() error {
				got = committedValues(txntest.ReadCommitted(t, tb.Addr, topic))
				for i := 0; i < parts; i++ {
					if n := len(got[fmt.Sprintf("sp%d", i)]); n < limit {
						return fmt.Errorf("sp%d: %d of %d records committed", i, n, limit)
					}
				}
				return nil
			})
			child.Process.Signal(syscall.SIGTERM)
			if err := child.Wait(); err != nil {
				t.Errorf("child exit: %v (logs in %s)", err, logDir)
			}
			got = committedValues(txntest.ReadCommittedSettled(t, tb.Addr, topic))
			checkExactlyOnce(t, got, parts, limit)
			// The log holds more than the committed records plus markers:
			// the kills left transactions that were aborted.
			t.Logf("%d records in the log (data, aborted data and markers) for %d committed", written(), parts*limit)
		})
	}
}

// An exactly-once push source answers a sender only once the transaction
// holding its records committed: when a batch's fate arrives, a
// read_committed consumer already sees every record of it.
func TestExactlyOncePushSource(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			topic := "pushed-eos"
			createTopic(t, tb.Addr, topic, 2)
			rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{tb.Addr}}, OffsetsTopic: "push-offsets"}
			ps := newPushTest()
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				errc <- rt.RunSource(ctx, "push", Push(ps, PushOptions{}), SourceOptions{Topic: topic, ExactlyOnce: true, CommitInterval: 200 * time.Millisecond})
			}()
			select {
			case <-ps.opened:
			case err := <-errc:
				t.Fatalf("RunSource: %v", err)
			}
			const batches, per = 5, 50
			commits := rt.metrics("push").Commits
			for n := 0; n < batches; n++ {
				recs := make([]SourceRecord, per)
				for i := range recs {
					recs[i].Value = fmt.Appendf(nil, "b%d-r%d", n, i)
				}
				before := counterValue(commits)
				res, err := ps.send(recs)
				if err != nil || res.Stored != per || res.Err != nil {
					t.Fatalf("batch %d: %+v, %v", n, res, err)
				}
				if after := counterValue(commits); after <= before {
					t.Fatalf("batch %d answered stored before a commit (commits %v → %v)", n, before, after)
				}
				// The coordinator writes the commit markers after EndTxn
				// returns: the records become readable shortly after.
				testbroker.CheckFor(t, 30*time.Second, func() error {
					seen := map[string]bool{}
					for _, r := range txntest.ReadCommitted(t, tb.Addr, topic) {
						seen[string(r.Value)] = true
					}
					for i := 0; i < per; i++ {
						if v := fmt.Sprintf("b%d-r%d", n, i); !seen[v] {
							return fmt.Errorf("batch %d was answered stored; %s is not readable read_committed yet", n, v)
						}
					}
					return nil
				})
			}
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if n := len(txntest.ReadCommitted(t, tb.Addr, topic)); n != batches*per {
				t.Fatalf("%d records committed, want %d", n, batches*per)
			}
		})
	}
}

// A sink downstream of an exactly-once source never delivers records of
// an aborted transaction (what a killed source's open transaction
// becomes): sink tasks consume read_committed.
func TestSinkSkipsAbortedTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			topic := "sink-in-txn"
			createTopic(t, tb.Addr, topic, 1)
			p, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{tb.Addr}}, kgo.TransactionalID("sink-in-txn-producer"))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			for i, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit, kgo.TryAbort, kgo.TryCommit} {
				if err := p.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				var recs []*kgo.Record
				for n := 0; n < 10; n++ {
					recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "txn%d-%v-%d", i, bool(commit), n)})
				}
				if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				if err := p.EndTransaction(ctx, commit); err != nil {
					t.Fatal(err)
				}
			}
			rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{tb.Addr}}}
			s := &memSink{}
			sctx, cancel := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				errc <- rt.RunSink(sctx, "txn-reader", s, SinkOptions{Topics: []string{topic}, Group: "txn-reader", FlushInterval: 50 * time.Millisecond})
			}()
			testbroker.CheckFor(t, 30*time.Second, func() error {
				if n := s.count(); n < 20 {
					return fmt.Errorf("sink stored %d of the 20 committed records", n)
				}
				return nil
			})
			cancel()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, v := range s.stored {
				if strings.Contains(v, "-false-") {
					t.Fatalf("the sink delivered %s, a record of an aborted transaction", v)
				}
			}
			if len(s.stored) != 20 {
				t.Fatalf("sink stored %d records, want the 20 committed", len(s.stored))
			}
		})
	}
}

// The offsets topic has one partition, shared by every source: another
// producer's transaction open there (a source killed between writing its
// positions and committing, until the coordinator aborts it) holds the
// last stable offset below positions committed after it began, and one
// open in the destination topic hides the records the restore's scan
// would find past them. An exactly-once source's start waits for it to
// end instead of restoring the older positions below it (and writing
// their records again: a worker-group test counted a file source's lines
// twice so).
func TestExactlyOnceSourcePositionsPastAnotherOpenTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Apache Kafka")
	}
	for _, tb := range txntest.Brokers(t) {
		t.Run(tb.Name, func(t *testing.T) {
			run := fmt.Sprintf("%s-%d", tb.Name, time.Now().UnixNano()) // -count runs share the brokers
			topic, offsets := "eos-past-"+run, "eos-past-offsets-"+run
			createTopic(t, tb.Addr, topic, 1)
			co := kafkaclient.Options{Brokers: []string{tb.Addr}}
			rt := &Runtime{Client: co, Logger: zap.NewNop(), OffsetsTopic: offsets}
			opts := SourceOptions{Topic: topic, CommitInterval: 50 * time.Millisecond, ExactlyOnce: true}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			committedSeq := func(src *counterSource) int {
				src.mu.Lock()
				defer src.mu.Unlock()
				if p := src.committed["sp0"]; len(p) == 8 {
					return int(binary.BigEndian.Uint64(p))
				}
				return -1
			}

			// The source runs; another source's transaction begins in
			// the offsets topic; the source commits positions past it.
			const limit = 2000
			src := &counterSource{parts: 1, limit: limit, pace: 5 * time.Millisecond}
			sctx, stop := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- rt.RunSource(sctx, "counter", src, opts) }()
			testbroker.CheckFor(t, 30*time.Second, func() error {
				if n := committedSeq(src); n < 20 {
					return fmt.Errorf("positions committed up to %d", n)
				}
				return nil
			})
			other, err := kgo.NewClient(kgo.SeedBrokers(tb.Addr), kgo.TransactionalID("eos-past-other-"+run),
				kgo.TransactionTimeout(60*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if err := other.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			// It writes to the offsets topic and to the destination
			// (read by the restore's scan for records past the stored
			// positions), as a source writing the same topic would.
			if err := other.ProduceSync(ctx, &kgo.Record{Topic: offsets, Key: []byte(`["other","sp0"]`), Value: []byte(`{"seq":1}`)},
				&kgo.Record{Topic: topic, Key: []byte("other"), Value: []byte("other-0")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			past := committedSeq(src) + 30
			testbroker.CheckFor(t, 30*time.Second, func() error {
				if n := committedSeq(src); n < past && n < limit-1 {
					return fmt.Errorf("positions committed up to %d, want %d", n, past)
				}
				return nil
			})
			stop()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			last := committedSeq(src)

			cl, err := kafkaclient.New(co)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			wctx, wcancel := context.WithTimeout(ctx, time.Second)
			pos, _, err := restorePositions(wctx, co, adm, offsets, "counter", true)
			wcancel()
			if err == nil {
				t.Fatalf("positions read while another transaction is open below the last ones: %x (last committed %d), want a wait", pos["sp0"].Pos, last)
			}
			if !strings.Contains(err.Error(), "transaction open") {
				t.Fatalf("waiting for the open transaction: %v", err)
			}
			if err := other.EndTransaction(ctx, kgo.TryAbort); err != nil {
				t.Fatal(err)
			}
			src2 := &counterSource{parts: 1, limit: limit}
			runSource(t, rt, src2, opts)
			if p := src2.restored["sp0"]; len(p) != 8 || int(binary.BigEndian.Uint64(p)) != last {
				t.Fatalf("restored sp0 = %x, want %d", p, last)
			}
			checkExactlyOnce(t, committedValues(txntest.ReadCommittedSettled(t, tb.Addr, topic)), 1, limit)
		})
	}
}
