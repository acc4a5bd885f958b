package txn

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"weir/broker/log"
	"weir/broker/log/vfs"
)

// txnBatch is makeBatch with the transactional bit.
func txnBatch(pid int64, epoch int16, seq int32, n int) []byte {
	b := makeBatch(pid, epoch, seq, n, 1000)
	binary.BigEndian.PutUint16(b[log.OffAttributes:], binary.BigEndian.Uint16(b[log.OffAttributes:])|log.AttrTransactional)
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func (f *fixture) appendAs(origin Origin, b []byte) Result {
	f.t.Helper()
	res, err := f.p.Append(b, origin, func() (log.AppendInfo, error) { return f.l.Append(b, 0) })
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

// TestPartitionTransactionsSurviveRestarts: ongoing transactions, the LSO
// and the aborted-transaction index come back after a clean restart (v2
// snapshot), after a crash (replay from an older snapshot), and after the
// .txnindex files and snapshots are lost (replay of the whole log).
func TestPartitionTransactionsSurviveRestarts(t *testing.T) {
	f := newFixture(t, vfs.NewMem(), "/d/t-0")
	f.appendAs(FromClient, txnBatch(1, 0, 0, 3)) // 0-2
	f.appendAs(FromClient, txnBatch(2, 0, 0, 2)) // 3-4
	res := f.appendAs(FromCoordinator, log.BuildEndTxnMarker(1, 0, log.EndTxnMarker{Commit: false, CoordinatorEpoch: 1}, 5))
	if len(res.Completed) != 1 || !res.Completed[0].Aborted || res.Completed[0].LastStableOffset != 3 {
		t.Fatalf("abort marker completed %+v", res.Completed)
	}
	f.appendAs(FromClient, txnBatch(3, 0, 0, 1)) // 6, stays open
	f.appendAs(FromCoordinator, log.BuildEndTxnMarker(2, 0, log.EndTxnMarker{Commit: true, CoordinatorEpoch: 1}, 5))
	f.l.SetHighWatermark(f.l.EndOffset())
	wantAborted := []log.AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 5, LastStableOffset: 3}}
	check := func(when string) {
		t.Helper()
		if lso := f.p.LastStableOffset(f.l.HighWatermark()); lso != 6 {
			t.Fatalf("%s: LSO %d, want 6 (producer 3's open transaction)", when, lso)
		}
		if got := f.l.AbortedTxns(); !slices.Equal(got, wantAborted) {
			t.Fatalf("%s: aborted index %+v, want %+v", when, got, wantAborted)
		}
		p, _ := f.p.Producer(3)
		if p.TxnFirstOffset != 6 {
			t.Fatalf("%s: producer 3 %+v", when, p)
		}
	}
	check("live")
	f.restart(true)
	check("after a clean restart")
	f.restart(false)
	check("after a crash")
	// Lose every snapshot and .txnindex: the log alone rebuilds them.
	f.p.Discard()
	f.l.Close()
	names, _ := f.fsys.List(f.dir)
	for _, n := range names {
		if strings.HasSuffix(n, ".snapshot") || strings.HasSuffix(n, ".txnindex") {
			if err := f.fsys.Remove(f.dir + "/" + n); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.open()
	f.l.SetHighWatermark(f.l.EndOffset())
	check("rebuilt from the log")
	// The open transaction commits: LSO at the end.
	f.appendAs(FromCoordinator, log.BuildEndTxnMarker(3, 0, log.EndTxnMarker{Commit: true, CoordinatorEpoch: 1}, 5))
	f.l.SetHighWatermark(f.l.EndOffset())
	if lso := f.p.LastStableOffset(f.l.HighWatermark()); lso != f.l.EndOffset() {
		t.Fatalf("after the last commit: LSO %d, end %d", lso, f.l.EndOffset())
	}
}

// TestFollowerStateMatchesLeader: a follower that appends the leader's
// batches as they are (AppendReplica) and applies them (ApplyReplica,
// refetched batches included) has the leader's producers, ongoing
// transactions, LSO and aborted-transaction index.
func TestFollowerStateMatchesLeader(t *testing.T) {
	mem := vfs.NewMem()
	lead := newFixture(t, mem, "/leader/t-0")
	fol := newFixture(t, mem, "/follower/t-0")
	var appended [][]byte
	add := func(origin Origin, b []byte) {
		lead.appendAs(origin, b)
		appended = append(appended, b) // stamped in place by the log
	}
	add(FromClient, txnBatch(1, 0, 0, 3))
	add(FromClient, makeBatch(4, 0, 0, 2, 1000))
	add(FromClient, txnBatch(2, 0, 0, 2))
	add(FromCoordinator, log.BuildEndTxnMarker(1, 0, log.EndTxnMarker{Commit: false, CoordinatorEpoch: 2}, 5))
	add(FromClient, txnBatch(3, 1, 0, 1))
	add(FromCoordinator, log.BuildEndTxnMarker(2, 0, log.EndTxnMarker{Commit: true, CoordinatorEpoch: 2}, 5))
	add(FromClient, makeBatch(4, 0, 2, 1, 1000))
	// Fetched in two rounds, the second repeating the first's tail.
	send := func(bs [][]byte) {
		var b []byte
		for _, x := range bs {
			b = append(b, x...)
		}
		info, err := fol.l.AppendReplica(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := fol.p.ApplyReplica(b, info.FirstOffset); err != nil {
			t.Fatal(err)
		}
	}
	send(appended[:4])
	send(appended[2:])
	if !slices.EqualFunc(lead.p.Producers(), fol.p.Producers(), func(a, b Producer) bool {
		return a.ID == b.ID && a.Epoch == b.Epoch && a.TxnFirstOffset == b.TxnFirstOffset &&
			a.CoordinatorEpoch == b.CoordinatorEpoch && slices.Equal(a.Batches, b.Batches)
	}) {
		t.Fatalf("follower producers %+v\nleader %+v", fol.p.Producers(), lead.p.Producers())
	}
	hw := lead.l.EndOffset()
	if a, b := lead.p.LastStableOffset(hw), fol.p.LastStableOffset(hw); a != b || a != 8 {
		t.Fatalf("LSO leader %d follower %d, want 8", a, b)
	}
	if a, b := lead.l.AbortedTxns(), fol.l.AbortedTxns(); !slices.Equal(a, b) || len(a) != 1 {
		t.Fatalf("aborted index leader %+v follower %+v", a, b)
	}
}
