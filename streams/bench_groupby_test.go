package streams

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient/partition"
	"weir/streams/internal/store"
)

// capProducer keeps the repartition records (for the downstream tasks) and
// drops the rest.
type capProducer struct {
	topic string
	recs  [][]*kgo.Record
	next  []int64
	n     int
}

func (p *capProducer) send(r *kgo.Record, done func(*kgo.Record, error)) {
	p.n++
	if r.Topic == p.topic {
		q := partition.ForKey(r.Key, len(p.recs))
		r.Offset = p.next[q]
		p.next[q]++
		p.recs[q] = append(p.recs[q], r)
	}
	if done != nil {
		done(r, nil)
	}
}

// BenchmarkTaskGroupByCount is BenchmarkTaskCountByKey through a
// repartition topic: the key comes from the value (GroupBy), the four
// upstream tasks write repartition records (with their source header),
// and the four count tasks read them back (checking source positions).
// No broker, no client: the runtime's cost of a repartition, headers
// included.
func BenchmarkTaskGroupByCount(b *testing.B) {
	const n, keys = 1_000_000, 100_000
	bld := NewBuilder()
	s := From(bld, "in", Bytes(), Bytes())
	Count(GroupBy(s, func(_, v []byte) string { return string(v[:bytes.IndexByte(v, '/')]) }, String(), Bytes()), "g").
		ToStream().To("counts", String(), Int64())
	tp := mustBuildB(b, bld)
	recs := make([][]kgo.Record, benchPartitions)
	val := bytes.Repeat([]byte("x"), benchValueBytes)
	for i := range n {
		k := binary.BigEndian.AppendUint64(nil, uint64(i))
		v := append([]byte("key-"+strconv.Itoa(i*7919%keys)+"/"), val...)
		p := partition.ForKey(k, benchPartitions)
		recs[p] = append(recs[p], kgo.Record{Key: k, Value: v, Offset: int64(len(recs[p])), Timestamp: time.UnixMilli(int64(i))})
	}
	b.ResetTimer()
	for range b.N {
		dir := b.TempDir()
		out := &capProducer{topic: "tb-g-repartition", recs: make([][]*kgo.Record, benchPartitions), next: make([]int64, benchPartitions)}
		for p := range out.recs {
			out.recs[p] = make([]*kgo.Record, 0, n/benchPartitions)
		}
		open := func(src *node) []*task {
			var ts []*task
			for p := range int32(benchPartitions) {
				t := tp.newTask("tb", src, p)
				t.out = out
				t.cacheMax = 10 << 20
				t.stateDir = filepath.Join(dir, t.id)
				t.openBack = func(dir string) (store.Backend, error) { return store.OpenPebble(dir, store.PebbleOptions{}) }
				if err := t.open(&nullReader{}); err != nil {
					b.Fatal(err)
				}
				ts = append(ts, t)
			}
			return ts
		}
		var up, down []*task
		for _, src := range tp.sources {
			if src.source.internal {
				down = open(src)
			} else {
				up = open(src)
			}
		}
		start := time.Now()
		for round := range 4 {
			for p, t := range up {
				rs := recs[p]
				for i := len(rs) * round / 4; i < len(rs)*(round+1)/4; i++ {
					t.process(&rs[i])
				}
			}
			for p, t := range down {
				for _, r := range out.recs[p] {
					t.process(r)
				}
				out.recs[p] = out.recs[p][:0]
			}
			for _, t := range append(up, down...) {
				if err := t.flush(); err != nil {
					b.Fatal(err)
				}
			}
		}
		d := time.Since(start)
		var counted int64
		for _, t := range down {
			counted += t.m.processed.Load() - t.m.skipped.Load()
		}
		if counted != n {
			b.Fatalf("count tasks processed %d records, want %d", counted, n)
		}
		for _, t := range append(up, down...) {
			if err := t.close(true); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)/d.Seconds(), "records/s")
		b.ReportMetric(0, "ns/op")
	}
}
