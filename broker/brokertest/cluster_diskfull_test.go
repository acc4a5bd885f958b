package brokertest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/smallfs"
	"weir/broker/metadata"
	"weir/internal/testkit"
)

// loader produces "p<P>-<seq>" records (1 KiB each, padded in a header)
// to every partition of a topic with an idempotent acks=all producer and
// records which sequence numbers were acknowledged.
type loader struct {
	t     *testing.T
	cl    *kgo.Client
	topic string

	mu    sync.Mutex
	acked [][]int
	errs  int
	next  []int

	stop chan struct{}
	wg   sync.WaitGroup
}

// loaderOpts are the producer options of a loader's client.
func loaderOpts() []kgo.Opt {
	return []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30 * time.Second), kgo.MaxBufferedRecords(256),
		kgo.ProducerBatchCompression(kgo.NoCompression())} // 1 KiB on disk per record
}

func startLoader(t *testing.T, cl *kgo.Client, topic string, parts int) *loader {
	l := &loader{t: t, topic: topic, acked: make([][]int, parts), next: make([]int, parts), stop: make(chan struct{}), cl: cl}
	pad := make([]byte, 1000)
	for p := 0; p < parts; p++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			inflight := make(chan struct{}, 32)
			for {
				select {
				case <-l.stop:
					for range cap(inflight) {
						inflight <- struct{}{} // wait for the callbacks
					}
					return
				case inflight <- struct{}{}:
				}
				l.mu.Lock()
				seq := l.next[p]
				l.next[p]++
				l.mu.Unlock()
				r := &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "p%d-%d", p, seq),
					Headers: []kgo.RecordHeader{{Key: "pad", Value: pad}}}
				l.cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
					l.mu.Lock()
					if err == nil {
						l.acked[p] = append(l.acked[p], seq)
					} else {
						l.errs++
					}
					l.mu.Unlock()
					<-inflight
				})
			}
		}()
	}
	return l
}

// count returns how many records were acknowledged so far.
func (l *loader) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.acked {
		n += len(a)
	}
	return n
}

// waitFor waits until n more records than now are acknowledged.
func (l *loader) waitMore(n int, d time.Duration) {
	l.t.Helper()
	want := l.count() + n
	testkit.CheckFor(l.t, d, func() error {
		if got := l.count(); got < want {
			return fmt.Errorf("%d records acknowledged, want %d", got, want)
		}
		return nil
	})
}

func (l *loader) finish() [][]int {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([][]int, len(l.acked))
	for p, a := range l.acked {
		out[p] = slices.Clone(a)
	}
	return out
}

// The disk-full test on a 3-broker cluster: broker 1's partition logs are
// on a small tmpfs that fills up while idempotent producers write to all
// partitions. The full broker hands its leaderships to in-sync replicas
// and leaves the ISRs at once (not after replica.lag.time.max.ms),
// producers keep writing through the others; once space is freed it
// rejoins every ISR; nothing acknowledged is lost or duplicated.
func TestDiskFullBrokerHandsOverLeadership(t *testing.T) {
	t.Parallel()
	fs := smallfs.Mount(t, 64<<20) // room for what the producers write after space is freed
	// A long lag time: leaving the ISRs must come from the disk report,
	// not from the lag check.
	c := NewCluster(t, Brokers(3), LogDir(1, fs.Dir), LagTime(30*time.Second))
	const parts = 3
	c.CreateTopic("full", parts, 3, map[string]string{"min.insync.replicas": "2", "segment.bytes": "1048576"})
	leads1 := 0
	for p := int32(0); p < parts; p++ {
		if c.Partition("full", p).Leader == 1 {
			leads1++
		}
	}
	if leads1 == 0 {
		t.Fatal("broker 1 leads no partition: the test would show nothing")
	}

	fs.Fill(3 << 20) // about 3,000 records' room on broker 1: a segment roll each
	ld := startLoader(t, c.Client(loaderOpts()...), "full", parts)
	c.WaitFor(30*time.Second, func() error {
		if st := c.Broker(1).Storage(); st != metadata.StorageFull {
			return fmt.Errorf("broker 1's log directory is %q (%d records acknowledged)", st, ld.count())
		}
		return nil
	})
	filled := time.Now()
	c.WaitFor(10*time.Second, func() error {
		for _, b := range c.Brokers() {
			img := b.Image()
			if !img.Live(1) {
				return fmt.Errorf("broker %d sees broker 1 fenced: it must stay live", b.ID)
			}
			for p := int32(0); p < parts; p++ {
				mp, _ := img.Partition("full", p)
				if mp.Leader == 1 || slices.Contains(mp.ISR, 1) {
					return fmt.Errorf("broker %d sees full-%d led by %d with ISR %v", b.ID, p, mp.Leader, mp.ISR)
				}
			}
		}
		return nil
	})
	t.Logf("broker 1 full after %d records; out of every ISR and leadership %s later", ld.count(), time.Since(filled).Round(time.Millisecond))
	// Producers keep writing through brokers 2 and 3 (acks=all, ISR of 2).
	ld.waitMore(1500, 30*time.Second)
	if c.Broker(1).Storage() != metadata.StorageFull {
		t.Fatal("broker 1 left the full state while its disk is still full")
	}

	// Space freed: broker 1 takes writes again and rejoins every ISR,
	// while the producers go on.
	fs.Free()
	c.WaitFor(30*time.Second, func() error {
		if st := c.Broker(1).Storage(); st != metadata.StorageOK {
			return fmt.Errorf("broker 1's log directory is %q after space was freed", st)
		}
		for p := int32(0); p < parts; p++ {
			if mp := c.Partition("full", p); !slices.Contains(mp.ISR, 1) {
				return fmt.Errorf("full-%d ISR %v without broker 1", p, mp.ISR)
			}
		}
		return nil
	})
	ld.waitMore(300, 30*time.Second)
	acked := ld.finish()

	// Nothing acknowledged is lost, nothing is duplicated; broker 1's copy
	// ends where the leader's does.
	content := readAllPartitions(t, c.Addrs(), "full", parts)
	total := 0
	for p := 0; p < parts; p++ {
		checkPartition(t, p, content[p], acked[p])
		total += len(acked[p])
	}
	c.WaitFor(20*time.Second, func() error {
		for p := int32(0); p < parts; p++ {
			leader, err := c.LeaderOf("full", p)
			if err != nil {
				return err
			}
			want := c.Broker(leader).Log("full", p).EndOffset()
			if got := c.Broker(1).Log("full", p).EndOffset(); got != want {
				return fmt.Errorf("full-%d: broker 1 log end %d, leader %d's %d", p, got, leader, want)
			}
		}
		return nil
	})
	t.Logf("%d records acknowledged, %d produce errors, all read back once", total, ld.errs)
}

