package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/group"
	"weir/internal/testkit"
)

// TestTxnOffsetsThroughMarkers drives the group coordinator's side of
// transactional offsets over the real __consumer_offsets log: the
// coordinator appends a transactional batch (coordinator origin, no
// sequence), WriteTxnMarkersLocal appends the marker and calls
// groupTxnMarker; committed offsets move only on a commit marker, and a
// restarted broker replays the same (an open transaction stays pending).
// The transaction coordinator is not involved: the producer is verified
// by the caller of Coordinator.TxnCommit in production.
func TestTxnOffsetsThroughMarkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := startBrokerIn(t, dir)
	if err := b.srv.SetGroupConfig(testGroupConfig()); err != nil {
		t.Fatal(err)
	}
	createTopic(t, b, "src", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	coord, err := b.srv.groups()
	if err != nil {
		t.Fatal(err)
	}
	if e := coord.CoordinatorFor("tg"); e != nil {
		t.Fatal(e)
	}
	p := group.PartitionFor("tg", testGroupConfig().OffsetsTopicPartitions)

	commit := func(coord *group.Coordinator, pid int64, epoch int16, part int32, off int64) {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 4
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", "tg", pid, epoch
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = part, off, -1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "src", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
		resp, err := coord.TxnCommit(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("TxnCommit pid %d: %v", pid, kerr.ErrorForCode(c))
		}
	}
	marker := func(srv *Server, pid int64, epoch int16, committed bool) {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, committed
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: group.OffsetsTopic, Partitions: []int32{p}}}
		req.Markers = append(req.Markers, m)
		resp := srv.WriteTxnMarkersLocal(ctx, req)
		if c := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; c != 0 {
			t.Fatalf("marker pid %d: %v", pid, kerr.ErrorForCode(c))
		}
	}
	fetch := func(coord *group.Coordinator, stable bool) string {
		t.Helper()
		got, e := coord.FetchOffsets("tg", []kmsg.OffsetFetchRequestTopic{{Topic: "src", Partitions: []int32{0, 1}}}, stable)
		if e != nil {
			return e.Message
		}
		var s string
		for _, rp := range got[0].Partitions {
			if rp.ErrorCode != 0 {
				s += fmt.Sprintf("%d=%s ", rp.Partition, kerr.ErrorForCode(rp.ErrorCode).(*kerr.Error).Message)
			} else {
				s += fmt.Sprintf("%d=%d ", rp.Partition, rp.Offset)
			}
		}
		return s
	}
	expect := func(coord *group.Coordinator, stable bool, want string) {
		t.Helper()
		if got := fetch(coord, stable); got != want {
			t.Errorf("offsets (require_stable %v): %q, want %q", stable, got, want)
		}
	}

	commit(coord, 1000, 0, 0, 10)
	expect(coord, true, "0=UNSTABLE_OFFSET_COMMIT 1=-1 ")
	expect(coord, false, "0=-1 1=-1 ")
	marker(b.srv, 1000, 0, true)
	expect(coord, true, "0=10 1=-1 ")

	commit(coord, 1001, 0, 0, 99)
	commit(coord, 1002, 0, 1, 20)
	marker(b.srv, 1001, 0, false)
	expect(coord, true, "0=10 1=UNSTABLE_OFFSET_COMMIT ")
	marker(b.srv, 1002, 0, true)
	expect(coord, true, "0=10 1=20 ")

	commit(coord, 1003, 0, 0, 30) // left open across the restart
	expect(coord, true, "0=UNSTABLE_OFFSET_COMMIT 1=20 ")

	b.stop()
	b = startBrokerIn(t, dir)
	if err := b.srv.SetGroupConfig(testGroupConfig()); err != nil {
		t.Fatal(err)
	}
	coord, err = b.srv.groups()
	if err != nil {
		t.Fatal(err)
	}
	// (Loading: COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR is "not yet".)
	testkit.CheckFor(t, 20*time.Second, func() error {
		if got := fetch(coord, true); got != "0=UNSTABLE_OFFSET_COMMIT 1=20 " {
			return fmt.Errorf("offsets after restart: %q", got)
		}
		return nil
	})
	expect(coord, false, "0=10 1=20 ")
	marker(b.srv, 1003, 0, true)
	expect(coord, true, "0=30 1=20 ")
}
