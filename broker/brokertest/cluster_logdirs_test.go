package brokertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/kafkatools"
	"weir/broker/metadata"
)

// createAssigned creates a topic with an explicit replica assignment and
// waits until every partition has a leader and broker 1 opened its logs
// of them.
func createAssigned(t *testing.T, c *Cluster, name string, assignment [][]int32, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.CreateTopicSpec(ctx, 1, metadata.TopicSpec{Name: name, Partitions: int32(len(assignment)),
		ReplicationFactor: int16(len(assignment[0])), Assignment: assignment, Configs: configs})
	c.WaitFor(20*time.Second, func() error {
		for p := range int32(len(assignment)) {
			if _, err := c.LeaderOf(name, p); err != nil {
				return err
			}
			if c.Broker(1).LogDirOf(name, p) == "" {
				return fmt.Errorf("broker 1 has no log of %s-%d yet", name, p)
			}
		}
		return nil
	})
}

// logDirsDoc is kafka-log-dirs --describe's JSON.
type logDirsDoc struct {
	Version int `json:"version"`
	Brokers []struct {
		Broker  int `json:"broker"`
		LogDirs []struct {
			LogDir     string  `json:"logDir"`
			Error      *string `json:"error"`
			Partitions []struct {
				Partition string `json:"partition"`
				Size      int64  `json:"size"`
				OffsetLag int64  `json:"offsetLag"`
				IsFuture  bool   `json:"isFuture"`
			} `json:"partitions"`
		} `json:"logDirs"`
	} `json:"brokers"`
}

