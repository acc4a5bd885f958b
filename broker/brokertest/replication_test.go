package brokertest

import (
	"context"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceSync produces values to topic/partition with the client's acks
// and fails the test on any error.
func produceSync(t *testing.T, cl *kgo.Client, topic string, p int32, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing to %s-%d: %v", topic, p, err)
	}
}

// consumeAll reads topic/partition from the start until it has n records.
func consumeAll(t *testing.T, c *Cluster, topic string, p int32, n int) []string {
	t.Helper()
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s-%d: got %d of %d records: %v", topic, p, len(out), n, out)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

func seq(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

// rawProduce sends one Produce request straight to broker id and returns
// the partition's error code, failing the test if it cannot be sent.
func rawProduce(t *testing.T, c *Cluster, id int32, topic string, p int32, acks int16, value string) int16 {
	t.Helper()
	code, err := tryProduce(t, c, id, topic, p, acks, value)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func tryProduce(t *testing.T, c *Cluster, id int32, topic string, p int32, acks int16, value string) (int16, error) {
	t.Helper()
	// kgo sends a Produce with the client's acks, whatever the request says.
	a := kgo.AllISRAcks()
	if acks == 1 {
		a = kgo.LeaderAck()
	}
	cl := c.Client(kgo.RequiredAcks(a), kgo.DisableIdempotentWrite())
	defer cl.Close()
	rec := kgo.Record{Value: []byte(value)}
	batch := batchOf(t, rec)
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("produce to broker %d: %w", id, err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, nil
}

// batchOf encodes one uncompressed record batch.
func batchOf(t *testing.T, r kgo.Record) []byte {
	t.Helper()
	rec := kmsg.NewRecord()
	rec.Value = r.Value
	raw := rec.AppendTo(nil)
	// The record's length prefix: AppendTo writes Length as given, so
	// compute it from the encoding with a zero length (one varint byte).
	rec.Length = int32(len(raw) - 1)
	raw = rec.AppendTo(nil)
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: 0, FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: raw,
	}
	b.Length = int32(49 + len(raw))
	out := b.AppendTo(nil)
	crc := crc32c(out[21:])
	out[17], out[18], out[19], out[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return out
}

func TestLeaderElectionAfterLeaderLoss(t *testing.T) {
	t.Parallel()
	leaderLossLosesNothing(t, NewCluster(t, Brokers(3)), "elect")
}

// leaderLossLosesNothing kills the leader of a replication-factor-3
// topic after acks=all produces: a new leader from the ISR takes over
// with a higher epoch, nothing acknowledged is lost, and the old leader
// returns as a follower and rejoins the ISR. (TLS clusters run it too.)
func leaderLossLosesNothing(t *testing.T, c *Cluster, topic string) {
	c.CreateTopic(topic, 3, 3, nil)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, cl, topic, 0, seq("a", 0, 50)...)
	old, err := c.LeaderOf(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := c.Partition(topic, 0)
	c.Kill(old)
	var leader int32
	c.WaitFor(20*time.Second, func() error {
		var err error
		if leader, err = c.LeaderOf(topic, 0); err != nil {
			return err
		}
		if leader == old {
			return fmt.Errorf("still led by %d", old)
		}
		return nil
	})
	after := c.Partition(topic, 0)
	if after.LeaderEpoch <= before.LeaderEpoch {
		t.Fatalf("leader epoch %d after election, was %d", after.LeaderEpoch, before.LeaderEpoch)
	}
	if !slices.Contains(before.ISR, leader) || slices.Contains(after.ISR, old) {
		t.Fatalf("new leader %d not from the old ISR %v, or new ISR %v keeps the dead %d", leader, before.ISR, after.ISR, old)
	}
	produceSync(t, cl, topic, 0, seq("a", 50, 100)...)
	if got := consumeAll(t, c, topic, 0, 100); !slices.Equal(got, seq("a", 0, 100)) {
		t.Fatalf("records after failover: %v", got)
	}
	// The old leader returns as a follower and rejoins the ISR.
	c.Restart(old)
	c.WaitFor(20*time.Second, func() error {
		if isr := c.Partition(topic, 0).ISR; !slices.Contains(isr, old) {
			return fmt.Errorf("ISR %v without returning broker %d", isr, old)
		}
		return nil
	})
	c.WaitFor(20*time.Second, func() error {
		l, err := c.LeaderOf(topic, 0)
		if err != nil {
			return err
		}
		if l != leader {
			t.Fatalf("leadership moved to %d without preferred election", l)
		}
		return nil
	})
}

func TestISRShrinksAndExpandsAndHWFollows(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, Brokers(3), LagTime(500*time.Millisecond))
	c.CreateTopic("isr", 1, 3, nil)
	leader, err := c.LeaderOf("isr", 0)
	if err != nil {
		t.Fatal(err)
	}
	reps := c.Partition("isr", 0).Replicas
	var slow int32
	for _, r := range reps {
		if r != leader {
			slow = r
			break
		}
	}
	acks1 := c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, acks1, "isr", 0, seq("r", 0, 10)...)
	ll := c.Broker(leader).Log("isr", 0)
	c.WaitFor(10*time.Second, func() error {
		if hw := ll.HighWatermark(); hw != 10 {
			return fmt.Errorf("HW %d, want 10 once every ISR member has the records", hw)
		}
		return nil
	})
	// The slow follower's fetches vanish: the HW stops at what it has.
	c.Network().Drop(slow, leader, Kafka)
	produceSync(t, acks1, "isr", 0, seq("r", 10, 20)...)
	time.Sleep(100 * time.Millisecond) // no event to wait for: the HW must NOT move
	if hw := ll.HighWatermark(); hw != 10 {
		t.Fatalf("HW %d moved past the slow ISR member's 10", hw)
	}
	// After replica.lag.time.max.ms it leaves the ISR and the HW moves on.
	c.WaitFor(10*time.Second, func() error {
		if isr := c.Partition("isr", 0).ISR; slices.Contains(isr, slow) || len(isr) != 2 {
			return fmt.Errorf("ISR %v still has the slow %d", isr, slow)
		}
		if hw := ll.HighWatermark(); hw != 20 {
			return fmt.Errorf("HW %d after the shrink, want 20", hw)
		}
		return nil
	})
	// acks=all works with the two remaining (min.insync.replicas=1).
	all := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, all, "isr", 0, seq("r", 20, 30)...)
	// Healed, it catches up and rejoins; the HW keeps counting it.
	c.Network().Heal(slow, leader, Kafka)
	c.WaitFor(10*time.Second, func() error {
		if isr := c.Partition("isr", 0).ISR; !slices.Contains(isr, slow) {
			return fmt.Errorf("ISR %v without the caught-up %d", isr, slow)
		}
		if got := c.Broker(leader).ISR("isr", 0); len(got) != 3 {
			return fmt.Errorf("leader's ISR %v", got)
		}
		return nil
	})
	if end := c.Broker(slow).Log("isr", 0).EndOffset(); end != 30 {
		t.Fatalf("rejoined follower has log end %d, want 30", end)
	}
	if got := consumeAll(t, c, "isr", 0, 30); !slices.Equal(got, seq("r", 0, 30)) {
		t.Fatalf("records: %v", got)
	}
}

func TestAcksAllRefusedBelowMinISR(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, Brokers(3))
	c.CreateTopic("minisr", 1, 3, map[string]string{"min.insync.replicas": "3"})
	leader, err := c.LeaderOf("minisr", 0)
	if err != nil {
		t.Fatal(err)
	}
	if code := rawProduce(t, c, leader, "minisr", 0, -1, "full ISR"); code != 0 {
		t.Fatalf("acks=all with a full ISR: %v", kerr.ErrorForCode(code))
	}
	var victim int32
	for _, r := range c.Partition("minisr", 0).Replicas {
		if r != leader {
			victim = r
		}
	}
	c.Kill(victim)
	c.WaitFor(20*time.Second, func() error {
		if isr := c.Broker(leader).ISR("minisr", 0); len(isr) != 2 {
			return fmt.Errorf("leader's ISR %v", isr)
		}
		return nil
	})
	// Retriable answers (the partition reloading on the leader) are "not yet".
	c.WaitFor(20*time.Second, func() error {
		code := rawProduce(t, c, leader, "minisr", 0, -1, "two of three")
		if code == kerr.NotEnoughReplicas.Code {
			return nil
		}
		if err := kerr.ErrorForCode(code); code == 0 || !kerr.IsRetriable(err) {
			t.Fatalf("acks=all with ISR 2 < min.insync.replicas 3: %v, want NOT_ENOUGH_REPLICAS", err)
		}
		return fmt.Errorf("acks=all with ISR 2 < min.insync.replicas 3: %v so far", kerr.ErrorForCode(code))
	})
	if code := rawProduce(t, c, leader, "minisr", 0, 1, "acks=1 still works"); code != 0 {
		t.Fatalf("acks=1: %v", kerr.ErrorForCode(code))
	}
	// A broker that does not lead the partition refuses it.
	for _, b := range c.Brokers() {
		if b.ID != leader && b.Running() {
			if code := rawProduce(t, c, b.ID, "minisr", 0, 1, "wrong broker"); code != kerr.NotLeaderForPartition.Code {
				t.Fatalf("produce at non-leader %d: %v, want NOT_LEADER_OR_FOLLOWER", b.ID, kerr.ErrorForCode(code))
			}
		}
	}
	c.Restart(victim)
	c.WaitFor(20*time.Second, func() error {
		if code, err := tryProduce(t, c, leader, "minisr", 0, -1, "healed"); err != nil || code != 0 {
			return fmt.Errorf("acks=all after the broker returned: %v %v", err, kerr.ErrorForCode(code))
		}
		return nil
	})
	if got := consumeAll(t, c, "minisr", 0, 3); !slices.Equal(got, []string{"full ISR", "acks=1 still works", "healed"}) {
		t.Fatalf("records: %q", got)
	}
}

