package brokertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testkit"
	"weir/internal/weirbin"
	"weir/internal/weircluster"
)

// procCluster is a cluster of `weir broker` processes
// (internal/weircluster) with the checks the process tests share.
type procCluster struct {
	*weircluster.Cluster
	t *testing.T
}

func TestMain(m *testing.M) {
	// The in-process cluster tests wait on sessions, elections and lag
	// checks (about 18 s of CPU in 83 s of -short at load 5): four at a
	// time instead of GOMAXPROCS (2).
	testkit.WaitingParallel(4)
	// Under -short only those in-process cluster tests run (about 4 s of
	// CPU in 23 s at four at a time): eight at a time.
	testkit.WaitingParallelShort(8)
	code := m.Run()
	weirbin.Cleanup()
	os.Exit(code)
}

// newProcCluster starts n `weir broker` processes.
func newProcCluster(t *testing.T, n int) *procCluster {
	t.Helper()
	return startProcCluster(t, n, weircluster.Options{})
}

// newProcClusterTLS is newProcCluster whose brokers replicate and run
// the controller quorum over TLS only, as TLS() does in process
// (weircluster.Options.TLS).
func newProcClusterTLS(t *testing.T, n int) *procCluster {
	t.Helper()
	return startProcCluster(t, n, weircluster.Options{TLS: true})
}

func startProcCluster(t *testing.T, n int, o weircluster.Options) *procCluster {
	t.Helper()
	return &procCluster{Cluster: weircluster.StartWith(t, weirbin.Build(t), n, o), t: t}
}

// metadata asks the running brokers (any one that answers) for the
// topic's partitions.
func (c *procCluster) metadata(topic string) (*kmsg.MetadataResponse, error) {
	var lastErr error
	for _, id := range c.IDs() {
		if !c.Running(id) {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(id)), kgo.RetryTimeout(time.Second))
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err == nil && len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 {
			return resp, nil
		}
		lastErr = fmt.Errorf("broker %d: %v", id, err)
	}
	return nil, fmt.Errorf("no broker answered Metadata: %v", lastErr)
}

// TestProcessChaosAcksAll is the issue's process-level test: three `weir
// broker` processes, an idempotent acks=all producer writing
// sequence-numbered records to a replication-factor-3 topic with
// min.insync.replicas=2, the leader of a random partition killed with
// SIGKILL ten times (and restarted), a consumer reading throughout.
func TestProcessChaosAcksAll(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level chaos test (about a minute)")
	}
	chaosAcksAll(t, newProcCluster(t, 3), 10)
}

// TestProcessChaosAcksAllTLS is the chaos test on `weir broker`
// processes whose replication and controller quorum are TLS-only with
// mutual authentication (newProcClusterTLS), with fewer kills.
func TestProcessChaosAcksAllTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level chaos test over TLS (about 30 s)")
	}
	chaosAcksAll(t, newProcClusterTLS(t, 3), 3)
}

