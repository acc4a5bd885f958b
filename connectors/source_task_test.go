package connectors

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
)

// counterSource emits records "sp-i" for source partitions sp0..spN-1,
// position = big-endian i, until limit records per partition.
type counterSource struct {
	parts, limit int
	big          map[int]int   // record index → value size override
	pace         time.Duration // a pause before each Poll's records (0: none)
	pad          int           // bytes appended to every value

	mu        sync.Mutex
	next      []uint64
	restored  map[string][]byte
	committed map[string][]byte
	opened    bool
}

func (s *counterSource) Open(_ context.Context, sc SourceContext, restored map[string][]byte) error {
	s.restored = restored
	s.next = make([]uint64, s.parts)
	for i := range s.next {
		if p, ok := restored[fmt.Sprintf("sp%d", i)]; ok {
			s.next[i] = binary.BigEndian.Uint64(p) + 1
		}
	}
	s.opened = sc.Name() != ""
	return nil
}

func (s *counterSource) Poll(ctx context.Context, buf []SourceRecord) ([]SourceRecord, error) {
	if s.pace > 0 {
		select {
		case <-ctx.Done():
			return buf, nil
		case <-time.After(s.pace):
		}
	}
	for i := 0; i < s.parts; i++ {
		for k := 0; k < 7 && s.next[i] < uint64(s.limit); k++ {
			n := s.next[i]
			v := []byte(fmt.Sprintf("sp%d-%d", i, n))
			if sz, ok := s.big[int(n)]; ok && i == 0 {
				v = append(v, make([]byte, sz)...)
			}
			if s.pad > 0 {
				v = append(v, make([]byte, s.pad)...)
			}
			buf = append(buf, SourceRecord{Key: []byte(fmt.Sprintf("sp%d", i)), Value: v,
				SourcePartition: fmt.Sprintf("sp%d", i), Position: binary.BigEndian.AppendUint64(nil, n)})
			s.next[i]++
		}
	}
	if len(buf) == 0 {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return buf, nil
}

func (s *counterSource) Committed(p map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed == nil {
		s.committed = map[string][]byte{}
	}
	for k, v := range p {
		s.committed[k] = append([]byte(nil), v...)
	}
}

func (s *counterSource) Close() error { return nil }

func (s *counterSource) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < s.parts; i++ {
		p := s.committed[fmt.Sprintf("sp%d", i)]
		if len(p) != 8 || binary.BigEndian.Uint64(p) != uint64(s.limit-1) {
			return false
		}
	}
	return true
}

func runSource(t *testing.T, rt *Runtime, src *counterSource, opts SourceOptions) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- rt.RunSource(ctx, "counter", src, opts) }()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		select {
		case err := <-errc:
			t.Fatalf("source stopped early: %v", err)
		default:
		}
		if !src.done() {
			src.mu.Lock()
			defer src.mu.Unlock()
			return fmt.Errorf("positions committed so far: %v", src.committed)
		}
		return nil
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// values returns the record values of topic per key, in offset order.
func values(b *testbroker.Broker, topic string) map[string][]string {
	out := map[string][]string{}
	for _, r := range b.ReadAll(topic) {
		out[string(r.Key)] = append(out[string(r.Key)], string(r.Value))
	}
	return out
}

func checkExactlyOnce(t *testing.T, got map[string][]string, parts, limit int) {
	t.Helper()
	for i := 0; i < parts; i++ {
		vs := got[fmt.Sprintf("sp%d", i)]
		if len(vs) != limit {
			t.Fatalf("sp%d: %d records, want %d", i, len(vs), limit)
		}
		for n, v := range vs {
			if !strings.HasPrefix(v, fmt.Sprintf("sp%d-%d", i, n)) {
				t.Fatalf("sp%d record %d = %.30q", i, n, v)
			}
		}
	}
}

