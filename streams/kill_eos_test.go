package streams

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/internal/txntest"
)

// The exactly-once variants of the crash tests (kill_test.go): the same
// scenarios with Config.ExactlyOnce, checked on what a read_committed
// consumer sees. They run against weir's broker; with
// WEIR_EOS_TEST_KAFKA=1 they run against a real Apache Kafka 4.4
// (internal/kafkapeer) instead, which is how the streams side was proven
// before weir's broker had transactions.

// killBroker is what the crash tests need of a broker (testbroker.Broker,
// or peerBroker for Apache Kafka).
type killBroker interface {
	Client(opts ...kgo.Opt) *kgo.Client
	CreateTopic(topic string, partitions int32, configs map[string]*string)
	ReadAll(topic string) []*kgo.Record
}

// peerBroker is an Apache Kafka broker (kafkapeer) as a killBroker.
type peerBroker struct {
	t    testing.TB
	addr string
}

func (p *peerBroker) Client(opts ...kgo.Opt) *kgo.Client {
	p.t.Helper()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{p.addr}}, opts...)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(cl.Close)
	return cl
}

func (p *peerBroker) CreateTopic(topic string, partitions int32, configs map[string]*string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(p.Client()).CreateTopic(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		p.t.Fatalf("creating topic %s: %v", topic, err)
	}
}

func (p *peerBroker) ReadAll(topic string) []*kgo.Record {
	return testbroker.ReadAllAt(p.t, p.addr, topic)
}

// startEOSBroker starts the broker of an exactly-once crash test
// (txntest.EOSBroker: weir, or Apache Kafka with WEIR_EOS_TEST_KAFKA=1).
// It returns the broker and its address.
func startEOSBroker(t *testing.T) (killBroker, string) {
	addr, b := txntest.EOSBroker(t, "1g")
	if b != nil {
		return b, addr
	}
	return &peerBroker{t: t, addr: addr}, addr
}

// guarantee is a crash test's processing guarantee: at least once (the
// default) or exactly once (Config.ExactlyOnce: its topics and
// application ids are prefixed "x", apart from the others' on a shared
// broker, and it runs on startEOSBroker's broker).
type guarantee struct{ exactlyOnce bool }

var (
	atLeastOnce = guarantee{}
	exactlyOnce = guarantee{exactlyOnce: true}
)

// name is a topic, topology or application id name under g.
func (g guarantee) name(s string) string {
	if g.exactlyOnce {
		return "x" + s
	}
	return s
}

// startBroker starts the broker of a crash test under g and returns it
// and its address.
func (g guarantee) startBroker(t *testing.T) (killBroker, string) {
	if g.exactlyOnce {
		return startEOSBroker(t)
	}
	b := testbroker.Start(t)
	return b, b.Addr
}

// countKillRun sets up the crash scenario of the "count" topology under
// g: a broker, its events and counts topics of parts partitions, n
// records over keys keys (seed), three instances of application app
// (g.name'd) fed steadily. It returns the run (not started: the caller
// may set more on it), the broker's address and each key's count.
func countKillRun(t *testing.T, g guarantee, app string, n, keys int, parts int32, seed uint64) (*killRun, string, map[string]int64) {
	t.Helper()
	b, addr := g.startBroker(t)
	b.CreateTopic(g.name("events"), parts, nil)
	b.CreateTopic(g.name("counts"), parts, nil)
	recs, want := countInput(g.name("events"), n, keys, seed)
	r := &killRun{t: t, b: b, adm: kadm.NewClient(b.Client()), input: g.name("events"),
		cc: killChildConfig{Broker: addr, AppID: g.name(app), Topology: g.name("count"), CommitInterval: 200 * time.Millisecond,
			ExactlyOnce: g.exactlyOnce},
		storeTask: func(string) bool { return true },
		recs:      recs, instances: 3, steady: true}
	return r, addr, want
}