// chaosAcksAll is the chaos test on c with kills leader kills.
func chaosAcksAll(t *testing.T, c *procCluster, kills int) {
	const (
		topic = "chaos"
		parts = 6
	)
	c.createTopic(topic, parts, nil, map[string]string{"min.insync.replicas": "2"})
	ld := startSeqLoad(t, c.Seeds(), topic, parts, 200, 2*time.Millisecond)

	// Consumer reading throughout: what it sees must never vanish.
	seen := make([]map[int64]string, parts)
	for i := range seen {
		seen[i] = map[int64]string{}
	}
	var seenMu sync.Mutex
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: allFromStart(parts)}))
	if err != nil {
		t.Fatal(err)
	}
	consCtx, stopCons := context.WithCancel(context.Background())
	defer stopCons()
	consDone := make(chan struct{})
	go func() {
		defer close(consDone)
		for consCtx.Err() == nil {
			fs := cons.PollFetches(consCtx)
			fs.EachRecord(func(r *kgo.Record) {
				seenMu.Lock()
				seen[r.Partition][r.Offset] = string(r.Value)
				seenMu.Unlock()
			})
		}
	}()

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var failovers []time.Duration
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond) // let traffic flow
		p := int32(rng.IntN(parts))
		md, err := c.metadata(topic)
		if err != nil {
			t.Fatal(err)
		}
		victim := md.Topics[0].Partitions[slices.IndexFunc(md.Topics[0].Partitions, func(mp kmsg.MetadataResponseTopicPartition) bool { return mp.Partition == p })].Leader
		if victim < 1 {
			t.Fatalf("kill %d: partition %d has no leader", k, p)
		}
		killed := time.Now()
		c.Kill(int(victim))
		// Every partition must have a live leader again within 10s.
		testkit.CheckFor(t, 10*time.Second, func() error { return c.allPartitionsLed(topic, parts, victim) })
		// Failover: kill to the first acknowledged record on the partition.
		var fo time.Duration
		testkit.CheckFor(t, 15*time.Second, func() error {
			at := ld.lastAckOn(p)
			if !at.After(killed) {
				return fmt.Errorf("no record acknowledged on partition %d since the kill", p)
			}
			fo = at.Sub(killed)
			return nil
		})
		failovers = append(failovers, fo)
		t.Logf("kill %d: broker %d (leader of %s-%d); all partitions led after %v, first ack on %d after %v",
			k+1, victim, topic, p, time.Since(killed).Round(time.Millisecond), p, fo.Round(time.Millisecond))
		c.Start(int(victim))
		if t.Failed() {
			return
		}
		// Back in every ISR before the next kill (min.insync.replicas=2).
		testkit.CheckFor(t, 60*time.Second, func() error { return c.fullISR(topic, parts) })
	}
	ld.finish(t)
	stopCons()
	<-consDone
	cons.Close()

	// Read every partition to its end.
	final := readAllPartitions(t, c.Seeds(), topic, parts)
	total := ld.check(t, final)
	seenMu.Lock()
	for p := 0; p < parts; p++ {
		for off, v := range seen[p] {
			if int(off) >= len(final[p].values) || final[p].values[off] != v {
				t.Errorf("partition %d: the consumer saw %q at offset %d, which is not there at the end", p, v, off)
			}
		}
	}
	seenMu.Unlock()
	sort.Slice(failovers, func(i, j int) bool { return failovers[i] < failovers[j] })
	failed, firstErrs := ld.failures()
	t.Logf("%d records acknowledged, %d failed (first errors %v); failover (kill -9 to first ack) median %v, max %v",
		total, failed, firstErrs, failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond))
	if total < 1000 {
		t.Fatalf("only %d records acknowledged", total)
	}
	// The brokers' warnings stay readable: before, this run logged
	// 7,300-8,900 "ISR change refused ... broker N is not live" lines.
	counts := map[string]int{}
	for _, id := range c.IDs() {
		warnCounts(t, c.LogPath(id), counts)
	}
	t.Logf("warnings and errors by message over the run: %v", counts)
	for msg, n := range counts {
		if n > 300 {
			t.Errorf("%q logged %d times", msg, n)
		}
	}
}

// createTopic creates topic on c with parts partitions and configs,
// retrying until the cluster takes it (one that exists already counts),
// on replication factor 3 or, given assign, on those replicas per
// partition; then waits until every partition has a live leader.
func (c *procCluster) createTopic(topic string, parts int, assign [][]int32, configs map[string]string) {
	t := c.t
	t.Helper()
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	testkit.CheckFor(t, 30*time.Second, func() error {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, int32(parts), 3
		if assign != nil {
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			for p, replicas := range assign {
				ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				ra.Partition, ra.Replicas = int32(p), replicas
				rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
			}
		}
		for k, v := range configs {
			cf := kmsg.NewCreateTopicsRequestTopicConfig()
			cf.Name, cf.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, cf)
		}
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		resp, err := req.RequestWith(context.Background(), adm)
		if err != nil {
			return err
		}
		if code := resp.Topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
	testkit.CheckFor(t, 30*time.Second, func() error { return c.allPartitionsLed(topic, parts, -1) })
}

// seqLoad is the steady load of the process tests: an idempotent
// acks=all producer writing, round robin over the partitions of a
// topic, values "p<partition>-<seq>" in order per partition, pausing
// after every batch of records so it does not saturate the brokers.
// It keeps the acknowledged sequence numbers per partition (in ack
// order), the time of each partition's last ack and the failures.
type seqLoad struct {
	prod *kgo.Client
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	acked     [][]int // acknowledged sequence numbers, in ack order
	lastAck   []time.Time
	failed    int
	firstErrs []error // the first five failures
}

// startSeqLoad starts a seqLoad through seeds on topic's parts
// partitions, pausing for pause after every batch records.
func startSeqLoad(t *testing.T, seeds []string, topic string, parts, batch int, pause time.Duration) *seqLoad {
	t.Helper()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.ProducerLinger(time.Millisecond),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.MaxBufferedRecords(2000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	l := &seqLoad{prod: prod, stop: make(chan struct{}), done: make(chan struct{}),
		acked: make([][]int, parts), lastAck: make([]time.Time, parts)}
	go func() {
		defer close(l.done)
		seq := make([]int, parts)
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			p := int32(i % parts)
			s := seq[p]
			seq[p]++
			rec := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, s))}
			prod.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
				l.mu.Lock()
				defer l.mu.Unlock()
				if err != nil {
					l.failed++
					if len(l.firstErrs) < 5 {
						l.firstErrs = append(l.firstErrs, err)
					}
					return
				}
				l.acked[r.Partition] = append(l.acked[r.Partition], s)
				l.lastAck[r.Partition] = time.Now()
			})
			if i%batch == batch-1 {
				time.Sleep(pause)
			}
		}
	}()
	return l
}

// lastAckOn is when a record on partition p was last acknowledged.
func (l *seqLoad) lastAckOn(p int32) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastAck[p]
}

