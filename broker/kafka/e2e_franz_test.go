package kafka

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/metadata"
)

// e2eRecords is the number of records per codec of the franz-go
// end-to-end test: 1,000,000 in the full run, fewer with -short;
// WEIR_E2E_RECORDS overrides.
func e2eRecords() int {
	if v := os.Getenv("WEIR_E2E_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil && n > 0 {
			return n
		}
	}
	if testing.Short() {
		return 24_000
	}
	return 1_000_000
}

// recordFor is the deterministic content of record i.
func recordFor(i int) (key, value []byte, headers []kgo.RecordHeader) {
	key = []byte("key-" + strconv.Itoa(i%1000))
	value = fmt.Appendf(nil, "value %08d %s", i, bytes.Repeat([]byte{byte('a' + i%26)}, 40+i%60))
	if i%7 == 0 {
		headers = []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}}
	}
	return
}

func createTopic(t testing.TB, b *testBroker, name string, partitions int32, configs map[string]string) {
	t.Helper()
	if _, err := b.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: 1, Configs: configs}); err != nil {
		t.Fatal(err)
	}
}

func TestFranzProduceConsumeAllCodecsAndAcks(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	total := e2eRecords()
	const parts = 8
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()},
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	acksModes := []struct {
		name string
		acks kgo.Acks
	}{{"0", kgo.NoAck()}, {"1", kgo.LeaderAck()}, {"all", kgo.AllISRAcks()}}
	for _, c := range codecs {
		for _, a := range acksModes {
			t.Run(c.name+"/acks="+a.name, func(t *testing.T) {
				n := total / len(acksModes)
				topic := "e2e-" + c.name + "-acks" + a.name
				createTopic(t, b, topic, parts, nil)
				opts := []kgo.Opt{
					kgo.ProducerBatchCompression(c.codec),
					kgo.RequiredAcks(a.acks),
					kgo.RecordPartitioner(kgo.ManualPartitioner()),
					kgo.ProducerLinger(2 * time.Millisecond),
				}
				if a.name != "all" {
					opts = append(opts, kgo.DisableIdempotentWrite())
				}
				produce(t, b.client(opts...), topic, n, parts)
				consumeAndCheck(t, b, topic, n, parts)
			})
		}
	}
}

// produce sends records 0..n-1, record i to partition i%parts.
func produce(t *testing.T, cl *kgo.Client, topic string, n, parts int) {
	t.Helper()
	var failed atomic.Int64
	var firstErr atomic.Value
	ctx := context.Background()
	for i := 0; i < n; i++ {
		k, v, h := recordFor(i)
		r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: k, Value: v, Headers: h}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d records failed; first: %v", f, n, firstErr.Load())
	}
}

// consumeAndCheck reads the topic from the start and checks that partition
// p holds exactly the records i with i%parts == p, in order, identical.
func consumeAndCheck(t *testing.T, b *testBroker, topic string, n, parts int) {
	t.Helper()
	cl := b.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	next := make([]int, parts) // next expected record index per partition
	for p := range next {
		next[p] = p
	}
	got := 0
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before timeout", got, n)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch errors: %v", errs)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if bad != nil {
				return
			}
			p := int(r.Partition)
			i := next[p]
			k, v, h := recordFor(i)
			if r.Offset != int64(i/parts) {
				bad = fmt.Errorf("partition %d: record %d at offset %d, want %d", p, i, r.Offset, i/parts)
			} else if !bytes.Equal(r.Key, k) || !bytes.Equal(r.Value, v) || len(r.Headers) != len(h) ||
				(len(h) == 1 && (r.Headers[0].Key != h[0].Key || !bytes.Equal(r.Headers[0].Value, h[0].Value))) {
				bad = fmt.Errorf("partition %d offset %d: got key %q value %q headers %v, want record %d", p, r.Offset, r.Key, r.Value, r.Headers, i)
			}
			next[p] += parts
			got++
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
	for p := range next {
		if want := p + parts*((n-p+parts-1)/parts); next[p] != want {
			t.Errorf("partition %d: consumed up to record %d, want %d", p, next[p], want)
		}
	}
}