// groupByKillRun sets up the crash scenario of the "groupby" topology
// under g: a broker, its gevents and gcounts topics of parts partitions,
// n records over keys keys (seed), two instances of the application
// g.name("wg"). It returns the run (not started), the broker's address,
// each key's count and the repartition topic.
func groupByKillRun(t *testing.T, g guarantee, n, keys int, parts int32, seed uint64) (*killRun, string, map[string]int64, string) {
	t.Helper()
	b, addr := g.startBroker(t)
	b.CreateTopic(g.name("gevents"), parts, nil)
	b.CreateTopic(g.name("gcounts"), parts, nil)
	recs, want := groupByInput(g.name("gevents"), n, keys, seed)
	app := g.name("wg")
	repart := app + "-gcounts-repartition"
	r := &killRun{t: t, b: b, adm: kadm.NewClient(b.Client()), input: g.name("gevents"), internal: []string{repart},
		cc: killChildConfig{Broker: addr, AppID: app, Topology: g.name("groupby"), CommitInterval: 200 * time.Millisecond,
			ExactlyOnce: g.exactlyOnce},
		storeTask: func(id string) bool { return strings.HasPrefix(id, repart+"-") },
		recs:      recs, instances: 2}
	return r, addr, want, repart
}

// copiesOf counts each of the n input records' copies in recs, records
// of the repartition topic repart.
func copiesOf(t *testing.T, recs []*kgo.Record, n int, repart string) []int {
	t.Helper()
	copies := make([]int, n)
	for _, rec := range recs {
		i, ok := seqOf(rec.Value, n)
		if !ok {
			t.Fatalf("%s: unexpected value %q", repart, rec.Value)
		}
		copies[i]++
	}
	return copies
}

// groupCaughtUpTxn is groupCaughtUp for an exactly-once group: topic has
// no open transaction and the group committed its end. A topic written
// only in transactions (txnal) ends with transaction markers, which a
// consumer never returns as records, so there the group's commit may be
// below the end as long as only control records (or aborted ones) follow
// it.
func groupCaughtUpTxn(ctx context.Context, adm *kadm.Client, addr, group, topic string, txnal bool) error {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return err
	}
	com, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	var errs []string
	type tail struct {
		p         int32
		from, end int64
	}
	var tails []tail
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := stable.Lookup(o.Topic, o.Partition)
		c, ok := com.Lookup(o.Topic, o.Partition)
		switch {
		case o.Err != nil || s.Err != nil:
			errs = append(errs, fmt.Sprintf("%d: %v %v", o.Partition, o.Err, s.Err))
		case s.Offset < o.Offset:
			errs = append(errs, fmt.Sprintf("%d: open transaction (last stable offset %d, end %d)", o.Partition, s.Offset, o.Offset))
		case o.Offset == 0:
		case !ok || c.Err != nil:
			errs = append(errs, fmt.Sprintf("%d: nothing committed", o.Partition))
		case c.At == o.Offset:
		case txnal && c.At < o.Offset:
			tails = append(tails, tail{o.Partition, c.At, o.Offset})
		default:
			errs = append(errs, fmt.Sprintf("%d: committed %d of %d", o.Partition, c.At, o.Offset))
		}
	})
	for _, tl := range tails {
		if n, err := dataBetween(ctx, addr, topic, tl.p, tl.from, tl.end); err != nil || n > 0 {
			errs = append(errs, fmt.Sprintf("%d: committed %d of %d, %d committed records after it (%v)", tl.p, tl.from, tl.end, n, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("group %s on %s: %s", group, topic, strings.Join(errs, "; "))
	}
	return nil
}

// dataBetween counts the committed records (not control records) of
// topic/p in [from, end): a group committed at from has consumed
// everything when there is none.
func dataBetween(ctx context.Context, addr, topic string, p int32, from, end int64) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{addr}},
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	n := 0
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return n, err
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				n++
			}
			done = done || r.Offset >= end-1
		})
		if done {
			return n, nil
		}
	}
}

