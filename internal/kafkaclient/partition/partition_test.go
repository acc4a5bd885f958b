package partition

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Java's Utils.murmur2 returns an int; these are the values from Kafka's
// clients UtilsTest.testMurmur2 (as int32) and librdkafka's
// unittest_murmur2 in src/rdmurmur2.c (as uint32 bit patterns), which
// librdkafka checks against the Java client's output.
var murmur2Vectors = []struct {
	key  string
	want uint32
}{
	// Kafka UtilsTest.testMurmur2.
	{"21", i32(-973932308)},
	{"foobar", i32(-790332482)},
	{"a-little-bit-long-string", i32(-985981536)},
	{"a-little-bit-longer-string", i32(-1486304829)},
	{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", i32(-58897971)},
	{"abc", i32(479470107)},
	// librdkafka unittest_murmur2.
	{"kafka", 0xd067cf64},
	{"giberish123456789", 0x8f552b0c},
	{"1234", 0x9fc97b14},
	{"234", 0xe7c009ca},
	{"34", 0x873930da},
	{"4", 0x5a4b5ca1},
	{"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x78424f1c},
	{"reAmbleWillBeRemoved,ThePrePartThatIs", 0x4a62b377},
	{"eAmbleWillBeRemoved,ThePrePartThatIs", 0xe0e4e09e},
	{"AmbleWillBeRemoved,ThePrePartThatIs", 0x62b8b43f},
	{"", 0x106e08d9},
}

func i32(v int32) uint32 { return uint32(v) }

func TestMurmur2MatchesJavaAndLibrdkafka(t *testing.T) {
	for _, v := range murmur2Vectors {
		if got := Murmur2([]byte(v.key)); got != v.want {
			t.Errorf("Murmur2(%q) = %#08x (%d), want %#08x (%d)", v.key, got, int32(got), v.want, int32(v.want))
		}
	}
}

func TestForKeyIsJavaFormula(t *testing.T) {
	for _, v := range murmur2Vectors {
		for _, n := range []int{1, 3, 8, 12, 50, 1000} {
			// Java: Utils.toPositive(murmur2(key)) % numPartitions,
			// toPositive(x) = x & 0x7fffffff on the int.
			want := int(int32(v.want)&0x7fffffff) % n
			if got := ForKey([]byte(v.key), n); got != want {
				t.Errorf("ForKey(%q, %d) = %d, want %d", v.key, n, got, want)
			}
		}
	}
	// One hand-checked value: murmur2("21") = -973932308,
	// toPositive = 2^31 - 973932308 = 1173551340, 1173551340 % 8 = 4.
	if got := ForKey([]byte("21"), 8); got != 4 {
		t.Errorf("ForKey(21, 8) = %d, want 4", got)
	}
}

// kgo's own default (StickyKeyPartitioner with a nil hasher, which uses its
// internal murmur2) must agree with ours, so a plain kgo client and weir's
// producers place keys identically.
func TestKgoDefaultHasherAgrees(t *testing.T) {
	kp := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	ours := New().ForTopic("t")
	for i := 0; i < 5000; i++ {
		key := []byte(fmt.Sprintf("key-%d-%x", i, i*7919))
		for _, n := range []int{1, 2, 7, 8, 64} {
			r := &kgo.Record{Key: key}
			a, b := kp.Partition(r, n), ours.Partition(r, n)
			if a != b || b != ForKey(key, n) {
				t.Fatalf("key %q n=%d: kgo %d, weir %d, ForKey %d", key, n, a, b, ForKey(key, n))
			}
		}
	}
	for _, v := range murmur2Vectors {
		r := &kgo.Record{Key: []byte(v.key)}
		if a, b := kp.Partition(r, 97), ForKey([]byte(v.key), 97); a != b {
			t.Errorf("key %q: kgo default %d, ForKey %d", v.key, a, b)
		}
	}
}

func TestExplicitPartitionWins(t *testing.T) {
	tp := New().ForTopic("t")
	r := &kgo.Record{Key: []byte("21"), Value: []byte("v")}
	Set(r, 6)
	if !IsSet(r) || !tp.RequiresConsistency(r) {
		t.Fatal("a record pinned with Set must be marked and require consistency")
	}
	if got := tp.Partition(r, 8); got != 6 {
		t.Fatalf("pinned record went to %d, want 6 (the key alone would give %d)", got, ForKey(r.Key, 8))
	}
	// Partition 0 pinned explicitly is honoured, not mistaken for "unset".
	r0 := &kgo.Record{Key: []byte("21")}
	Set(r0, 0)
	if got := tp.Partition(r0, 8); got != 0 {
		t.Fatalf("record pinned to 0 went to %d", got)
	}
	// An existing context is kept.
	type ck struct{}
	rc := &kgo.Record{Context: context.WithValue(context.Background(), ck{}, "x")}
	Set(rc, 1)
	if rc.Context.Value(ck{}) != "x" || !IsSet(rc) {
		t.Fatal("Set lost the record's existing context")
	}
}

func TestUnpinnedZeroPartitionIsNotExplicit(t *testing.T) {
	tp := New().ForTopic("t")
	r := &kgo.Record{Key: []byte("21")} // Partition is 0 but not Set
	if IsSet(r) {
		t.Fatal("record without Set reported as pinned")
	}
	if got := tp.Partition(r, 8); got != 4 {
		t.Fatalf("keyed record went to %d, want murmur2 partition 4", got)
	}
}

func TestKeylessIsStickyUntilNewBatch(t *testing.T) {
	tp := New().ForTopic("t")
	onNew, ok := tp.(kgo.TopicPartitionerOnNewBatch)
	if !ok {
		t.Fatal("partitioner must forward OnNewBatch for sticky batching")
	}
	if tp.RequiresConsistency(&kgo.Record{}) {
		t.Fatal("keyless records must not require consistency")
	}
	const n = 8
	first := tp.Partition(&kgo.Record{}, n)
	for i := 0; i < 100; i++ {
		if p := tp.Partition(&kgo.Record{Value: []byte("x")}, n); p != first {
			t.Fatalf("keyless record %d moved from %d to %d without a new batch", i, first, p)
		}
	}
	// Each new batch moves to a different partition than the last; over
	// many batches every partition is used.
	seen := map[int]bool{first: true}
	prev := first
	for i := 0; i < 400; i++ {
		onNew.OnNewBatch()
		p := tp.Partition(&kgo.Record{}, n)
		if p < 0 || p >= n {
			t.Fatalf("partition %d out of range", p)
		}
		if p == prev {
			t.Fatalf("new batch stayed on partition %d", p)
		}
		prev = p
		seen[p] = true
	}
	if len(seen) != n {
		t.Fatalf("sticky batches used %d of %d partitions", len(seen), n)
	}
}

func BenchmarkPartitionKeyed(b *testing.B) {
	tp := New().ForTopic("t")
	r := &kgo.Record{Key: []byte("user-1234567890")}
	for b.Loop() {
		_ = tp.Partition(r, 64)
	}
}