func TestSourceTaskStoresAndRestoresPositions(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("dst", 3, nil)
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Logger: zap.NewNop()}
	src := &counterSource{parts: 3, limit: 200}
	runSource(t, rt, src, SourceOptions{Topic: "dst", CommitInterval: 50 * time.Millisecond})
	if !src.opened || len(src.restored) != 0 {
		t.Fatalf("first run: opened %v, restored %v", src.opened, src.restored)
	}
	// Second run: resumes after the stored positions, writes 100 more.
	src2 := &counterSource{parts: 3, limit: 300}
	runSource(t, rt, src2, SourceOptions{Topic: "dst"})
	for i := 0; i < 3; i++ {
		if p := src2.restored[fmt.Sprintf("sp%d", i)]; binary.BigEndian.Uint64(p) != 199 {
			t.Fatalf("restored sp%d = %x, want 199", i, p)
		}
	}
	checkExactlyOnce(t, values(b, "dst"), 3, 300)
	// Every record carries its position header.
	for _, r := range b.ReadAll("dst")[:5] {
		if len(r.Headers) != 1 || r.Headers[0].Key != SourceHeader {
			t.Fatalf("headers %v", r.Headers)
		}
	}
}

// Records acknowledged by the broker after the last stored commit (a
// crashed run) are found by the scan and not produced again.
func TestSourceTaskRestoresFromDestinationScan(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("dst", 2, nil)
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}}
	src := &counterSource{parts: 2, limit: 50}
	runSource(t, rt, src, SourceOptions{Topic: "dst"})
	// A "crashed" run wrote records 50..79 of sp0 (seq 51..80) and never
	// stored their positions.
	cl := b.Client()
	var recs []*kgo.Record
	for n := 50; n < 80; n++ {
		recs = append(recs, &kgo.Record{Topic: "dst", Key: []byte("sp0"), Value: []byte(fmt.Sprintf("sp0-%d", n)),
			Headers: []kgo.RecordHeader{{Key: SourceHeader, Value: appendSourceHeader(nil, "counter", "sp0", uint64(n+1), binary.BigEndian.AppendUint64(nil, uint64(n)))}}})
	}
	// Another connector's header on the same topic is ignored.
	recs = append(recs, &kgo.Record{Topic: "dst", Key: []byte("other"), Value: []byte("x"),
		Headers: []kgo.RecordHeader{{Key: SourceHeader, Value: appendSourceHeader(nil, "other", "sp1", 999, []byte{9})}}})
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	src2 := &counterSource{parts: 2, limit: 100}
	runSource(t, rt, src2, SourceOptions{Topic: "dst"})
	if p := src2.restored["sp0"]; binary.BigEndian.Uint64(p) != 79 {
		t.Fatalf("restored sp0 = %x, want 79 (from the scan)", p)
	}
	got := values(b, "dst")
	delete(got, "other")
	checkExactlyOnce(t, got, 2, 100)
}

// A record the broker refuses goes to the dead-letter topic with its
// source position, and the positions after it still advance.
func TestSourceTaskDeadLettersRefusedRecords(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("dst", 1, nil)
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Metrics: NewMetricSet(nil)}
	src := &counterSource{parts: 1, limit: 40, big: map[int]int{17: 2 << 20}}
	runSource(t, rt, src, SourceOptions{Topic: "dst"})
	got := values(b, "dst")["sp0"]
	if len(got) != 39 {
		t.Fatalf("%d records in dst, want 39", len(got))
	}
	dl := b.ReadAll(deadletter.Topic("counter"))
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	h := map[string]string{}
	for _, x := range dl[0].Headers {
		h[x.Key] = string(x.Value)
	}
	if h[deadletter.HeaderConnector] != "counter" || h[deadletter.HeaderTopic] != "dst" || h[deadletter.HeaderSourcePartition] != "sp0" ||
		binary.BigEndian.Uint64([]byte(h[deadletter.HeaderSourcePosition])) != 17 || !strings.Contains(h[deadletter.HeaderMessage], "MESSAGE_TOO_LARGE") {
		t.Fatalf("dead-letter headers %v", h)
	}
	if !strings.HasPrefix(string(dl[0].Value), "sp0-17") {
		t.Fatalf("dead letter value %.20q", dl[0].Value)
	}
	// Stored positions are in the compacted offsets topic.
	adm := kadm.NewClient(b.Client())
	cfgs, err := adm.DescribeTopicConfigs(context.Background(), DefaultOffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := cfgs.On(DefaultOffsetsTopic, nil)
	found := false
	for _, kv := range c.Configs {
		if kv.Key == "cleanup.policy" && kv.MaybeValue() == "compact" {
			found = true
		}
	}
	if !found {
		t.Fatalf("offsets topic configs: %+v", c.Configs)
	}
}

