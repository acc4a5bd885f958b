package connectors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
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
// must not stall the flush until the client's next metadata refresh, as
// it did when the dead-letter topic was auto-created by that first
// produce), and a record produced while the task idles in a long-poll
// fetch (it must not wait for the fetch's max wait).
//
// The test asserts behaviour, not wall time: the client's metadata age
// and fetch max wait are raised to stall (a minute, 5 s by default), so
// either bug holds records back for a minute, far past waitStored's
// deadline, while a working task flushes them in about FlushInterval
// even on a loaded machine.
func TestSinkTaskFlushLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("measures flush latency against multi-second stalls")
	}
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
	const stall = time.Minute
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}, Extra: []kgo.Opt{
		kgo.MetadataMinAge(stall), kgo.MetadataMaxAge(stall), kgo.FetchMaxWait(stall)}}}
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
	// waitStored's deadline is well under stall: records held back by
	// either bug fail it.
	waitStored := func(want int) time.Duration {
		t.Helper()
		began := time.Now()
		testbroker.CheckFor(t, stall/2, func() error {
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
	// The dead letter is produced beside the flush (awaited before the
	// offsets are committed), so it may land just after the stored count:
	// polled, with the same deadline under stall.
	testbroker.CheckFor(t, stall/2, func() error {
		if dl := b.ReadAll(deadletter.Topic("lat")); len(dl) != 1 {
			return fmt.Errorf("%d dead letters, want 1", len(dl))
		}
		return nil
	})
	// Idle: the task now waits in fetches. Records produced one at a time,
	// to every partition, must be flushed well before the max wait.
	for i := 0; i < 6; i++ {
		time.Sleep(700 * time.Millisecond) // let the consumer settle into a long-poll fetch
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte(fmt.Sprint("late", i)), Value: []byte("late")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		t.Logf("record %d flushed after %v (flush interval %v)", i, waitStored(n-1+i+1).Round(time.Millisecond), flush)
	}
}
