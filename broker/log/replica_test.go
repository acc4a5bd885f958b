package log

import (
	"errors"
	"slices"
	"testing"

	"weir/broker/log/vfs"
)

// readBytes returns the raw batches from offset from to the log end.
func readBytes(t *testing.T, l *Log, from int64) []byte {
	t.Helper()
	s, err := l.Read(from, 1<<30, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	b, err := s.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appendEpoch(t *testing.T, l *Log, n int, epoch int32) AppendInfo {
	t.Helper()
	info, err := l.Append(valueBatch(t, n, 10, 1000), epoch)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestAppendReplicaCopiesTheLeader(t *testing.T) {
	fs := vfs.NewMem()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 600 // several segments
	leader := mustOpen(t, fs, "/l/t-0", cfg, Options{})
	follower := mustOpen(t, fs, "/f/t-0", cfg, Options{})
	appendEpoch(t, leader, 3, 0)
	appendEpoch(t, leader, 2, 0)
	appendEpoch(t, leader, 4, 2)
	appendEpoch(t, leader, 1, 5)
	// Copy in two fetches, the second overlapping the first.
	all := readBytes(t, leader, 0)
	first := readBytes(t, leader, 0)[:len(all)/2]
	h, _ := ParseBatch(first)
	first = first[:h.Size()] // one whole batch
	if _, err := follower.AppendReplica(first); err != nil {
		t.Fatal(err)
	}
	if _, err := follower.AppendReplica(readBytes(t, leader, 0)); err != nil {
		t.Fatalf("overlapping refetch: %v", err)
	}
	if follower.EndOffset() != leader.EndOffset() {
		t.Fatalf("follower LEO %d, leader %d", follower.EndOffset(), leader.EndOffset())
	}
	if got, want := readBytes(t, follower, 0), readBytes(t, leader, 0); !slices.Equal(got, want) {
		t.Fatal("follower bytes differ from the leader's")
	}
	want := []EpochEntry{{0, 0}, {2, 5}, {5, 9}}
	if got := follower.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("follower epochs %v, want %v", got, want)
	}
	if got := leader.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("leader epochs %v, want %v", got, want)
	}
	// A batch straddling the log end is refused and changes nothing.
	b := valueBatch(t, 4, 10, 1000)
	stamp(b, follower.EndOffset()-2, 5)
	if _, err := follower.AppendReplica(b); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("straddling batch: %v", err)
	}
	// Gaps (a compacted leader) are kept.
	b = valueBatch(t, 2, 10, 1000)
	stamp(b, follower.EndOffset()+10, 6)
	info, err := follower.AppendReplica(b)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 20 || follower.EndOffset() != 22 {
		t.Fatalf("gap append: %+v, LEO %d", info, follower.EndOffset())
	}
	if hs := readAll(t, follower, 19); len(hs) != 1 || hs[0].BaseOffset != 20 || hs[0].PartitionLeaderEpoch != 6 {
		t.Fatalf("read across the gap: %+v", hs)
	}
}

// stamp sets a batch's base offset and leader epoch (CRC does not cover them).
func stamp(b []byte, base int64, epoch int32) {
	for i := 0; i < 8; i++ {
		b[i] = byte(uint64(base) >> (56 - 8*i))
	}
	for i := 0; i < 4; i++ {
		b[OffEpoch+i] = byte(uint32(epoch) >> (24 - 8*i))
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	es := []EpochEntry{{1, 0}, {3, 10}, {4, 25}}
	for _, tc := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1},
		{0, 0, 0},    // older than everything: start of the first
		{1, 1, 10},   // ends where 3 starts
		{2, 1, 10},   // unknown epoch between: the floor's end
		{3, 3, 25},   //
		{4, 4, 40},   // newest: the log end
		{5, -1, -1},  // newer than anything
		{99, -1, -1}, //
	} {
		e, o := endOffsetFor(es, tc.epoch, 40)
		if e != tc.wantEpoch || o != tc.wantEnd {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.epoch, e, o, tc.wantEpoch, tc.wantEnd)
		}
	}
	if e, o := endOffsetFor(nil, 3, 40); e != -1 || o != -1 {
		t.Errorf("empty cache: (%d, %d)", e, o)
	}
}

