package group

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"weir/broker/log"
)

func TestPartitionForMatchesJava(t *testing.T) {
	// Java: "test".hashCode() == 3556498; "".hashCode() == 0;
	// "polygenelubricants".hashCode() == Integer.MIN_VALUE (abs -> 0 in
	// Kafka's Utils.abs); "é" is one UTF-16 unit 0xE9; "😀" two units.
	for _, c := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"test", 50, 3556498 % 50},
		{"", 50, 0},
		{"polygenelubricants", 50, 0},
		{"é", 50, 0xE9 % 50},
		{"😀", 1000, (31*0xD83D + 0xDE00) % 1000},
		{"my-group", 1, 0},
	} {
		if got := PartitionFor(c.group, c.n); got != c.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", c.group, c.n, got, c.want)
		}
	}
}

func TestBatchRoundTrip(t *testing.T) {
	recs := []Record{
		{Key: offsetKey("g", "t", 3), Value: offsetValue(Offset{Offset: 42, LeaderEpoch: 7, Metadata: "md", CommitTimestamp: 1234})},
		{Key: groupKey("g")}, // tombstone
		{Key: offsetKey("g", "t", 4), Value: bytes.Repeat([]byte{9}, 300)},
	}
	b := BuildBatch(recs, 1_700_000_000_000)
	// The log accepts it: magic, length, CRC32C.
	h, err := log.ParseBatch(append([]byte(nil), b...))
	if err != nil {
		t.Fatalf("the log rejects the batch: %v", err)
	}
	if h.NumRecords != 3 || h.LastOffsetDelta != 2 || h.ProducerID != -1 {
		t.Errorf("header %+v", h)
	}
	var got []Record
	if err := ParseBatches(append(b, b...), func(k, v []byte) error {
		got = append(got, Record{Key: append([]byte(nil), k...), Value: v})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("%d records, want 6", len(got))
	}
	for i, r := range got {
		w := recs[i%3]
		if !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) {
			t.Errorf("record %d: %x=%x, want %x=%x", i, r.Key, r.Value, w.Key, w.Value)
		}
	}
	d, err := decodeRecord(got[0].Key, got[0].Value)
	if err != nil || !d.isOffset || d.topic != "t" || d.partition != 3 || d.offset.Offset != 42 || d.offset.LeaderEpoch != 7 || d.offset.Metadata != "md" {
		t.Errorf("decoded %+v, %v", d, err)
	}
	if _, err := decodeRecord([]byte{0, 9, 1}, nil); !errors.Is(err, ErrBadRecord) {
		t.Errorf("unknown key version: %v", err)
	}
	for _, bad := range [][]byte{b[:30], b[:len(b)-1], append(append([]byte(nil), b[:20]...), 0)} {
		if err := ParseBatches(bad, func(k, v []byte) error { return nil }); !errors.Is(err, ErrBadRecord) {
			t.Errorf("truncated batch (%d bytes): %v", len(bad), err)
		}
	}
}

// controlBatch is a transaction marker batch as the log writes it:
// control and transactional attributes, key {version 0, type}, value
// {version 0, coordinator epoch}.
func controlBatch(pid int64, epoch int16, commit bool) []byte {
	typ := byte(0)
	if commit {
		typ = 1
	}
	b := buildBatch([]Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 5}}}, 1, pid, epoch)
	b[22] |= attrControl // attributes, low byte
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

