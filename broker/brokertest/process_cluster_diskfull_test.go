package brokertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/smallfs"
	"weir/internal/testkit"
)

// The disk-full test on three `weir broker` processes: broker 1 runs with
// --log-dir on a small tmpfs that fills up under idempotent acks=all
// producers. It hands its leaderships to in-sync replicas and leaves the
// ISRs (seen through Kafka Metadata), producers keep writing through
// brokers 2 and 3; then it is killed with SIGKILL while full, space is
// freed, it restarts, recovers its logs and rejoins every ISR; its
// segments hold no torn or bad batch after either kill; every
// acknowledged record is read back exactly once.
func TestProcessClusterDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level disk-full test")
	}
	t.Parallel()
	const (
		topic = "pfull"
		parts = 3
	)
	fs := smallfs.Mount(t, 64<<20) // room for what the producers write after space is freed
	c := newProcClusterArgs(t, 3, map[int32][]string{1: {"--log-dir", fs.Dir}})
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()
	testkit.CheckFor(t, 30*time.Second, func() error {
		rs, err := kadm.NewClient(adm).CreateTopic(ctx, parts, 3, map[string]*string{
			"min.insync.replicas": kmsg.StringPtr("2"), "segment.bytes": kmsg.StringPtr("1048576")}, topic)
		if err != nil {
			return err
		}
		return rs.Err
	})
	testkit.CheckFor(t, 30*time.Second, func() error { return c.allPartitionsLed(topic, parts, -1) })
	testkit.CheckFor(t, 30*time.Second, func() error { return c.fullISR(topic, parts) })

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
			if p.Leader == 1 || slices.Contains(p.ISR, 1) {
				return fmt.Errorf("partition %d: leader %d, ISR %v (%d records acknowledged)", p.Partition, p.Leader, p.ISR, ld.count())
			}
		}
		return nil
	})
	t.Logf("broker 1 out of every leadership and ISR %s after the producers started (%d records acknowledged)", time.Since(start).Round(time.Millisecond), ld.count())
	ld.waitMore(1500, 60*time.Second)

	// SIGKILL while full, space freed, restart: recovery, then back in
	// every ISR.
	c.kill(c.node(1))
	checkSegments(t, fs.Dir, "broker 1 killed while full")
	fs.Free()
	c.start(c.node(1))
	testkit.CheckFor(t, 60*time.Second, func() error { return c.fullISR(topic, parts) })
	ld.waitMore(300, 60*time.Second)
	acked := ld.finish()

	c.kill(c.node(1))
	checkSegments(t, fs.Dir, "broker 1 killed after catching up")
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
