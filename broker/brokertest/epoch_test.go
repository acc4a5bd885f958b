package brokertest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/log"
)

// logValues reads a partition's log on one broker directly (every record,
// committed or not).
func logValues(t *testing.T, l *log.Log) []string {
	t.Helper()
	out, err := tryLogValues(l)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryLogValues is logValues for a log that may change while it is read
// (a follower truncating): an error means "not yet" to a polling test.
func tryLogValues(l *log.Log) ([]string, error) {
	var out []string
	for off := l.StartOffset(); off < l.EndOffset(); {
		sec, err := l.Read(off, 1<<20, l.EndOffset())
		if err != nil {
			return nil, err
		}
		b, err := sec.Bytes()
		sec.Release()
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			break
		}
		for len(b) > 0 {
			h, err := log.ParseBatchHeader(b)
			if err != nil {
				return nil, err
			}
			vals, err := batchValues(b[:h.Size()])
			if err != nil {
				return nil, err
			}
			out = append(out, vals...)
			b = b[h.Size():]
			off = h.LastOffset() + 1
		}
	}
	return out, nil
}

// storedHW reads the high watermark a stopped broker checkpointed.
func storedHW(t *testing.T, b *Broker, topic string, p int32) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.DataDir(), fmt.Sprintf("%s-%d", topic, p), "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(ln, "high-watermark "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatalf("no high watermark in %s", data)
	return 0
}

// twoReplicas creates a topic with one partition on two brokers and
// returns its leader and follower.
func twoReplicas(t *testing.T, c *Cluster, topic string) (leader, follower int32) {
	t.Helper()
	c.CreateTopic(topic, 1, 2, nil)
	leader, err := c.LeaderOf(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Partition(topic, 0).Replicas {
		if r != leader {
			follower = r
		}
	}
	c.WaitFor(10*time.Second, func() error {
		if isr := c.Broker(leader).ISR(topic, 0); len(isr) != 2 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	})
	return leader, follower
}

// KIP-101 case 1: a follower that restarts with a high watermark behind
// its log end must not truncate to it: the records after it may be
// committed (acknowledged with acks=all) and the follower may become the
// only copy. Truncating by leader epoch keeps them.
func TestKIP101RestartedFollowerKeepsCommittedTail(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts brokers of a three-node cluster")
	}
	t.Parallel()
	c := NewCluster(t, Brokers(3), LagTime(30*time.Second))
	a, b := twoReplicas(t, c, "kip101a")
	all := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, all, "kip101a", 0, "m0")
	// The follower learns the new HW only with its next fetch response
	// (up to replica.fetch.wait.max.ms later): stop it right after the
	// acknowledgement, while its HW is behind its log end.
	produceSync(t, all, "kip101a", 0, "m1")
	c.Kill(b)
	if hw := storedHW(t, c.Broker(b), "kip101a", 0); hw >= 2 {
		t.Skipf("the follower learned the HW (%d) before it stopped; the case needs it behind", hw)
	}
	// Let the controller fence it (it leaves the ISR) before it returns,
	// so the ISR seen below is the one it rejoined.
	c.WaitFor(20*time.Second, func() error {
		if c.Broker(a).Image().Live(b) {
			return fmt.Errorf("broker %d not fenced yet", b)
		}
		return nil
	})
	c.Restart(b)
	c.WaitFor(20*time.Second, func() error {
		if isr := c.Broker(a).ISR("kip101a", 0); len(isr) != 2 {
			return fmt.Errorf("leader's ISR %v without the restarted follower", isr)
		}
		return nil
	})
	// The old leader goes: the follower is now the only copy.
	c.Kill(a)
	c.WaitFor(20*time.Second, func() error {
		l, err := c.LeaderOf("kip101a", 0)
		if err != nil {
			return err
		}
		if l != b {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	if got := consumeAll(t, c, "kip101a", 0, 2); !slices.Equal(got, []string{"m0", "m1"}) {
		t.Fatalf("acknowledged records after the failover: %v", got)
	}
}

// KIP-101 case 2: a leader that wrote a record no follower has (acks=1),
// then lost leadership, must drop that record when it returns, even
// though its log holds as many records as the new leader's: truncating
// to the high watermark would keep it (logs diverge); the epoch says it.
func TestKIP101ReturningLeaderDropsDivergentTail(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, Brokers(3), LagTime(30*time.Second))
	a, b := twoReplicas(t, c, "kip101b")
	all := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, all, "kip101b", 0, "m0")
	c.WaitFor(10*time.Second, func() error {
		if hw := c.Broker(b).Log("kip101b", 0).HighWatermark(); hw != 1 {
			return fmt.Errorf("follower HW %d", hw)
		}
		return nil
	})
	// The follower stops fetching; the leader takes m1 with acks=1.
	c.Network().Drop(b, a, Kafka)
	one := c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, one, "kip101b", 0, "m1-divergent")
	if got := logValues(t, c.Broker(a).Log("kip101b", 0)); !slices.Equal(got, []string{"m0", "m1-divergent"}) {
		t.Fatalf("leader log %v", got)
	}
	c.Kill(a)
	c.Network().Heal(b, a, Kafka)
	c.WaitFor(20*time.Second, func() error {
		l, err := c.LeaderOf("kip101b", 0)
		if err != nil {
			return err
		}
		if l != b {
			return fmt.Errorf("leader %d", l)
		}
		return nil
	})
	produceSync(t, one, "kip101b", 0, "m2")
	// Same length on both: [m0 m1-divergent] vs [m0 m2].
	c.Restart(a)
	c.WaitFor(20*time.Second, func() error {
		l := c.Broker(a).Log("kip101b", 0)
		if l == nil {
			return fmt.Errorf("no log yet")
		}
		got, err := tryLogValues(l)
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{"m0", "m2"}) {
			return fmt.Errorf("returning leader's log %v", got)
		}
		return nil
	})
	epochs := c.Broker(a).Log("kip101b", 0).Epochs()
	if want := c.Broker(b).Log("kip101b", 0).Epochs(); !slices.Equal(epochs, want) {
		t.Fatalf("epoch caches differ: %v vs leader %v", epochs, want)
	}
	if got := consumeAll(t, c, "kip101b", 0, 2); !slices.Equal(got, []string{"m0", "m2"}) {
		t.Fatalf("consumed %v", got)
	}
}

// batchValues returns the values of an uncompressed record batch.
func batchValues(b []byte) ([]string, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return nil, err
	}
	if rb.Attributes&0x07 != 0 {
		return nil, fmt.Errorf("compressed batch (codec %d)", rb.Attributes&0x07)
	}
	var out []string
	raw := rb.Records
	for i := int32(0); i < rb.NumRecords; i++ {
		l, n := binary.Varint(raw)
		if n <= 0 || int(l) > len(raw)-n {
			return nil, fmt.Errorf("bad record length")
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:n+int(l)]); err != nil {
			return nil, err
		}
		out = append(out, string(r.Value))
		raw = raw[n+int(l):]
	}
	return out, nil
}