// checkUpdatesOnce checks a count's update stream read read_committed:
// per key the counts strictly increase (no update is there twice: an
// aborted transaction's updates are not visible and the next owner goes
// on from the committed state) and the last is want's.
func checkUpdatesOnce(t *testing.T, recs []*kgo.Record, want map[string]int64) {
	t.Helper()
	last := map[string]int64{}
	var bad int
	for _, rec := range recs {
		v, err := Int64().Decode(rec.Value)
		if err != nil {
			t.Fatalf("%s: %v", rec.Topic, err)
		}
		k := string(rec.Key)
		if prev, ok := last[k]; ok && v <= prev {
			if bad < 5 {
				t.Errorf("key %s: update %d after %d (%s/%d@%d): a result seen twice", k, v, prev, rec.Topic, rec.Partition, rec.Offset)
			}
			bad++
		}
		last[k] = v
	}
	if len(last) != len(want) {
		t.Errorf("updates for %d keys, want %d", len(last), len(want))
	}
	for k, v := range want {
		if last[k] != v {
			if bad < 5 {
				t.Errorf("key %s: last count %d, want %d", k, last[k], v)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d wrong updates or counts (of %d keys, %d updates)", bad, len(want), len(recs))
	}
}

// TestCountExactlyOnceAcrossKill is TestCountExactAcrossKillAndScaleOut
// with ExactlyOnce: three instances, one SIGKILLed mid-transaction, a
// fourth joining later. The count topic read with read_committed holds,
// per key, strictly increasing counts ending at the number of records
// produced for it: every result once, none repeated, none missing.
func TestCountExactlyOnceAcrossKill(t *testing.T) {
	if testing.Short() {
		t.Skip("300,000 records through a broker and four child processes")
	}
	const (
		n     = 300_000
		keys  = 5_000
		parts = 6
	)
	start := time.Now()
	r, addr, want := countKillRun(t, exactlyOnce, "wc", n, keys, parts, 9)
	r.run()

	r.checkRestores(phase3Counts(r.recs))

	committed := txntest.ReadCommittedSettled(t, addr, "xcounts")
	checkUpdatesOnce(t, committed, want)
	t.Logf("exactly once: %d count updates for %d keys read_committed (%d offsets in the topic, aborted records and markers included) in %s",
		len(committed), len(want), endSum(context.Background(), r.adm, "xcounts"), time.Since(start).Round(time.Millisecond))
}

// TestCountExactlyOnceZombie is TestCountExactlyOnceAcrossKill with a
// zombie instead of a killed instance: the victim is frozen (SIGSTOP)
// mid-transaction until its session expires and the survivors have its
// tasks, then continued. Its transaction was aborted by the coordinator
// (its timeout) and its group generation is gone, so nothing it wrote
// or commits afterwards in that transaction becomes visible; it rejoins
// and works on. Read with read_committed, every count update is once.
func TestCountExactlyOnceZombie(t *testing.T) {
	if testing.Short() {
		t.Skip("300,000 records through a broker and four child processes")
	}
	const (
		n     = 300_000
		keys  = 5_000
		parts = 6
	)
	r, addr, want := countKillRun(t, exactlyOnce, "wz", n, keys, parts, 13)
	r.zombie = true
	r.run()
	checkUpdatesOnce(t, txntest.ReadCommittedSettled(t, addr, "xcounts"), want)
}

// TestGroupByCountExactlyOnceAcrossKill is TestGroupByCountAcrossKill
// with ExactlyOnce: the repartition topic read with read_committed holds
// every input record exactly once (the victim's writes of its open
// transaction are aborted, and its successor writes them again in its own),
// and the count topic read with read_committed holds strictly increasing
// counts per key ending at the exact count.
func TestGroupByCountExactlyOnceAcrossKill(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 records through a broker and three child processes")
	}
	const (
		n     = 200_000
		keys  = 2_000
		parts = 4
	)
	start := time.Now()
	r, addr, want, repart := groupByKillRun(t, exactlyOnce, n, keys, parts, 11)
	r.run()

	recs := r.recs
	r.checkRestores(phase3Counts(recs))

	copies := copiesOf(t, txntest.ReadCommittedSettled(t, addr, repart), n, repart)
	var bad int
	for i, c := range copies {
		if c != 1 {
			if bad < 10 {
				t.Errorf("input record %d (xgevents/%d@%d) is %d times in %s read_committed, want once", i, recs[i].Partition, recs[i].Offset, c, repart)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d input records are not exactly once in %s", bad, n, repart)
	}
	checkUpdatesOnce(t, txntest.ReadCommittedSettled(t, addr, "xgcounts"), want)
	all := endSum(context.Background(), r.adm, repart)
	t.Logf("exactly once: each of %d input records once in %s read_committed (%d records there counting aborted ones and markers; the victim owned %v); exact counts for %d keys; %s",
		n, repart, all, r.vicTasks, len(want), time.Since(start).Round(time.Millisecond))
}