// A crashed run's records found by the scan with a gap in their seqs
// (one still in flight when the task died): the restart resumes after
// the unbroken run before the gap, so the missing record is read again
// rather than skipped (at-least-once: the ones after it repeat).
func TestSourceTaskScanStopsAtAGap(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("dst", 2, nil)
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}}
	runSource(t, rt, &counterSource{parts: 1, limit: 50}, SourceOptions{Topic: "dst"})
	cl := b.Client()
	var recs []*kgo.Record
	for n := 50; n < 80; n++ {
		if n == 61 {
			continue // in flight when the "crash" came
		}
		recs = append(recs, &kgo.Record{Topic: "dst", Key: []byte("sp0"), Value: []byte(fmt.Sprintf("sp0-%d", n)),
			Headers: []kgo.RecordHeader{{Key: SourceHeader, Value: appendSourceHeader(nil, "counter", "sp0", uint64(n+1), binary.BigEndian.AppendUint64(nil, uint64(n)))}}})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	src := &counterSource{parts: 1, limit: 100}
	runSource(t, rt, src, SourceOptions{Topic: "dst"})
	if p := src.restored["sp0"]; binary.BigEndian.Uint64(p) != 60 {
		t.Fatalf("restored sp0 = %d, want 60 (the last before the gap)", binary.BigEndian.Uint64(p))
	}
	seen := map[string]int{}
	for _, v := range values(b, "dst")["sp0"] {
		seen[v]++
	}
	for n := 0; n < 100; n++ {
		if seen[fmt.Sprintf("sp0-%d", n)] == 0 {
			t.Fatalf("sp0-%d is missing", n)
		}
	}
}

// TestSourceTaskPerWorkerPositions: the same source run by two workers of
// a group (SourceOptions.Worker) keeps two sets of positions, under
// "counter@a" and "counter@b", and each worker resumes from its own; with
// SourceOptions.GroupWorker its records carry a WorkerHeader naming it.
func TestSourceTaskPerWorkerPositions(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("dst-a", 1, nil)
	b.CreateTopic("dst-b", 1, nil)
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Logger: zap.NewNop()}
	runSource(t, rt, &counterSource{parts: 1, limit: 100}, SourceOptions{Topic: "dst-a", Worker: "a", CommitInterval: 50 * time.Millisecond})
	srcB := &counterSource{parts: 1, limit: 40}
	runSource(t, rt, srcB, SourceOptions{Topic: "dst-b", Worker: "b", GroupWorker: "b", CommitInterval: 50 * time.Millisecond})
	if len(srcB.restored) != 0 {
		t.Fatalf("worker b restored %v: worker a's positions", srcB.restored)
	}
	srcA := &counterSource{parts: 1, limit: 150}
	runSource(t, rt, srcA, SourceOptions{Topic: "dst-a", Worker: "a"})
	if p := srcA.restored["sp0"]; binary.BigEndian.Uint64(p) != 99 {
		t.Fatalf("worker a restored sp0 = %x, want 99 (its own position)", p)
	}
	checkExactlyOnce(t, values(b, "dst-a"), 1, 150)
	checkExactlyOnce(t, values(b, "dst-b"), 1, 40)
	for _, r := range b.ReadAll("_weir_connect_offsets") {
		if k := string(r.Key); !strings.Contains(k, `"counter@a"`) && !strings.Contains(k, `"counter@b"`) {
			t.Errorf("offsets key %s names neither counter@a nor counter@b", k)
		}
	}
	// GroupWorker: every record names its worker (WorkerHeader), beside
	// its source position; without it, no such header.
	for topic, want := range map[string]string{"dst-a": "", "dst-b": "b"} {
		for _, r := range b.ReadAll(topic) {
			var ws []string
			src := 0
			for _, h := range r.Headers {
				switch h.Key {
				case WorkerHeader:
					ws = append(ws, string(h.Value))
				case SourceHeader:
					src++
				}
			}
			if strings.Join(ws, ",") != want || src != 1 {
				t.Fatalf("%s offset %d: %s headers %q and %d %s headers, want %q and 1", topic, r.Offset, WorkerHeader, ws, src, SourceHeader, want)
			}
		}
	}
}
