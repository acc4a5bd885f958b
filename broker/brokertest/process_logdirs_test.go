package brokertest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	other := filepath.Join(t.TempDir(), "logs")
	c, fs := startDiskFullCluster(t, topic, parts, [][]int32{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}}, other)
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()

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

	ld := startDiskFullLoad(t, c, fs, topic, parts)
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

	checkReadBackOnce(t, c, topic, ld, acked)
}
