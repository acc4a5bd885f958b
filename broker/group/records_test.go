package group

import (
	"bytes"
	"errors"
	"testing"

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

func FuzzParseBatches(f *testing.F) {
	f.Add(BuildBatch([]Record{{Key: offsetKey("g", "t", 0), Value: offsetValue(Offset{Offset: 1})}}, 1))
	f.Add(BuildBatch([]Record{{Key: groupKey("g")}}, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = ParseBatches(b, func(k, v []byte) error {
			_, _ = decodeRecord(k, v)
			return nil
		})
	})
}