// An I/O error fails broker 1's log directory (Kafka's offline log dir):
// its leaderships go to in-sync replicas, it leaves the ISRs, a partition
// only it holds goes offline (Metadata lists it as an offline replica);
// nothing brings it back but a restart, after which it leads its
// partition again and rejoins the ISRs. (A tmpfs cannot fail with EIO:
// the error is handed to the broker's monitor as its logs would.)
func TestFailedLogDirTakesReplicasOffline(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, Brokers(3))
	c.CreateTopic("eio", 3, 3, map[string]string{"min.insync.replicas": "2"})
	c.CreateTopic("solo", 3, 1, nil)
	var solo int32 = -1
	for p := int32(0); p < 3; p++ {
		if c.Partition("solo", p).Leader == 1 {
			solo = p
		}
	}
	if solo < 0 {
		t.Fatal("no single-replica partition on broker 1")
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := int32(0); p < 3; p++ {
		produceSync(t, cl, "eio", p, "before")
	}
	produceSync(t, cl, "solo", solo, "solo-before")

	c.Broker(1).ReportStorageError(&os.PathError{Op: "read", Path: "00000000000000000000.log", Err: syscall.EIO})
	c.WaitFor(10*time.Second, func() error {
		for _, b := range c.Brokers() {
			img := b.Image()
			for p := int32(0); p < 3; p++ {
				mp, _ := img.Partition("eio", p)
				if mp.Leader == 1 || slices.Contains(mp.ISR, 1) {
					return fmt.Errorf("broker %d sees eio-%d led by %d, ISR %v", b.ID, p, mp.Leader, mp.ISR)
				}
			}
			if mp, _ := img.Partition("solo", solo); mp.Leader != -1 {
				return fmt.Errorf("broker %d sees solo-%d led by %d, want offline", b.ID, solo, mp.Leader)
			}
		}
		return nil
	})
	// A Metadata request of its own: kadm's Metadata answers from the
	// client's cache, which holds what the produce above saw.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("solo")
	req.Topics = append(req.Topics, rt)
	md, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Topics) != 1 || int(solo) >= len(md.Topics[0].Partitions) {
		t.Fatalf("Metadata for solo: %+v", md.Topics)
	}
	pd := md.Topics[0].Partitions[solo]
	if !slices.Equal(pd.OfflineReplicas, []int32{1}) || pd.Leader != -1 || pd.ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("Metadata for solo-%d: leader %d, offline replicas %v, error %d", solo, pd.Leader, pd.OfflineReplicas, pd.ErrorCode)
	}
	for p := int32(0); p < 3; p++ {
		produceSync(t, cl, "eio", p, "during")
	}
	if st := c.Broker(1).Storage(); st != metadata.StorageFailed {
		t.Fatalf("broker 1's log directory %q", st)
	}

	c.Kill(1)
	c.Restart(1)
	c.WaitFor(30*time.Second, func() error {
		if l, err := c.LeaderOf("solo", solo); err != nil || l != 1 {
			return fmt.Errorf("solo-%d leader %d (%v)", solo, l, err)
		}
		for p := int32(0); p < 3; p++ {
			if mp := c.Partition("eio", p); !slices.Contains(mp.ISR, 1) {
				return fmt.Errorf("eio-%d ISR %v without broker 1", p, mp.ISR)
			}
		}
		return nil
	})
	if got := consumeAll(t, c, "solo", solo, 1); got[0] != "solo-before" {
		t.Fatalf("solo-%d after the restart: %v", solo, got)
	}
	for p := int32(0); p < 3; p++ {
		if got := consumeAll(t, c, "eio", p, 2); !slices.Equal(got, []string{"before", "during"}) {
			t.Fatalf("eio-%d: %v", p, got)
		}
	}
}
