package partition

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Murmur2 is Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils.murmur2,
// seed 0x9747b28c), returned as the uint32 bit pattern of Java's int result.
func Murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// ForKey returns the partition Java's default partitioner picks for key
// among n partitions: toPositive(murmur2(key)) % n. n must be positive.
func ForKey(key []byte, n int) int {
	return int(Murmur2(key)&0x7fffffff) % n
}

type explicitKey struct{}

// Set pins r to partition p: the partitioner returned by New uses p as
// given, whatever r's key. It records the choice in r.Context (keeping any
// context already there), so call it after setting r.Context.
func Set(r *kgo.Record, p int32) {
	ctx := r.Context
	if ctx == nil {
		ctx = context.Background()
	}
	r.Context = context.WithValue(ctx, explicitKey{}, true)
	r.Partition = p
}

// IsSet reports whether r was pinned to a partition with Set.
func IsSet(r *kgo.Record) bool {
	return r.Context != nil && r.Context.Value(explicitKey{}) != nil
}

// New returns weir's partitioner: explicit partition (Set), else murmur2 of
// the key, else sticky batches. See the package documentation.
func New() kgo.Partitioner {
	return partitioner{inner: kgo.StickyKeyPartitioner(kgo.KafkaHasher(Murmur2))}
}

// Option is kgo.RecordPartitioner(New()), for building weir producers.
func Option() kgo.Opt { return kgo.RecordPartitioner(New()) }

type partitioner struct{ inner kgo.Partitioner }

func (p partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	in := p.inner.ForTopic(topic)
	onNew, _ := in.(kgo.TopicPartitionerOnNewBatch)
	return &topicPartitioner{inner: in, onNewBatch: onNew}
}

type topicPartitioner struct {
	inner      kgo.TopicPartitioner
	onNewBatch kgo.TopicPartitionerOnNewBatch
}

var _ kgo.TopicPartitionerOnNewBatch = (*topicPartitioner)(nil)

func (t *topicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return IsSet(r) || t.inner.RequiresConsistency(r)
}

// Partition returns r.Partition for a pinned record (kgo fails the record
// if that partition does not exist) and delegates otherwise.
func (t *topicPartitioner) Partition(r *kgo.Record, n int) int {
	if IsSet(r) {
		return int(r.Partition)
	}
	return t.inner.Partition(r, n)
}

func (t *topicPartitioner) OnNewBatch() {
	if t.onNewBatch != nil {
		t.onNewBatch.OnNewBatch()
	}
}
