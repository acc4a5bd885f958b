package connectors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"weir/broker/brokertest/testbroker"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
)

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.Counter.GetValue()
}

// pushTest is a push source driven by the test: Open keeps the Pusher,
// Close waits for the test's pushing goroutines (as an HTTP server waits
// for the requests in flight).
type pushTest struct {
	mu      sync.Mutex
	p       *Pusher
	opened  chan struct{}
	running sync.WaitGroup
	closed  bool
}

func newPushTest() *pushTest { return &pushTest{opened: make(chan struct{})} }

func (s *pushTest) Open(_ context.Context, _ SourceContext, p *Pusher) error {
	s.mu.Lock()
	s.p = p
	s.mu.Unlock()
	close(s.opened)
	return nil
}

func (s *pushTest) Close() error {
	s.running.Wait()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// send pushes recs and waits for their fate.
func (s *pushTest) send(recs []SourceRecord) (PushResult, error) {
	done := make(chan PushResult, 1)
	if err := s.p.Push(context.Background(), recs, func(r PushResult) { done <- r }); err != nil {
		return PushResult{}, err
	}
	return <-done, nil
}

// dropOdd is a transform-like wrapper that drops records whose value
// ends in an odd digit.
type dropOdd struct{ inner Source }

func (d *dropOdd) Open(ctx context.Context, sc SourceContext, r map[string][]byte) error {
	return d.inner.Open(ctx, sc, r)
}
func (d *dropOdd) Close() error   { return d.inner.Close() }
func (d *dropOdd) Unwrap() Source { return d.inner }
func (d *dropOdd) Poll(ctx context.Context, buf []SourceRecord) ([]SourceRecord, error) {
	in, err := d.inner.Poll(ctx, nil)
	for i := range in {
		if v := in[i].Value; (v[len(v)-1]-'0')%2 == 1 {
			in[i].Drop()
			continue
		}
		buf = append(buf, in[i])
	}
	return buf, err
}

// TestPushSource: concurrent batches pushed through the runtime learn
// their fate (stored once acknowledged and in the topic; dropped by a
// wrapper; dead-lettered when the broker refuses a record); a stop
// waits for the pushes in flight, and a push after it fails.
func TestPushSource(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	small := "2000"
	b.CreateTopic("pushed", 2, map[string]*string{"max.message.bytes": &small})
	rt := &Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Metrics: NewMetricSet(nil)}
	ps := newPushTest()
	src := &dropOdd{inner: Push(ps, PushOptions{MaxRecords: 50})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- rt.RunSource(ctx, "push", src, SourceOptions{Topic: "pushed"}) }()
	select {
	case <-ps.opened:
	case err := <-errc:
		t.Fatalf("RunSource: %v", err)
	}

	const senders, batches, per = 8, 20, 10
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for n := 0; n < batches; n++ {
				recs := make([]SourceRecord, per)
				for i := range recs {
					recs[i].Value = fmt.Appendf(nil, "s%d-b%d-r%d", s, n, i)
				}
				res, err := ps.send(recs)
				if err != nil || res.Stored != per/2 || res.Dropped != per/2 || res.Err != nil {
					t.Errorf("sender %d batch %d: %+v, %v", s, n, res, err)
					return
				}
			}
		}(s)
	}
	wg.Wait()
	got := map[string]bool{}
	for _, r := range b.ReadAll("pushed") {
		if got[string(r.Value)] {
			t.Fatalf("%s twice", r.Value)
		}
		got[string(r.Value)] = true
	}
	if len(got) != senders*batches*per/2 {
		t.Fatalf("%d records in the topic right after the last fate, want %d", len(got), senders*batches*per/2)
	}

	// A record the broker refuses goes to the dead-letter topic; the
	// batch says so with the broker's error.
	res, err := ps.send([]SourceRecord{{Value: []byte(strings.Repeat("x", 5000) + "0")}})
	if err != nil || res.Stored != 0 || res.DeadLettered != 1 || res.Err == nil {
		t.Fatalf("refused record: %+v, %v", res, err)
	}
	if dl := b.ReadAll(deadletter.Topic("push")); len(dl) != 1 || len(dl[0].Value) != 5001 {
		t.Fatalf("dead-letter topic: %v", dl)
	}

	// Stop while a sender waits for its fate: the runtime drains it.
	ps.running.Add(1)
	started := make(chan struct{})
	var last PushResult
	go func() {
		defer ps.running.Done()
		done := make(chan PushResult, 1)
		recs := []SourceRecord{{Value: []byte("last0")}, {Value: []byte("last2")}}
		if err := ps.p.Push(context.Background(), recs, func(r PushResult) { done <- r }); err != nil {
			t.Errorf("push before the stop: %v", err)
			close(started)
			return
		}
		close(started)
		last = <-done
	}()
	<-started
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if last.Stored != 2 {
		t.Fatalf("batch in flight at the stop: %+v", last)
	}
	if err := ps.p.Push(context.Background(), []SourceRecord{{Value: []byte("late0")}}, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("push after the stop: %v", err)
	}
	if !ps.closed {
		t.Fatal("push source not closed")
	}
	if v := counterValue(rt.Metrics.For("push").RecordsOut); v != senders*batches*per/2+2 {
		t.Fatalf("records_out %v", v)
	}
}