func TestReplayTransactionalBatches(t *testing.T) {
	plain := BuildBatch([]Record{{Key: offsetKey("g", "t", 0), Value: offsetValue(Offset{Offset: 1})}}, 1)
	txn := BuildTxnBatch([]Record{{Key: offsetKey("g", "t", 0), Value: offsetValue(Offset{Offset: 2})}}, 1, 42, 3)
	h, err := log.ParseBatch(append([]byte(nil), txn...))
	if err != nil {
		t.Fatalf("the log rejects the transactional batch: %v", err)
	}
	if h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != -1 || !h.IsTransactional() || h.IsControl() {
		t.Errorf("transactional batch header %+v", h)
	}
	commit, abort := controlBatch(42, 3, true), controlBatch(42, 3, false)
	if h, err := log.ParseBatch(append([]byte(nil), commit...)); err != nil || !h.IsControl() {
		t.Fatalf("control batch: %+v, %v", h, err)
	}
	var got []string
	all := append(append(append(append([]byte(nil), plain...), txn...), commit...), abort...)
	err = ReplayBatches(all, func(pid int64, k, v []byte) error {
		d, err := decodeRecord(k, v)
		if err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("pid=%d offset=%d", pid, d.offset.Offset))
		return nil
	}, func(pid int64, c bool) error {
		got = append(got, fmt.Sprintf("marker pid=%d commit=%v", pid, c))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "[pid=-1 offset=1 pid=42 offset=2 marker pid=42 commit=true marker pid=42 commit=false]"
	if fmt.Sprint(got) != want {
		t.Errorf("replayed %v, want %s", got, want)
	}
	// ParseBatches skips markers; the loader resolves the transaction.
	n := 0
	if err := ParseBatches(all, func(k, v []byte) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("ParseBatches: %d records, %v", n, err)
	}
	// A control record too short to hold its type is an error naming it.
	bad := buildBatch([]Record{{Key: []byte{0, 0}}}, 1, 42, 3)
	bad[22] |= attrControl
	binary.BigEndian.PutUint32(bad[17:], crc32.Checksum(bad[21:], castagnoli))
	err = ReplayBatches(bad, func(int64, []byte, []byte) error { return nil }, func(int64, bool) error { return nil })
	if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "control record key of 2 bytes") {
		t.Errorf("short control key: %v", err)
	}
}

// FuzzParseBatches: whatever the bytes, replaying them into a Loader
// neither panics nor fails on what BuildBatch, BuildTxnBatch and the log's
// markers produce.
func FuzzParseBatches(f *testing.F) {
	f.Add(BuildBatch([]Record{{Key: offsetKey("g", "t", 0), Value: offsetValue(Offset{Offset: 1})}}, 1))
	f.Add(BuildBatch([]Record{{Key: groupKey("g")}}, 1))
	f.Add(BuildTxnBatch([]Record{{Key: offsetKey("g", "t", 0), Value: offsetValue(Offset{Offset: 1})}}, 1, 7, 0))
	f.Add(append(BuildTxnBatch([]Record{{Key: offsetKey("g", "t", 0), Value: offsetValue(Offset{Offset: 1})}}, 1, 7, 0), controlBatch(7, 0, true)...))
	f.Add(controlBatch(7, 0, false))
	f.Add(BuildBatch([]Record{{Key: consumerGroupKey("g"), Value: consumerGroupValue(3)}, {Key: offsetKey("g", "t", 0), Value: offsetValue(Offset{Offset: 1})}}, 1))
	f.Add(BuildBatch([]Record{{Key: consumerGroupKey("g"), Value: consumerGroupValue(3)}, {Key: consumerGroupKey("g")}, {Key: groupKey("g")}}, 1))
	inst := "i"
	mb := &consumerMember{id: "m", instanceID: &inst, clientID: "c", clientHost: "/h", topics: []string{"t"}, regex: "t.*",
		rebalanceTimeout: time.Second, assignor: "range", epoch: 3, prevEpoch: 2, state: memberUnrevoked,
		assigned: assignment{TopicID{1}: {0, 2}}, revoking: assignment{TopicID{1}: {1}}}
	f.Add(BuildBatch(append([]Record{{Key: consumerGroupKey("g"), Value: consumerGroupValue(3)}}, memberRecords("g", mb, true)...), 1))
	f.Add(BuildBatch(append(memberRecords("g", mb, true), memberTombstones("g", "m")...), 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = ParseBatches(b, func(k, v []byte) error {
			_, _ = decodeRecord(k, v)
			return nil
		})
		m := NewMachine(DefaultConfig(), 1)
		l := m.Load(0)
		_ = ReplayBatches(b, func(pid int64, k, v []byte) error {
			_ = l.ApplyRecord(pid, k, v)
			return nil
		}, func(pid int64, commit bool) error {
			l.ApplyMarker(pid, commit)
			return nil
		})
		l.Finish(time.Unix(1_700_000_000, 0))
		if _, e := m.FetchOffsets("g", nil, true); e != nil {
			t.Fatalf("fetch after load: %v", e)
		}
	})
}