// One of broker 1's two log directories fails (EIO, as its logs would
// report it): only the partitions in that directory go — their
// leadership to in-sync replicas, broker 1 out of their ISRs, a
// single-replica one offline (Metadata lists 1 as its offline replica) —
// while the partitions in its other directory keep broker 1 as leader
// and in-sync, and keep taking acks=all writes and serving reads. Apache
// Kafka 4.4's kafka-log-dirs shows both directories, the failed one with
// KafkaStorageException. A restart finds every partition in the
// directory it was in and brings the offline ones back. A restart with a
// directory unreadable creates none of its partitions empty elsewhere.
func TestFailedOneOfTwoLogDirs(t *testing.T) {
	t.Parallel()
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	c := NewCluster(t, Brokers(3), LogDirs(1, dirA, dirB))
	// One topic at a time: broker 1 places each topic's partitions on
	// the directory with the fewest, so two of each in each.
	createAssigned(t, c, "rep", [][]int32{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	createAssigned(t, c, "solo", [][]int32{{1}, {1}, {1}, {1}}, nil)
	in := map[string]map[string][]int32{dirA: {}, dirB: {}} // dir -> topic -> partitions
	for _, topic := range []string{"rep", "solo"} {
		for p := int32(0); p < 4; p++ {
			d := c.Broker(1).LogDirOf(topic, p)
			in[d][topic] = append(in[d][topic], p)
		}
		if len(in[dirA][topic]) != 2 || len(in[dirB][topic]) != 2 {
			t.Fatalf("%s placed unevenly over broker 1's directories: %v", topic, in)
		}
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 4; p++ {
		produceSync(t, cl, "rep", p, "before")
		produceSync(t, cl, "solo", p, "solo-before")
	}

	c.Broker(1).ReportStorageErrorIn(dirB, &os.PathError{Op: "read", Path: filepath.Join(dirB, "rep-1", "00000000000000000000.log"), Err: syscall.EIO})
	c.WaitFor(10*time.Second, func() error {
		for _, b := range c.Brokers() {
			img := b.Image()
			for _, p := range in[dirB]["rep"] {
				if mp, _ := img.Partition("rep", p); mp.Leader == 1 || mp.Leader < 0 || slices.Contains(mp.ISR, 1) {
					return fmt.Errorf("broker %d sees rep-%d (failed dir) led by %d, ISR %v", b.ID, p, mp.Leader, mp.ISR)
				}
			}
			for _, p := range in[dirB]["solo"] {
				if mp, _ := img.Partition("solo", p); mp.Leader != -1 {
					return fmt.Errorf("broker %d sees solo-%d (failed dir) led by %d, want offline", b.ID, p, mp.Leader)
				}
			}
		}
		return nil
	})
	// The other directory's partitions did not move.
	for _, b := range c.Brokers() {
		img := b.Image()
		for _, p := range in[dirA]["rep"] {
			if mp, _ := img.Partition("rep", p); mp.Leader != 1 || mp.LeaderEpoch != 0 || !slices.Contains(mp.ISR, 1) {
				t.Fatalf("broker %d sees rep-%d (writable dir) %+v", b.ID, p, mp)
			}
		}
		for _, p := range in[dirA]["solo"] {
			if mp, _ := img.Partition("solo", p); mp.Leader != 1 || mp.LeaderEpoch != 0 {
				t.Fatalf("broker %d sees solo-%d (writable dir) %+v", b.ID, p, mp)
			}
		}
	}
	if st, dst := c.Broker(1).Storage(), c.Broker(1).DirStorage(dirB); st != metadata.StorageOK || dst != metadata.StorageFailed {
		t.Fatalf("broker 1 storage %q, %s %q", st, dirB, dst)
	}
	// Metadata of its own (kadm's answers from the client's cache).
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"rep", "solo"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	md, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range md.Topics {
		for _, mp := range mt.Partitions {
			if slices.Contains(in[dirB][*mt.Topic], mp.Partition) {
				if !slices.Equal(mp.OfflineReplicas, []int32{1}) {
					t.Errorf("%s-%d (failed dir): offline replicas %v, want [1]", *mt.Topic, mp.Partition, mp.OfflineReplicas)
				}
			} else if len(mp.OfflineReplicas) != 0 || mp.Leader != 1 {
				t.Errorf("%s-%d (writable dir): leader %d, offline replicas %v", *mt.Topic, mp.Partition, mp.Leader, mp.OfflineReplicas)
			}
		}
	}
	for p := int32(0); p < 4; p++ {
		produceSync(t, cl, "rep", p, "during")
	}
	for _, p := range in[dirA]["solo"] {
		produceSync(t, cl, "solo", p, "solo-during")
	}

	// kafka-log-dirs against broker 1: both directories, the failed one
	// with Kafka's error and no partitions.
	run := kafkatools.ForTest(t, kafkatools.LogDirsCommand, c.Addrs()[0])
	out := run("--describe", "--broker-list", "1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "Querying brokers for log directories information" ||
		lines[1] != "Received log directory information from brokers 1" {
		t.Fatalf("kafka-log-dirs output:\n%s", out)
	}
	var doc logDirsDoc
	if err := json.Unmarshal([]byte(lines[2]), &doc); err != nil {
		t.Fatalf("kafka-log-dirs JSON: %v\n%s", err, out)
	}
	if doc.Version != 1 || len(doc.Brokers) != 1 || doc.Brokers[0].Broker != 1 || len(doc.Brokers[0].LogDirs) != 2 {
		t.Fatalf("kafka-log-dirs output:\n%s", out)
	}
	for _, d := range doc.Brokers[0].LogDirs {
		var names []string
		for _, p := range d.Partitions {
			names = append(names, p.Partition)
			if p.Size <= 0 || p.OffsetLag != 0 || p.IsFuture {
				t.Errorf("%s in %s: %+v", p.Partition, d.LogDir, p)
			}
		}
		sort.Strings(names)
		switch d.LogDir {
		case dirA:
			var want []string
			for _, topic := range []string{"rep", "solo"} {
				for _, p := range in[dirA][topic] {
					want = append(want, fmt.Sprintf("%s-%d", topic, p))
				}
			}
			if d.Error != nil || !slices.Equal(names, want) {
				t.Errorf("%s: error %v, partitions %v, want null and %v:\n%s", dirA, d.Error, names, want, out)
			}
		case dirB:
			if d.Error == nil || *d.Error != "org.apache.kafka.common.errors.KafkaStorageException" || len(names) != 0 {
				t.Errorf("%s (failed): error %v, partitions %v:\n%s", dirB, d.Error, names, out)
			}
		default:
			t.Errorf("unknown log dir %s:\n%s", d.LogDir, out)
		}
	}

	// Restarted, the directory readable again: each partition where it
	// was, the offline ones led by broker 1 again, every ISR full.
	c.Kill(1)
	c.Restart(1)
	waitDirBackOnOne(t, c, in[dirB]["solo"])
	for d, topics := range in {
		for topic, ps := range topics {
			for _, p := range ps {
				if got := c.Broker(1).LogDirOf(topic, p); got != d {
					t.Errorf("after the restart %s-%d is in %q, was in %s", topic, p, got, d)
				}
			}
		}
	}
	for p := int32(0); p < 4; p++ {
		if got := consumeAll(t, c, "rep", p, 2); !slices.Equal(got, []string{"before", "during"}) {
			t.Fatalf("rep-%d: %v", p, got)
		}
	}
	for _, p := range in[dirB]["solo"] {
		if got := consumeAll(t, c, "solo", p, 1); !slices.Equal(got, []string{"solo-before"}) {
			t.Fatalf("solo-%d: %v", p, got)
		}
	}
	for _, p := range in[dirA]["solo"] {
		if got := consumeAll(t, c, "solo", p, 2); !slices.Equal(got, []string{"solo-before", "solo-during"}) {
			t.Fatalf("solo-%d: %v", p, got)
		}
	}

	// Restarted with directory B unreadable (a file where it was): its
	// partitions are not created empty in A — solo's stay offline rather
	// than led by an empty replica, broker 1 stays out of rep's ISRs —
	// while A's serve. B back, a restart: everything as it was.
	c.Kill(1)
	if err := os.Rename(dirB, dirB+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dirB, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Restart(1)
	c.WaitFor(30*time.Second, func() error {
		if st := c.Broker(1).DirStorage(dirB); st != metadata.StorageFailed {
			return fmt.Errorf("%s unreadable at startup: %q", dirB, st)
		}
		for _, b := range c.Brokers() {
			img := b.Image()
			for _, p := range in[dirB]["solo"] {
				if mp, _ := img.Partition("solo", p); mp.Leader != -1 {
					return fmt.Errorf("broker %d sees solo-%d (unreadable dir) led by %d", b.ID, p, mp.Leader)
				}
			}
			for _, p := range in[dirB]["rep"] {
				if mp, _ := img.Partition("rep", p); mp.Leader == 1 || slices.Contains(mp.ISR, 1) {
					return fmt.Errorf("broker %d sees rep-%d (unreadable dir) led by %d, ISR %v", b.ID, p, mp.Leader, mp.ISR)
				}
			}
			for _, p := range in[dirA]["solo"] {
				if mp, _ := img.Partition("solo", p); mp.Leader != 1 {
					return fmt.Errorf("broker %d sees solo-%d (readable dir) led by %d", b.ID, p, mp.Leader)
				}
			}
		}
		return nil
	})
	for _, p := range in[dirA]["solo"] {
		produceSync(t, cl, "solo", p, "solo-after")
		if got := consumeAll(t, c, "solo", p, 3); !slices.Equal(got, []string{"solo-before", "solo-during", "solo-after"}) {
			t.Fatalf("solo-%d: %v", p, got)
		}
	}
	c.Kill(1)
	if err := os.Remove(dirB); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dirB+".away", dirB); err != nil {
		t.Fatal(err)
	}
	c.Restart(1)
	waitDirBackOnOne(t, c, in[dirB]["solo"])
	for _, p := range in[dirB]["solo"] {
		if got := consumeAll(t, c, "solo", p, 1); !slices.Equal(got, []string{"solo-before"}) {
			t.Fatalf("solo-%d after its directory came back: %v", p, got)
		}
	}
}

// waitDirBackOnOne waits until broker 1, restarted with its second log
// directory readable again, leads the solo partitions that live there
// (solo) and is back in the ISR of every rep partition.
func waitDirBackOnOne(t *testing.T, c *Cluster, solo []int32) {
	t.Helper()
	c.WaitFor(30*time.Second, func() error {
		for _, p := range solo {
			if l, err := c.LeaderOf("solo", p); err != nil || l != 1 {
				return fmt.Errorf("solo-%d leader %d (%v)", p, l, err)
			}
		}
		for p := int32(0); p < 4; p++ {
			if mp := c.Partition("rep", p); !slices.Contains(mp.ISR, 1) {
				return fmt.Errorf("rep-%d ISR %v without broker 1", p, mp.ISR)
			}
		}
		return nil
	})
}
