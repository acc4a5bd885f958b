package brokertest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/smallfs"
	"weir/internal/testkit"
)

// The per-directory disk-full test on three `weir broker` processes:
// broker 1 has two log directories (--log-dir twice), one on the normal
// disk and one on a small tmpfs that fills up under idempotent acks=all
// producers writing to a replication-factor-3 topic it leads every
// partition of. The two partitions placed on the full directory go to
// in-sync replicas and broker 1 leaves their ISRs; the two on the other
// directory stay led by broker 1, in sync, and keep acknowledging
// writes. DescribeLogDirs shows both directories (a full one is described
// normally, as Kafka has no such state). Once space is freed broker 1
// rejoins every ISR by itself, and every acknowledged record is read back
// exactly once.
func TestProcessOneOfTwoLogDirsFull(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level disk-full test")
	}
	t.Parallel()
	const (
		topic = "ptwo"
		parts = 4
	)
	fs := smallfs.Mount(t, 64<<20)
	other := filepath.Join(t.TempDir(), "logs")
	c := newProcClusterArgs(t, 3, map[int32][]string{1: {"--log-dir", other, "--log-dir", fs.Dir}})
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()
	testkit.CheckFor(t, 30*time.Second, func() error {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		for p := int32(0); p < parts; p++ {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p, []int32{1, 2, 3}
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		for k, v := range map[string]string{"min.insync.replicas": "2", "segment.bytes": "1048576"} {
			cf := kmsg.NewCreateTopicsRequestTopicConfig()
			cf.Name, cf.Value = k, kmsg.StringPtr(v)
			rt.Configs = append(rt.Configs, cf)
		}
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		resp, err := req.RequestWith(ctx, adm)
		if err != nil {
			return err
		}
		if code := resp.Topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
	testkit.CheckFor(t, 30*time.Second, func() error { return c.allPartitionsLed(topic, parts, -1) })
	testkit.CheckFor(t, 30*time.Second, func() error { return c.fullISR(topic, parts) })

	// Where broker 1 put each partition, from its DescribeLogDirs.
	describe := func() *kmsg.DescribeLogDirsResponse {
		t.Helper()
		var resp *kmsg.DescribeLogDirsResponse
		testkit.CheckFor(t, 10*time.Second, func() error {
			r, err := adm.Broker(1).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
			if err != nil {
				return err
			}
			resp = r.(*kmsg.DescribeLogDirsResponse)
			return nil
		})
		return resp
	}
	// The metadata has broker 1 in every ISR from the start: wait until
	// it has opened the logs.
	where := map[int32]string{}
	testkit.CheckFor(t, 30*time.Second, func() error {
		clear(where)
		for _, d := range describe().Dirs {
			if d.ErrorCode != 0 || (d.Dir != fs.Dir && d.Dir != other) {
				t.Fatalf("broker 1 log dir %s: error %d", d.Dir, d.ErrorCode)
			}
			for _, dt := range d.Topics {
				for _, dp := range dt.Partitions {
					where[dp.Partition] = d.Dir
				}
			}
		}
		if len(where) != parts {
			return fmt.Errorf("broker 1 describes %d partitions", len(where))
		}
		return nil
	})
	var onFull, onOther []int32
	for p := int32(0); p < parts; p++ {
		switch where[p] {
		case fs.Dir:
			onFull = append(onFull, p)
		case other:
			onOther = append(onOther, p)
		}
	}
	if len(onFull) != 2 || len(onOther) != 2 {
		t.Fatalf("broker 1 placed %v, want two partitions in each of %s and %s", where, other, fs.Dir)
	}
	ledByOne := func(ps []int32) error {
		md, err := c.metadata(topic)
		if err != nil {
			return err
		}
		for _, p := range md.Topics[0].Partitions {
			if slices.Contains(ps, p.Partition) && (p.Leader != 1 || !slices.Contains(p.ISR, 1)) {
				return fmt.Errorf("partition %d: leader %d, ISR %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return nil
	}
	testkit.CheckFor(t, 30*time.Second, func() error { return ledByOne([]int32{0, 1, 2, 3}) })

	fs.Fill(3 << 20)
	cl, err := kgo.NewClient(append(loaderOpts(), kgo.SeedBrokers(c.seeds()...), kgo.MetadataMinAge(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ld := startLoader(t, cl, topic, parts)
	start := time.Now()
	testkit.CheckFor(t, 60*time.Second, func() error {
		md, err := c.metadata(topic)
		if err != nil {
			return err
		}
		for _, p := range md.Topics[0].Partitions {
			if slices.Contains(onFull, p.Partition) && (p.Leader == 1 || slices.Contains(p.ISR, 1)) {
				return fmt.Errorf("partition %d (full dir): leader %d, ISR %v (%d records acknowledged)", p.Partition, p.Leader, p.ISR, ld.count())
			}
		}
		return nil
	})
	t.Logf("broker 1 handed over the full directory's partitions %v %s after the producers started (%d records acknowledged)",
		onFull, time.Since(start).Round(time.Millisecond), ld.count())
	if err := ledByOne(onOther); err != nil {
		t.Fatalf("the writable directory's partitions moved too: %v", err)
	}
	ackedOf := func(p int32) int {
		ld.mu.Lock()
		defer ld.mu.Unlock()
		return len(ld.acked[p])
	}
	before := map[int32]int{}
	for _, p := range onOther {
		before[p] = ackedOf(p)
	}
	ld.waitMore(1500, 60*time.Second)
	for _, p := range onOther {
		if ackedOf(p) <= before[p] {
			t.Errorf("partition %d (writable dir, led by broker 1) acknowledged nothing more: %d", p, ackedOf(p))
		}
	}
	if err := ledByOne(onOther); err != nil {
		t.Fatalf("the writable directory's partitions moved under load: %v", err)
	}
	for _, d := range describe().Dirs {
		if d.ErrorCode != 0 {
			t.Errorf("DescribeLogDirs %s: error %d (a full directory is described normally)", d.Dir, d.ErrorCode)
		}
		if d.Dir == fs.Dir && d.UsableBytes > 4<<20 {
			t.Errorf("full directory %s: %d usable bytes", d.Dir, d.UsableBytes)
		}
	}

	// Space freed: broker 1 probes the directory, reports it writable and
	// rejoins every ISR by itself.
	fs.Free()
	testkit.CheckFor(t, 60*time.Second, func() error { return c.fullISR(topic, parts) })
	ld.waitMore(300, 60*time.Second)
	acked := ld.finish()
	checkSegments(t, fs.Dir, "broker 1's full directory after it caught up")

	content := readAllPartitions(t, c.seeds(), topic, parts)
	total := 0
	for p := 0; p < parts; p++ {
		checkPartition(t, p, content[p], acked[p])
		total += len(acked[p])
	}
	counts := map[string]int{}
	for _, nd := range c.nodes {
		warnCounts(t, nd.logPath, counts)
	}
	t.Logf("%d records acknowledged, %d produce errors, all read back once; warnings and errors: %v", total, ld.errs, counts)
	for msg, n := range counts {
		if n > 50 {
			t.Errorf("%q logged %d times", msg, n)
		}
	}
}