func TestMetadataConvergesAfterBrokerLossAndReturn(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, Brokers(3))
	c.CreateTopic("conv", 6, 2, nil)
	const gone = 3
	c.Kill(gone)
	check := func(wantLive int, allowGone bool) error {
		for _, b := range c.Brokers() {
			if !b.Running() {
				continue
			}
			im := b.Image()
			if n := len(im.LiveBrokers()); n != wantLive {
				return fmt.Errorf("broker %d sees %d live brokers", b.ID, n)
			}
			tp, _ := im.Topic("conv")
			for i, p := range tp.Partitions {
				if p.Leader < 0 || (!allowGone && p.Leader == gone) {
					return fmt.Errorf("broker %d: conv-%d led by %d", b.ID, i, p.Leader)
				}
				if !allowGone && slices.Contains(p.ISR, gone) {
					return fmt.Errorf("broker %d: conv-%d ISR %v", b.ID, i, p.ISR)
				}
				if allowGone && len(p.ISR) != 2 {
					return fmt.Errorf("broker %d: conv-%d ISR %v not full yet", b.ID, i, p.ISR)
				}
			}
			// The Metadata API answers from that broker's view.
			cl := c.Client(kgo.SeedBrokers(b.Addr()))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.Broker(int(b.ID)))
			cancel()
			cl.Close()
			if err != nil {
				return err
			}
			if len(resp.Brokers) != wantLive {
				return fmt.Errorf("Metadata from broker %d lists %d brokers", b.ID, len(resp.Brokers))
			}
			if resp.ControllerID < 1 || (!allowGone && resp.ControllerID == gone) {
				return fmt.Errorf("Metadata from broker %d: controller %d", b.ID, resp.ControllerID)
			}
			// DescribeCluster agrees with Metadata: the live brokers and
			// the real controller, not the broker answering.
			cl = c.Client(kgo.SeedBrokers(b.Addr()))
			ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
			dresp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl.Broker(int(b.ID)))
			cancel()
			cl.Close()
			if err != nil {
				return err
			}
			if len(dresp.Brokers) != wantLive {
				return fmt.Errorf("DescribeCluster from broker %d lists %d brokers", b.ID, len(dresp.Brokers))
			}
			if dresp.ControllerID != resp.ControllerID {
				return fmt.Errorf("DescribeCluster from broker %d: controller %d, Metadata says %d", b.ID, dresp.ControllerID, resp.ControllerID)
			}
		}
		return nil
	}
	c.WaitFor(20*time.Second, func() error { return check(2, false) })
	c.Restart(gone)
	c.WaitFor(30*time.Second, func() error { return check(3, true) })
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// TestDeleteRecordsOnlyOnLeader: DeleteRecords moves the log start on the
// partition's leader; a follower answers NOT_LEADER_FOR_PARTITION.
func TestDeleteRecordsOnlyOnLeader(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, Brokers(3))
	c.CreateTopic("dr", 1, 3, nil)
	leader, err := c.LeaderOf("dr", 0)
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Client()
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dr", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	del := func(id int32) int16 {
		req := kmsg.NewPtrDeleteRecordsRequest()
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "dr"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 5
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 5000
		resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, b := range c.Brokers() {
		if b.ID == leader {
			continue
		}
		if code := del(b.ID); code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("DeleteRecords on follower %d: error %d, want NOT_LEADER_FOR_PARTITION", b.ID, code)
		}
	}
	if code := del(leader); code != 0 {
		t.Fatalf("DeleteRecords on leader %d: error %d", leader, code)
	}
}
