package elasticsearch

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/elasticsearch/searchtest"
	"weir/internal/kafkaclient"
)

// firstWrite records when the runtime first hands records to the sink,
// so group-join time is not counted.
type firstWrite struct {
	*Sink
	once sync.Once
	cpu  time.Duration
	at   atomic.Int64 // unix ns of the first Write; stored after cpu
}

func (f *firstWrite) Write(ctx context.Context, rs []*kgo.Record) error {
	f.once.Do(func() { f.cpu = processCPU(); f.at.Store(time.Now().UnixNano()) })
	return f.Sink.Write(ctx, rs)
}

// processCPU is this process's user+system CPU time (getrusage).
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pidCPU is another process's user+system CPU time from /proc.
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100) // USER_HZ = 100
}

// BenchmarkTopicToIndex measures topic → search server bulk indexing:
// 200,000 JSON log lines (~200 bytes, no key: server-assigned ids) in a
// 3-partition topic on an in-process weir broker, consumed by the
// connector runtime with a fresh group per iteration and bulk-indexed into
// the shared Elasticsearch 7.17 (1 shard, 0 replicas, refresh 30s).
// Reported: docs/s from the first Write to the last stored document, and
// the CPU time per document of this process (weir: broker serving the
// fetches + runtime + sink) and of the search server.
//
//	go test -run '^$' -bench TopicToIndex -benchtime 1x -count 5 ./connectors/elasticsearch/
func BenchmarkTopicToIndex(b *testing.B) {
	const docs = 200_000
	s := searchtest.Shared(b, searchtest.Elasticsearch7)
	br := testbroker.Start(b)
	topic := "bench-logs"
	br.CreateTopic(topic, 3, nil)
	cl := br.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	ctx := context.Background()
	pad := strings.Repeat("x", 60)
	for i := 0; i < docs; i++ {
		v := fmt.Appendf(nil, `{"@timestamp":"2024-05-06T07:08:%02d.%06dZ","host":"web-%d","level":"INFO","service":"checkout","message":"GET /api/cart/%d 200 %dms %s"}`,
			i%60, i, i%16, i, i%500, pad)
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	warmUp.Do(func() { // the JVM's JIT: the first pass is much slower
		runTopicToIndex(b, s, br.Addr, topic, docs)
	})
	b.ResetTimer()
	var rate, weirCPU, esCPU float64
	for it := 0; it < b.N; it++ {
		r, w, e := runTopicToIndex(b, s, br.Addr, topic, docs)
		rate, weirCPU, esCPU = rate+r, weirCPU+w, esCPU+e
	}
	b.ReportMetric(rate/float64(b.N), "docs/s")
	b.ReportMetric(weirCPU/float64(b.N), "weir-cpu-µs/doc")
	b.ReportMetric(esCPU/float64(b.N), "es-cpu-µs/doc")
	b.ReportMetric(0, "ns/op")
}

var warmUp sync.Once

// runTopicToIndex indexes the whole topic into a new index with a new
// group and returns docs/s and CPU µs per document (weir, search server).
func runTopicToIndex(b *testing.B, s *searchtest.Server, broker, topic string, docs int) (rate, weirCPU, esCPU float64) {
	b.StopTimer()
	defer b.StartTimer()
	index := fmt.Sprintf("weir-bench-%d", time.Now().UnixNano())
	s.MustDo(b, "PUT", "/"+index, []byte(`{"settings":{"number_of_shards":1,"number_of_replicas":0,"refresh_interval":"30s"}}`))
	defer s.MustDo(b, "DELETE", "/"+index, nil)
	cfg := Defaults()
	cfg.URLs = []string{s.URL}
	cfg.Index = index
	cfg.IDFrom = "none"
	sink := &firstWrite{Sink: NewSink(cfg)}
	rt := &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{broker}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- rt.RunSink(ctx, "bench-"+index, sink, connectors.SinkOptions{Topics: []string{topic}})
	}()
	var esStart time.Duration
	deadline := time.Now().Add(5 * time.Minute)
	for {
		select {
		case err := <-done:
			b.Fatalf("sink stopped early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if sink.at.Load() != 0 && esStart == 0 {
			esStart = pidCPU(s.PID())
		}
		if ix := sink.Indexer(); ix != nil && ix.Stats().Stored >= uint64(docs) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("not all documents stored within 5 minutes: %+v", sink.Indexer().Stats())
		}
	}
	el := time.Since(time.Unix(0, sink.at.Load()))
	cpu := processCPU() - sink.cpu
	es := pidCPU(s.PID()) - esStart
	cancel()
	if err := <-done; err != nil {
		b.Fatalf("sink: %v", err)
	}
	if st := sink.Indexer().Stats(); st.DeadLettered != 0 {
		b.Fatalf("dead letters: %+v", st)
	}
	n := float64(docs)
	return n / el.Seconds(), float64(cpu.Microseconds()) / n, float64(es.Microseconds()) / n
}
