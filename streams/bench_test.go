package streams

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/broker/group"
	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/partition"
	"weir/internal/testkit"
	"weir/streams/internal/store"
)

// Benchmarks run end to end against an in-process weir broker on
// 127.0.0.1 (sharing the 2 cores with the app). Each iteration prefills
// the input topic (untimed), then times from the app's start until every
// output is acknowledged (stateless) or every input offset is committed
// (count). Run with -benchtime=1x -count=5 and take the median:
//
//	go test ./streams -run '^$' -bench . -benchtime 1x -count 5 -timeout 60m

const (
	benchRecords    = 1_000_000
	benchPartitions = 4
	benchValueBytes = 100
)

// startBenchBroker starts testbroker's in-process weir broker with
// group.initial.rebalance.delay.ms=0, as Kafka's own
// config/server.properties ships it for development and testing: with the
// default 3 s, every run would spend its first 3 seconds waiting for more
// group members before any record is assigned (a fixed delay, not
// throughput; at 1,000,000 records it alone would cap every figure near
// 330k records/s).
func startBenchBroker(b *testing.B) *testbroker.Broker {
	b.Helper()
	br := testbroker.Start(b, testbroker.Config(group.SettingInitialRebalanceDelayMs, "0"))
	// Create __consumer_offsets now (the first FindCoordinator does, 50
	// partitions), untimed, as on any cluster that has seen a group.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kadm.NewClient(br.Client()).FindGroupCoordinators(ctx, "warm-up").Error(); err != nil {
		b.Fatal(err)
	}
	return br
}

func prefill(b *testing.B, br *testbroker.Broker, topic string, n, keys int) {
	b.Helper()
	br.CreateTopic(topic, benchPartitions, nil)
	cl := br.Client(partition.Option(), kgo.MaxBufferedRecords(200_000), kgo.ProducerLinger(5*time.Millisecond))
	val := bytes.Repeat([]byte("x"), benchValueBytes)
	recs := make([]*kgo.Record, n)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range recs {
		var k []byte
		if keys > 0 {
			k = []byte("key-" + strconv.Itoa(r.IntN(keys)))
		} else {
			k = binary.BigEndian.AppendUint64(nil, uint64(i))
		}
		recs[i] = &kgo.Record{Topic: topic, Key: k, Value: val}
	}
	produceAll(b, cl, recs)
}

func endSum(ctx context.Context, adm *kadm.Client, topic string) int64 {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return -1
	}
	var s int64
	ends.Each(func(o kadm.ListedOffset) { s += o.Offset })
	return s
}

// waitOut waits until topic "out" holds n records.
func waitOut(b *testing.B, adm *kadm.Client, n int64) {
	b.Helper()
	testkit.CheckFor(b, 5*time.Minute, func() error {
		if got := endSum(context.Background(), adm, "out"); got < n {
			return fmt.Errorf("%d records in out, want %d", got, n)
		}
		return nil
	})
}

// benchApp starts an instance; cancel asks it to stop (Run then commits
// at once, checkpoints its stores and leaves the group) and wait waits
// for Run to return.
func benchApp(b *testing.B, br *testbroker.Broker, tp *Topology, id string, commit time.Duration) (a *App, cancel, wait func()) {
	a, err := New(tp, Config{ApplicationID: id, Client: kafkaclient.Options{Brokers: []string{br.Addr}}, StateDir: b.TempDir(), CommitInterval: commit})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	return a, cancel, func() {
		if err := <-errc; err != nil {
			b.Error(err)
		}
	}
}

func processed(a *App) int64 {
	var n int64
	for _, m := range a.Metrics() {
		n += m.Processed
	}
	return n
}

