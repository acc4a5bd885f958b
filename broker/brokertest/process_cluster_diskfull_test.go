package brokertest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/smallfs"
	"weir/internal/testkit"
	"weir/internal/weircluster"
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
	c, fs := startDiskFullCluster(t, topic, parts, nil)
	ld := startDiskFullLoad(t, c, fs, topic, parts)
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
	c.Kill(1)
	checkSegments(t, fs.Dir, "broker 1 killed while full")
	fs.Free()
	c.Start(1)
	testkit.CheckFor(t, 60*time.Second, func() error { return c.fullISR(topic, parts) })
	ld.waitMore(300, 60*time.Second)
	acked := ld.finish()

	c.Kill(1)
	checkSegments(t, fs.Dir, "broker 1 killed after catching up")
	checkReadBackOnce(t, c, topic, ld, acked)
}

// startDiskFullCluster is the setup of the process-level disk-full
// tests: a 64 MiB tmpfs (room for what the producers write after space
// is freed), three `weir broker` processes, broker 1 with the log
// directories otherDirs and then the tmpfs, and topic with parts
// partitions (on the replicas of assign if given),
// min.insync.replicas=2 and segments of 1 MiB, led and fully in sync.
func startDiskFullCluster(t *testing.T, topic string, parts int, assign [][]int32, otherDirs ...string) (*procCluster, *smallfs.FS) {
	t.Helper()
	fs := smallfs.Mount(t, 64<<20)
	var dirs []string
	for _, d := range append(otherDirs, fs.Dir) {
		dirs = append(dirs, "--log-dir", d)
	}
	c := startProcCluster(t, 3, weircluster.Options{NodeArgs: map[int][]string{1: dirs}})
	c.createTopic(topic, parts, assign, map[string]string{"min.insync.replicas": "2", "segment.bytes": "1048576"})
	testkit.CheckFor(t, 30*time.Second, func() error { return c.fullISR(topic, parts) })
	return c, fs
}

// startDiskFullLoad fills fs up to its last 3 MiB and starts a loader
// (idempotent acks=all producers of 1 KiB records) on topic through c.
func startDiskFullLoad(t *testing.T, c *procCluster, fs *smallfs.FS, topic string, parts int) *loader {
	t.Helper()
	fs.Fill(3 << 20)
	cl, err := kgo.NewClient(append(loaderOpts(), kgo.SeedBrokers(c.Seeds()...), kgo.MetadataMinAge(100*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return startLoader(t, cl, topic, parts)
}

// checkReadBackOnce reads topic back through c and checks that every
// record ld acknowledged (acked, from its finish) is there exactly once
// and in order, and that no warning or error was logged more than 50
// times by any broker.
func checkReadBackOnce(t *testing.T, c *procCluster, topic string, ld *loader, acked [][]int) {
	t.Helper()
	content := readAllPartitions(t, c.Seeds(), topic, len(acked))
	total := 0
	for p := range acked {
		checkPartition(t, p, content[p], acked[p])
		total += len(acked[p])
	}
	counts := map[string]int{}
	for _, id := range c.IDs() {
		warnCounts(t, c.LogPath(id), counts)
	}
	t.Logf("%d records acknowledged, %d produce errors, all read back once; warnings and errors: %v", total, ld.errs, counts)
	for msg, n := range counts {
		if n > 50 {
			t.Errorf("%q logged %d times", msg, n)
		}
	}
}