// TestPushBounds: TryPush refuses a batch that does not fit while
// another is in flight, takes one that does, and admits any batch on an
// idle source; Push waits for room.
func TestPushBounds(t *testing.T) {
	t.Parallel()
	s := Push(newPushTest(), PushOptions{MaxRecords: 3, MaxBytes: 1 << 20}).(*pushSource)
	s.m = NewTestMetrics("bounds")
	p := s.p
	rec := func(n int) []SourceRecord {
		out := make([]SourceRecord, n)
		for i := range out {
			out[i].Value = []byte("v")
		}
		return out
	}
	var fates []PushResult
	note := func(r PushResult) { fates = append(fates, r) }
	if err := p.TryPush(rec(5), note); err != nil {
		t.Fatalf("a batch over the bound on an idle source: %v", err)
	}
	if err := p.TryPush(rec(1), note); !errors.Is(err, ErrPushFull) {
		t.Fatalf("TryPush over the bound: %v", err)
	}
	queued, _ := s.Poll(context.Background(), nil)
	if len(queued) != 5 {
		t.Fatalf("Poll took %d records", len(queued))
	}
	pushed := make(chan error, 1)
	go func() { pushed <- p.Push(context.Background(), rec(2), note) }()
	testbroker.CheckFor(t, 10*time.Second, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.waiting {
			return errors.New("Push is not waiting for room")
		}
		return nil
	})
	select {
	case err := <-pushed:
		t.Fatalf("Push returned (%v) while the source was full", err)
	default:
	}
	for i := range queued {
		queued[i].push.settle(fateStored, nil)
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	if len(fates) != 1 || fates[0].Stored != 5 {
		t.Fatalf("fates %+v", fates)
	}
	// Close fails what is left.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(fates) != 2 || fates[1].Failed != 2 || !errors.Is(fates[1].Err, ErrStopped) {
		t.Fatalf("fates after Close %+v", fates)
	}
}

// TestPushBatchFates: a batch's fates are counted per record from any
// goroutine and given once, after its last record; Close gives a
// partly settled batch's result with the rest Failed, and a fate counted
// after that changes nothing.
func TestPushBatchFates(t *testing.T) {
	t.Parallel()
	s := Push(newPushTest(), PushOptions{}).(*pushSource)
	s.m = NewTestMetrics("fates")
	recs := func(n int) []SourceRecord { return make([]SourceRecord, n) }
	var mu sync.Mutex
	var fates []PushResult
	note := func(r PushResult) { mu.Lock(); fates = append(fates, r); mu.Unlock() }

	const n = 1000
	if err := s.p.TryPush(recs(n), note); err != nil {
		t.Fatal(err)
	}
	queued, _ := s.Poll(context.Background(), nil)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += 4 {
				f := fateStored
				if i%10 == 0 {
					f = fateDropped
				}
				queued[i].push.settle(f, nil)
			}
		}(g)
	}
	wg.Wait()
	if len(fates) != 1 || fates[0] != (PushResult{Stored: n - n/10, Dropped: n / 10}) {
		t.Fatalf("fates %+v, want one with %d stored and %d dropped", fates, n-n/10, n/10)
	}
	s.mu.Lock()
	if s.inRecs != 0 || len(s.batches) != 0 {
		t.Errorf("%d records and %d batches still in flight", s.inRecs, len(s.batches))
	}
	s.mu.Unlock()

	if err := s.p.TryPush(recs(3), note); err != nil {
		t.Fatal(err)
	}
	queued, _ = s.Poll(context.Background(), queued[:0])
	refused := errors.New("refused")
	queued[0].push.settle(fateStored, nil)
	queued[1].push.settle(fateDeadLettered, refused)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	queued[2].push.settle(fateStored, nil) // after Close: ignored
	want := PushResult{Stored: 1, DeadLettered: 1, Failed: 1, Err: refused}
	if len(fates) != 2 || fates[1] != want {
		t.Fatalf("fates %+v, want a second %+v", fates, want)
	}
}
