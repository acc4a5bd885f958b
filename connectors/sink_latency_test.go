package connectors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
)

// timedSink notes when its first Write came.
type timedSink struct {
	memSink
	mu    sync.Mutex
	first time.Time
}

func (s *timedSink) Write(ctx context.Context, rs []*kgo.Record) error {
	s.mu.Lock()
	if s.first.IsZero() {
		s.first = time.Now()
	}
	s.mu.Unlock()
	return s.memSink.Write(ctx, rs)
}

// A sink's records are flushed within about FlushInterval of their
// arrival, however they arrive: a backlog larger than MaxPollRecords with
// a record to dead-letter in it (the first dead letter of a connector
// must not stall the flush until the client's next metadata refresh, 5 s,
// as it did when the dead-letter topic was auto-created by that first
// produce), and a record produced while the task idles in a long-poll
// fetch (it must not wait for the fetch's max wait, 5 s).
func TestSinkTaskFlushLatency(t *testing.T) {
	b := testbroker.Start(t)
	b.CreateTopic("lat", 3, nil)
	cl := b.Client(kgo.DefaultProduceTopic("lat"))
	const n = 5002 // MaxPollRecords (5000) and two more
	var rs []*kgo.Record
	for i := 0; i < n; i++ {
		v := fmt.Sprint("v", i)
		if i == 1234 {
			v = "bad" + v // memSink dead-letters it
		}
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte(v)})
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rt := &Runtime{Brokers: []string{b.Addr}}
	sink := &timedSink{}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	const flush = 300 * time.Millisecond
	start := time.Now()
	go func() {
		errc <- rt.RunSink(ctx, "lat", sink, SinkOptions{Topics: []string{"lat"}, FlushInterval: flush})
	}()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}()
	waitStored := func(want int) time.Duration {
		t.Helper()
		began := time.Now()
		testbroker.CheckFor(t, 20*time.Second, func() error {
			if got := sink.count(); got < want {
				return fmt.Errorf("%d of %d records flushed", got, want)
			}
			return nil
		})
		return time.Since(began)
	}
	waitStored(n - 1)
	sink.mu.Lock()
	took := time.Since(sink.first)
	sink.mu.Unlock()
	t.Logf("backlog of %d: first records written %v after the start, all flushed %v later", n, (time.Since(start) - took).Round(time.Millisecond), took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("the backlog was flushed %v after its first records reached the sink (flush interval %v)", took.Round(time.Millisecond), flush)
	}
	if dl := b.ReadAll(DeadLetterTopic("lat")); len(dl) != 1 {
		t.Errorf("%d dead letters, want 1", len(dl))
	}
	// Idle: the task now waits in fetches. Records produced one at a time,
	// to every partition, must be flushed well before the 5 s max wait.
	for i := 0; i < 6; i++ {
		time.Sleep(700 * time.Millisecond) // let the consumer settle into a long-poll fetch
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte(fmt.Sprint("late", i)), Value: []byte("late")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if d := waitStored(n - 1 + i + 1); d > 2*time.Second {
			t.Errorf("record %d produced to an idle task was flushed after %v (flush interval %v)", i, d.Round(time.Millisecond), flush)
		} else {
			t.Logf("record %d flushed after %v", i, d.Round(time.Millisecond))
		}
	}
}
