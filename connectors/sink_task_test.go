package connectors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
)

// memSink keeps flushed values; pending ones are lost unless flushed.
type memSink struct {
	failFlushes int   // retriable Flush failures before success
	fatalFlush  error // returned by every Flush if set

	mu      sync.Mutex
	sc      SinkContext
	pending []*kgo.Record
	stored  []string
	flushes int
	retries int
}

func (s *memSink) Open(_ context.Context, sc SinkContext) error { s.sc = sc; return nil }

func (s *memSink) Write(_ context.Context, rs []*kgo.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, rs...)
	return nil
}

func (s *memSink) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fatalFlush != nil {
		return s.fatalFlush
	}
	if s.failFlushes > 0 {
		s.failFlushes--
		s.retries++
		return fmt.Errorf("destination busy: %w", ErrRetriable)
	}
	for _, r := range s.pending {
		if strings.HasPrefix(string(r.Value), "bad") {
			s.sc.DeadLetter(r, fmt.Errorf("mapping conflict on %q: %w", r.Value, ErrBadRecord))
			continue
		}
		s.stored = append(s.stored, string(r.Value))
	}
	s.pending = nil
	s.flushes++
	return nil
}

func (s *memSink) Close() error { return nil }

func (s *memSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stored)
}

func produceN(t *testing.T, cl *kgo.Client, topic string, n int, bad func(int) bool) {
	t.Helper()
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("v%d", i)
		if bad(i) {
			v = "bad" + v
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 7)), Value: []byte(v)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// committed sums the group's committed offsets. A failed fetch (for
// example COORDINATOR_LOAD_IN_PROGRESS while __consumer_offsets loads) is
// "not yet": it is retried until it answers.
func committed(t *testing.T, b *testbroker.Broker, group string) int64 {
	t.Helper()
	var sum int64
	testbroker.CheckFor(t, 30*time.Second, func() error {
		os, err := kadm.NewClient(b.Client()).FetchOffsets(context.Background(), group)
		if err == nil {
			err = os.Error()
		}
		if err != nil {
			return err
		}
		sum = 0
		os.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return nil
	})
	return sum
}

func TestSinkTaskCommitsAfterFlushAndDeadLetters(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("src", 3, nil)
	produceN(t, b.Client(), "src", 1000, func(i int) bool { return i%100 == 7 })
	ms := NewMetricSet(nil)
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Metrics: ms}
	sink := &memSink{failFlushes: 2}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- rt.RunSink(ctx, "mem", sink, SinkOptions{Topics: []string{"src"}, FlushInterval: 100 * time.Millisecond,
			Backoff: &Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	}()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if n := committed(t, b, "weir-connect-mem"); n != 1000 {
			return fmt.Errorf("committed %d of 1000", n)
		}
		return nil
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if sink.count() != 990 || sink.retries != 2 {
		t.Fatalf("stored %d (want 990), retries %d (want 2)", sink.count(), sink.retries)
	}
	dl := b.ReadAll(deadletter.Topic("mem"))
	if len(dl) != 10 {
		t.Fatalf("%d dead letters, want 10", len(dl))
	}
	for _, r := range dl {
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		if h[deadletter.HeaderTopic] != "src" || h[deadletter.HeaderOffset] == "" || h[deadletter.HeaderPartition] == "" ||
			!strings.Contains(h[deadletter.HeaderMessage], "mapping conflict") || h[deadletter.HeaderConnector] != "mem" {
			t.Fatalf("dead-letter headers %v", h)
		}
	}
	m := ms.For("mem")
	if got := testutilValue(m.Retries); got < 2 {
		t.Fatalf("retries metric %v", got)
	}
	if got := testutilValue(m.DeadLetters); got != 10 {
		t.Fatalf("dead letters metric %v", got)
	}
}

func TestSinkTaskFailedFlushCommitsNothing(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	b.CreateTopic("src", 1, nil)
	produceN(t, b.Client(), "src", 100, func(int) bool { return false })
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}}
	boom := errors.New("disk on fire")
	err := rt.RunSink(context.Background(), "mem", &memSink{fatalFlush: boom}, SinkOptions{Topics: []string{"src"}, FlushInterval: 50 * time.Millisecond})
	if !errors.Is(err, boom) {
		t.Fatalf("RunSink = %v, want the flush error", err)
	}
	if n := committed(t, b, "weir-connect-mem"); n > 0 {
		t.Fatalf("committed %d after a failed flush", n)
	}
	// A healthy restart gets every record again.
	sink := &memSink{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- rt.RunSink(ctx, "mem", sink, SinkOptions{Topics: []string{"src"}, FlushInterval: 50 * time.Millisecond})
	}()
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if sink.count() < 100 {
			return fmt.Errorf("stored %d", sink.count())
		}
		return nil
	})
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := committed(t, b, "weir-connect-mem"); n != 100 {
		t.Fatalf("committed %d after the final commit, want 100", n)
	}
}