func TestEpochCacheTruncateReopenAndRebuild(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/d/t-0"
	l := mustOpen(t, fs, dir, DefaultConfig(), Options{})
	appendEpoch(t, l, 5, 1) // 0-4
	if err := l.AssignEpoch(3); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(2); err != nil { // older: ignored
		t.Fatal(err)
	}
	appendEpoch(t, l, 5, 3) // 5-9
	if err := l.AssignEpoch(4); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(6); err != nil { // 4 wrote nothing: replaced
		t.Fatal(err)
	}
	appendEpoch(t, l, 5, 6) // 10-14
	want := []EpochEntry{{1, 0}, {3, 5}, {6, 10}}
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 10 {
		t.Fatalf("EndOffsetForEpoch(3) = %d, %d", e, o)
	}
	if err := l.TruncateTo(7); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 5 { // the 5-9 batch straddles 7: removed whole
		t.Fatalf("LEO after truncate %d", l.EndOffset())
	}
	want = []EpochEntry{{1, 0}}
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs after truncate %v, want %v", got, want)
	}
	if l.LatestEpoch() != 1 {
		t.Fatalf("LatestEpoch %d", l.LatestEpoch())
	}
	appendEpoch(t, l, 2, 7) // 5-6
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want = []EpochEntry{{1, 0}, {7, 5}}
	l = mustOpen(t, fs, dir, DefaultConfig(), Options{})
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs after reopen %v, want %v", got, want)
	}
	l.Close()
	// A lost checkpoint file is rebuilt from the batches.
	if err := fs.Remove(dir + "/" + epochFileName); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, fs, dir, DefaultConfig(), Options{})
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs rebuilt %v, want %v", got, want)
	}
	l.Close()
	// A stale file (entries past the log end, as after a crash that lost
	// the tail) is cut back at open.
	if err := vfs.WriteFileAtomic(fs, dir, dir+"/"+epochFileName, []byte("0\n3\n1 0\n7 5\n9 100\n"), false); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, fs, dir, DefaultConfig(), Options{})
	defer l.Close()
	if got := l.Epochs(); !slices.Equal(got, want) {
		t.Fatalf("epochs from a stale file %v, want %v", got, want)
	}
}

func TestResetTo(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/d/t-0"
	cfg := DefaultConfig()
	cfg.SegmentBytes = 300
	l := mustOpen(t, fs, dir, cfg, Options{})
	for i := 0; i < 6; i++ {
		appendEpoch(t, l, 2, 1)
	}
	if err := l.ResetTo(100); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 100 || l.EndOffset() != 100 || l.HighWatermark() != 100 || len(l.Epochs()) != 0 || l.NumSegments() != 1 {
		t.Fatalf("after reset: start %d end %d hw %d epochs %v segs %d", l.StartOffset(), l.EndOffset(), l.HighWatermark(), l.Epochs(), l.NumSegments())
	}
	b := valueBatch(t, 3, 10, 1000)
	stamp(b, 100, 4)
	if _, err := l.AppendReplica(b); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = mustOpen(t, fs, dir, cfg, Options{})
	defer l.Close()
	if l.StartOffset() != 100 || l.EndOffset() != 103 || !slices.Equal(l.Epochs(), []EpochEntry{{4, 100}}) {
		t.Fatalf("after reopen: start %d end %d epochs %v", l.StartOffset(), l.EndOffset(), l.Epochs())
	}
	if hs := readAll(t, l, 100); len(hs) != 1 || hs[0].BaseOffset != 100 {
		t.Fatalf("read after reset: %+v", hs)
	}
}