// finish stops producing and waits (at most a minute) until every
// record sent is acknowledged or failed.
func (l *seqLoad) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := l.prod.Flush(ctx); err != nil {
		t.Fatalf("flushing the producer: %v", err)
	}
}

// check checks every partition of final (read to its end) against the
// acknowledged records (checkPartition) and returns how many there
// were.
func (l *seqLoad) check(t *testing.T, final []partitionContent) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	total := 0
	for p := range l.acked {
		total += len(l.acked[p])
		checkPartition(t, p, final[p], l.acked[p])
	}
	return total
}

// failures returns how many records failed and the first errors.
func (l *seqLoad) failures() (int, []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed, l.firstErrs
}

// warnCounts adds the warn-or-worse lines of a JSON broker log to counts,
// by message (a "(repeated N times ...)" suffix cut off).
func warnCounts(t *testing.T, path string, counts map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct{ Level, Msg string }
		if json.Unmarshal(sc.Bytes(), &line) != nil || (line.Level != "warn" && line.Level != "error") {
			continue
		}
		msg, _, _ := strings.Cut(line.Msg, " (repeated ")
		counts[msg]++
	}
}

func allFromStart(parts int) map[int32]kgo.Offset {
	m := map[int32]kgo.Offset{}
	for p := int32(0); p < int32(parts); p++ {
		m[p] = kgo.NewOffset().AtStart()
	}
	return m
}

// allPartitionsLed checks that every partition has a live leader that is
// not broker gone.
func (c *procCluster) allPartitionsLed(topic string, parts int, gone int32) error {
	md, err := c.metadata(topic)
	if err != nil {
		return err
	}
	live := map[int32]bool{}
	for _, b := range md.Brokers {
		live[b.NodeID] = true
	}
	if len(md.Topics[0].Partitions) != parts {
		return fmt.Errorf("%d partitions", len(md.Topics[0].Partitions))
	}
	for _, p := range md.Topics[0].Partitions {
		if p.Leader < 0 || p.Leader == gone || !live[p.Leader] {
			return fmt.Errorf("partition %d: leader %d", p.Partition, p.Leader)
		}
	}
	return nil
}

// fullISR checks that every partition has all three replicas in sync.
func (c *procCluster) fullISR(topic string, parts int) error {
	md, err := c.metadata(topic)
	if err != nil {
		return err
	}
	for _, p := range md.Topics[0].Partitions {
		if len(p.ISR) != 3 {
			return fmt.Errorf("partition %d: ISR %v", p.Partition, p.ISR)
		}
	}
	return nil
}

type partitionContent struct {
	values []string // by offset
}

// readAllPartitions reads each partition from the start to its high
// watermark.
func readAllPartitions(t *testing.T, seeds []string, topic string, parts int) []partitionContent {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: allFromStart(parts)}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Right after a broker was killed the partitions it led may still
	// name it (or a broker the client has not yet seen) until the
	// controller moves them: "not yet", asked again.
	want := make([]int64, parts)
	testkit.CheckFor(t, 60*time.Second, func() error {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		for p := 0; p < parts; p++ {
			o, ok := ends.Lookup(topic, int32(p))
			if !ok || o.Err != nil {
				return fmt.Errorf("end offset of partition %d: %v", p, o.Err)
			}
			want[p] = o.Offset
		}
		return nil
	})
	out := make([]partitionContent, parts)
	remaining := 0
	for p := 0; p < parts; p++ {
		if want[p] > 0 {
			remaining++
		}
	}
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the partitions back: %v", ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			pc := &out[r.Partition]
			if r.Offset != int64(len(pc.values)) {
				t.Fatalf("partition %d: offset %d after %d records (a gap)", r.Partition, r.Offset, len(pc.values))
			}
			pc.values = append(pc.values, string(r.Value))
			if int64(len(pc.values)) == want[r.Partition] {
				remaining--
			}
		})
	}
	return out
}

// checkPartition verifies that every acknowledged sequence number is in
// the partition exactly once, in order, and that no value appears twice.
func checkPartition(t *testing.T, p int, pc partitionContent, acked []int) {
	t.Helper()
	pos := map[int]int{} // seq -> offset
	prefix := fmt.Sprintf("p%d-", p)
	last := -1
	for off, v := range pc.values {
		s, err := strconv.Atoi(strings.TrimPrefix(v, prefix))
		if err != nil || !strings.HasPrefix(v, prefix) {
			t.Errorf("partition %d offset %d: unexpected value %q", p, off, v)
			continue
		}
		if _, dup := pos[s]; dup {
			t.Errorf("partition %d: %q at offsets %d and %d (duplicate)", p, v, pos[s], off)
		}
		if s <= last {
			t.Errorf("partition %d: %q at offset %d after sequence %d (out of order)", p, v, off, last)
		}
		last = s
		pos[s] = off
	}
	for _, s := range acked {
		if _, ok := pos[s]; !ok {
			t.Errorf("partition %d: acknowledged record p%d-%d is missing", p, p, s)
		}
	}
}
