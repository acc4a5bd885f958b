package brokertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/smallfs"
	"weir/broker/metadata"
)

// What each request gets from a broker whose log disk is full and no
// other replica can take over (one broker): produce KAFKA_STORAGE_ERROR,
// reads work, CreateTopics works (its produces then fail the same way),
// OffsetCommit NOT_COORDINATOR (Kafka's mapping of a failed offsets
// append); writes resume as soon as space is freed, and the broker says
// its disk is writable again within a probe interval.
func TestDiskFullErrorCodes(t *testing.T) {
	t.Parallel()
	fs := smallfs.Mount(t, 8<<20)
	c := NewCluster(t, Brokers(1), LogDir(1, fs.Dir))
	const parts = 10
	c.CreateTopic("codes", parts, 1, nil)
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, cl, "codes", 0, seq("before-", 0, 5)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	// The offsets topic exists and the group has a coordinator.
	if err := adm.CommitAllOffsets(ctx, "g", kadm.OffsetsFromRecords(kgo.Record{Topic: "codes", Partition: 0, Offset: 1})); err != nil {
		t.Fatalf("commit before the disk is full: %v", err)
	}

	fs.Fill(0)
	big := strings.Repeat("x", 64<<10) // needs new pages whatever the last one holds
	if code := rawProduce(t, c, 1, "codes", 0, 1, big); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce acks=1 on a full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if code := rawProduce(t, c, 1, "codes", 1, -1, big); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce acks=all on a full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if st := c.Broker(1).Storage(); st != metadata.StorageFull {
		t.Fatalf("log directory %q after ENOSPC", st)
	}
	// Reads work: Fetch and ListOffsets.
	if got := consumeAll(t, c, "codes", 0, 5); !slices.Equal(got, seq("before-", 0, 5)) {
		t.Fatalf("read back %v", got)
	}
	ends, err := adm.ListEndOffsets(ctx, "codes")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("codes", 0); o.Err != nil || o.Offset != 5 {
		t.Fatalf("end offset %d (%v), want 5", o.Offset, o.Err)
	}
	// CreateTopics succeeds (the metadata is elsewhere); the new
	// partition's produces fail like the others.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "codes2"); err != nil {
		t.Fatalf("CreateTopics on a full disk: %v", err)
	}
	c.WaitFor(10*time.Second, func() error { _, err := c.LeaderOf("codes2", 0); return err })
	if code := rawProduce(t, c, 1, "codes2", 0, 1, big); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to a topic created on a full disk: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	// OffsetCommit: ten partitions with 4,000 bytes of metadata each.
	if code := rawCommit(t, cl, "g", "codes", parts, strings.Repeat("m", 4000)); code != kerr.NotCoordinator.Code {
		t.Fatalf("OffsetCommit on a full disk: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}

	// Space freed: writes succeed at once, the state follows.
	fs.Free()
	if code := rawProduce(t, c, 1, "codes", 0, 1, big); code != 0 {
		t.Fatalf("produce after space was freed: %v", kerr.ErrorForCode(code))
	}
	// The coordinator reloads the group partition whose append failed; it
	// answers COORDINATOR_LOAD_IN_PROGRESS (retriable) until it has.
	c.WaitFor(10*time.Second, func() error {
		code := rawCommit(t, cl, "g", "codes", parts, strings.Repeat("m", 4000))
		if code == kerr.CoordinatorLoadInProgress.Code {
			return kerr.ErrorForCode(code)
		}
		if code != 0 {
			t.Fatalf("OffsetCommit after space was freed: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	c.WaitFor(10*time.Second, func() error {
		if st := c.Broker(1).Storage(); st != metadata.StorageOK {
			return fmt.Errorf("log directory %q after space was freed", st)
		}
		return nil
	})
	if got := consumeAll(t, c, "codes", 0, 6); !slices.Equal(got[:5], seq("before-", 0, 5)) || got[5] != big {
		t.Fatalf("after the full disk, partition 0 holds %d records", len(got))
	}
}

// rawCommit sends one OffsetCommit (simple commit, generation -1) for
// partitions 0..parts-1 of topic straight to broker 1 (the only one) and
// returns the first partition's error code; every partition must agree.
func rawCommit(t *testing.T, cl *kgo.Client, group, topic string, parts int, md string) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p := 0; p < parts; p++ {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Offset = 1
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Broker(1).Request(ctx, req)
	if err != nil {
		t.Fatalf("OffsetCommit: %v", err)
	}
	ps := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions
	for _, p := range ps[1:] {
		if p.ErrorCode != ps[0].ErrorCode {
			t.Fatalf("OffsetCommit partitions disagree: %v", ps)
		}
	}
	return ps[0].ErrorCode
}