func report(b *testing.B, n int, d time.Duration) {
	b.ReportMetric(float64(n)/d.Seconds(), "records/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPassthroughKgo is the baseline: a plain franz-go group consumer
// producing every record it reads to another topic (no decode, no
// commits), as fast as the broker and client allow.
func BenchmarkPassthroughKgo(b *testing.B) {
	for range b.N {
		br := startBenchBroker(b)
		prefill(b, br, "in", benchRecords, 0)
		br.CreateTopic("out", benchPartitions, nil)
		adm := kadm.NewClient(br.Client())
		start := time.Now()
		cl := br.Client(partition.Option(), kgo.ConsumerGroup("pass"), kgo.ConsumeTopics("in"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MaxBufferedRecords(1<<17), kgo.ProducerLinger(5*time.Millisecond))
		done := make(chan struct{})
		go func() {
			defer close(done)
			var seen int
			for seen < benchRecords {
				fs := cl.PollRecords(context.Background(), 10000)
				fs.EachRecord(func(r *kgo.Record) {
					cl.Produce(context.Background(), &kgo.Record{Topic: "out", Key: r.Key, Value: r.Value}, nil)
					seen++
				})
			}
		}()
		<-done
		waitOut(b, adm, benchRecords)
		report(b, benchRecords, time.Since(start))
	}
}

// BenchmarkStatelessMapFilter: decode, filter (drops 1 in 10), mapValues
// (uppercases the 100-byte value), encode, produce.
func BenchmarkStatelessMapFilter(b *testing.B) {
	for range b.N {
		br := startBenchBroker(b)
		prefill(b, br, "in", benchRecords, 0)
		br.CreateTopic("out", benchPartitions, nil)
		adm := kadm.NewClient(br.Client())
		bld := NewBuilder()
		s := From(bld, "in", Bytes(), Bytes()).Filter(func(k, _ []byte) bool { return binary.BigEndian.Uint64(k)%10 != 3 })
		MapValues(s, func(_, v []byte) []byte { return bytes.ToUpper(v) }).To("out", Bytes(), Bytes())
		tp := mustBuildB(b, bld)
		want := int64(benchRecords - benchRecords/10)
		start := time.Now()
		_, cancel, wait := benchApp(b, br, tp, "stateless", time.Second)
		waitOut(b, adm, want)
		report(b, benchRecords, time.Since(start))
		cancel()
		wait()
	}
}

// BenchmarkCountByKey: count over 100,000 distinct keys, emitted to a
// topic; done when every input offset is committed. As soon as the app has
// processed every input record the benchmark stops it, and Run commits at
// once (flush: changelog entries, markers and table updates, their
// acknowledgements, then the offsets): otherwise a run of about a second
// would end at the next commit tick (CommitInterval 1 s), timing the
// wait for the clock rather than the work. Commits due earlier in the run
// happen as usual and are timed.
func BenchmarkCountByKey(b *testing.B) {
	for range b.N {
		br := startBenchBroker(b)
		prefill(b, br, "in", benchRecords, 100_000)
		br.CreateTopic("counts", benchPartitions, nil)
		adm := kadm.NewClient(br.Client())
		bld := NewBuilder()
		Count(GroupByKey(From(bld, "in", String(), Bytes()), String(), Bytes()), "n").ToStream().To("counts", String(), Int64())
		tp := mustBuildB(b, bld)
		start := time.Now()
		a, cancel, wait := benchApp(b, br, tp, "count", time.Second)
		testkit.CheckFor(b, 5*time.Minute, func() error {
			if n := processed(a); n < benchRecords {
				return fmt.Errorf("%d records processed, want %d", n, benchRecords)
			}
			return nil
		})
		cancel()
		testkit.CheckFor(b, 5*time.Minute, func() error { return groupCaughtUp(context.Background(), adm, "count", "in") })
		report(b, benchRecords, time.Since(start))
		wait()
	}
}

// The Task benchmarks run the same topologies as StatelessMapFilter and
// CountByKey through their four tasks in this goroutine, with no broker
// and no client: records come from memory and sends are counted and
// dropped (acknowledged at once). They measure the streams runtime alone
// (decode, operators, stores with Pebble, changelog and output records
// built), the ceiling if the broker and franz-go cost nothing. Four
// flushes (commits) per run: the end-to-end runs, 1 to 3 s long, commit
// every second and once more at the end.

// nullProducer acknowledges and drops every record.
type nullProducer struct{ n int }

func (p *nullProducer) send(r *kgo.Record, done func(*kgo.Record, error)) {
	p.n++
	if done != nil {
		done(r, nil)
	}
}

func taskBench(b *testing.B, tp *Topology, keys int) {
	const n = 1_000_000
	val := bytes.Repeat([]byte("x"), benchValueBytes)
	// Each partition's records are contiguous, as kgo decodes a batch.
	recs := make([][]kgo.Record, benchPartitions)
	for p := range recs {
		recs[p] = make([]kgo.Record, 0, n/benchPartitions*5/4)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for i := range n {
		var k []byte
		if keys > 0 {
			k = []byte("key-" + strconv.Itoa(r.IntN(keys)))
		} else {
			k = binary.BigEndian.AppendUint64(nil, uint64(i))
		}
		p := partition.ForKey(k, benchPartitions)
		recs[p] = append(recs[p], kgo.Record{Key: k, Value: val, Offset: int64(len(recs[p])), Timestamp: time.UnixMilli(int64(i))})
	}
	b.ResetTimer()
	for range b.N {
		dir := b.TempDir()
		var ts []*task
		out := &nullProducer{}
		for p := range int32(benchPartitions) {
			t := tp.newTask("tb", tp.sources[0], p)
			t.out = out
			t.cacheMax = 10 << 20
			t.stateDir = filepath.Join(dir, t.id)
			t.openBack = func(dir string) (store.Backend, error) { return store.OpenPebble(dir, store.PebbleOptions{}) }
			if err := t.open(&nullReader{}); err != nil {
				b.Fatal(err)
			}
			ts = append(ts, t)
		}
		start := time.Now()
		for round := range 4 {
			for p, t := range ts {
				rs := recs[p]
				lo, hi := len(rs)*round/4, len(rs)*(round+1)/4
				for i := lo; i < hi; i++ {
					t.process(&rs[i])
				}
			}
			for _, t := range ts {
				if err := t.flush(); err != nil {
					b.Fatal(err)
				}
			}
		}
		d := time.Since(start)
		for _, t := range ts {
			if err := t.close(true); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)/d.Seconds(), "records/s")
		b.ReportMetric(float64(out.n), "sent")
		b.ReportMetric(0, "ns/op")
	}
}

// nullReader is an empty changelog.
type nullReader struct{}

func (nullReader) read(string, int32, int64, func(int64), func(*kgo.Record) error) error { return nil }

func BenchmarkTaskCountByKey(b *testing.B) {
	bld := NewBuilder()
	Count(GroupByKey(From(bld, "in", String(), Bytes()), String(), Bytes()), "n").ToStream().To("counts", String(), Int64())
	taskBench(b, mustBuildB(b, bld), 100_000)
}

func BenchmarkTaskStatelessMapFilter(b *testing.B) {
	bld := NewBuilder()
	s := From(bld, "in", Bytes(), Bytes()).Filter(func(k, _ []byte) bool { return binary.BigEndian.Uint64(k)%10 != 3 })
	MapValues(s, func(_, v []byte) []byte { return bytes.ToUpper(v) }).To("out", Bytes(), Bytes())
	taskBench(b, mustBuildB(b, bld), 0)
}

// BenchmarkRestore restores a 1,000,000-entry store (one changelog
// partition: the entries, then a marker) into Pebble, as a task does when
// it is assigned with no local state. Baseline: BenchmarkChangelogRead,
// the same records read by a plain franz-go consumer.
func BenchmarkRestore(b *testing.B) {
	for range b.N {
		br, tp := restoreFixture(b)
		a, err := New(tp, Config{ApplicationID: "r", Client: kafkaclient.Options{Brokers: []string{br.Addr}}, StateDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		a.cl = br.Client()
		t := tp.newTask("r", tp.sources[0], 0)
		t.stateDir = filepath.Join(a.cfg.StateDir, t.id)
		t.cacheMax = 10 << 20
		t.out = a
		t.openBack = func(dir string) (store.Backend, error) { return store.OpenPebble(dir, store.PebbleOptions{}) }
		start := time.Now()
		if err := t.open(&kgoReader{a: a}); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if got := t.m.restored.Load(); got != benchRecords+1 {
			b.Fatalf("restored %d records", got)
		}
		if v, ok, _ := t.stores[0].st.Get([]byte("key-0000777")); !ok || len(v) != 8 {
			b.Fatal("restored store misses key-0000777")
		}
		t.close(false)
		report(b, benchRecords, d)
	}
}

func BenchmarkChangelogRead(b *testing.B) {
	for range b.N {
		br, _ := restoreFixture(b)
		start := time.Now()
		cl := br.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"r-n-changelog": {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(32<<20))
		var n int
		for n < benchRecords+1 {
			cl.PollFetches(context.Background()).EachRecord(func(*kgo.Record) { n++ })
		}
		report(b, benchRecords, time.Since(start))
	}
}

func restoreFixture(b *testing.B) (*testbroker.Broker, *Topology) {
	br := startBenchBroker(b)
	br.CreateTopic("in", 1, nil)
	br.CreateTopic("r-n-changelog", 1, nil)
	bld := NewBuilder()
	Count(GroupByKey(From(bld, "in", String(), Bytes()), String(), Bytes()), "n")
	tp := mustBuildB(b, bld)
	cl := br.Client(partition.Option(), kgo.MaxBufferedRecords(200_000))
	recs := make([]*kgo.Record, 0, benchRecords+1)
	for i := range benchRecords {
		recs = append(recs, changelogRecord("r-n-changelog", 0, fmt.Appendf(nil, "key-%07d", i), binary.BigEndian.AppendUint64(nil, uint64(i))))
	}
	recs = append(recs, markerRecord("r-n-changelog", 0, benchRecords, 0, nil))
	produceAll(b, cl, recs)
	return br, tp
}

func mustBuildB(b *testing.B, bld *Builder) *Topology {
	tp, err := bld.Build()
	if err != nil {
		b.Fatal(err)
	}
	return tp
}

// TestStore10MKeysRSS writes 10,000,000 distinct keys through a store's
// write cache (10 MiB) into Pebble, as a count would (Get, then Put of an
// 8-byte count), reads some back, and checks the process's peak resident
// memory (VmHWM) stays under 512 MiB. Slow (about a minute): run with
// WEIR_STREAMS_BIG=1.
func TestStore10MKeysRSS(t *testing.T) {
	if os.Getenv("WEIR_STREAMS_BIG") == "" {
		t.Skip("set WEIR_STREAMS_BIG=1 (10,000,000 keys, about a minute)")
	}
	n := 10_000_000
	if s := os.Getenv("WEIR_STREAMS_BIG_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	be, err := store.OpenPebble(t.TempDir(), store.PebbleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New("big", be, 10<<20)
	defer st.Close()
	start := time.Now()
	r := rand.New(rand.NewPCG(7, 7))
	perm := r.Perm(n)
	for i, p := range perm {
		k := fmt.Appendf(nil, "key-%08d", p)
		v, ok, err := st.Get(k)
		if err != nil {
			t.Fatal(err)
		}
		c := uint64(0)
		if ok {
			c = binary.BigEndian.Uint64(v)
		}
		if err := st.Put(k, binary.BigEndian.AppendUint64(nil, c+1)); err != nil {
			t.Fatal(err)
		}
		if i%1_000_000 == 0 {
			runtime.GC() // perm is 80 MB of ints; keep the heap honest
		}
	}
	perm = nil
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, i := range []int{0, 1, 4_999_999, 9_999_999} {
		v, ok, err := st.Get(fmt.Appendf(nil, "key-%08d", i))
		if err != nil || !ok || binary.BigEndian.Uint64(v) != 1 {
			t.Fatalf("key %d: %v %v %v", i, v, ok, err)
		}
	}
	hwm := vmHWM(t)
	t.Logf("10,000,000 keys in %s (%.0f keys/s); store %d MiB on disk+memtables; peak RSS (VmHWM) %d MiB",
		took.Round(time.Millisecond), float64(n)/took.Seconds(), st.SizeBytes()>>20, hwm>>20)
	if hwm > 512<<20 {
		t.Fatalf("peak RSS %d MiB > 512 MiB", hwm>>20)
	}
}

func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}
