package txncoord

import (
	"fmt"
	"reflect"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	m := meta{producerID: 7, epoch: 3, timeoutMs: 60000, state: Ongoing, parts: []TP{{"a", 0}, {"a", 2}, {"b", 1}}, start: 10, lastUpdate: 20}
	r := stateRecord("tx", m)
	id, got, err := decodeRecord(r.Key, r.Value)
	if err != nil || id != "tx" || !reflect.DeepEqual(*got, m) {
		t.Fatalf("round trip: %q %+v %v", id, got, err)
	}
	id, got, err = decodeRecord(tombstone("tx").Key, nil)
	if err != nil || id != "tx" || got != nil {
		t.Fatalf("tombstone: %q %+v %v", id, got, err)
	}
	if _, _, err := decodeRecord(r.Key, r.Value[:5]); err == nil {
		t.Fatal("truncated value decoded")
	}
	// The partition is Kafka's (javaHashCode), as for groups.
	if p := PartitionFor("my-txn", 50); p != PartitionFor("my-txn", 50) || p < 0 || p >= 50 {
		t.Fatalf("PartitionFor: %d", p)
	}
}

// FuzzDecodeRecord: decoding never panics, and what decodes re-encodes
// (as version 0) to a record that decodes to the same metadata.
func FuzzDecodeRecord(f *testing.F) {
	r := stateRecord("tx", meta{producerID: 1, epoch: 0, timeoutMs: 1000, state: PrepareCommit, parts: []TP{{"t", 0}}, start: 1, lastUpdate: 2})
	f.Add(r.Key, r.Value)
	f.Add(r.Key, []byte(nil))
	f.Add([]byte{0, 1, 0, 1, 'x'}, r.Value)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, m, err := decodeRecord(key, value)
		if err != nil || m == nil {
			return
		}
		r := stateRecord(id, *m)
		id2, m2, err := decodeRecord(r.Key, r.Value)
		if err != nil {
			t.Fatalf("re-encoded record of %q does not decode: %v", id, err)
		}
		if id2 != id || !reflect.DeepEqual(fmt.Sprint(*m2), fmt.Sprint(*m)) {
			t.Fatalf("round trip: %q %+v -> %q %+v", id, *m, id2, *m2)
		}
	})
}
