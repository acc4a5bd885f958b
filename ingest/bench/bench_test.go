package bench

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testkit"
)

func newFake(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func TestProduceThenConsume(t *testing.T) {
	brokers := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out testkit.Buffer
	const n = 30000
	pr, err := Produce(ctx, ProduceConfig{
		Brokers: brokers, Topic: "bench", Records: n, RecordSize: 64,
		Acks: -1, Partitions: 4, Producers: 2, Report: 20 * time.Millisecond, Out: &out,
	})
	if err != nil {
		t.Fatalf("Produce: %v\n%s", err, out.String())
	}
	if pr.Records != n || pr.Bytes != n*64 || pr.Errors != 0 || pr.Latency.Count() != n {
		t.Fatalf("produce result %+v (latency count %d)", pr, pr.Latency.Count())
	}
	if pr.Latency.Quantile(0.5) <= 0 || pr.Latency.Max() < pr.Latency.Quantile(0.99) {
		t.Fatalf("implausible latencies: p50 %d p99 %d max %d", pr.Latency.Quantile(0.5), pr.Latency.Quantile(0.99), pr.Latency.Max())
	}
	if !strings.Contains(out.String(), "30000 records sent,") || !strings.Contains(out.String(), "ms 99.9th") {
		t.Fatalf("summary missing from output:\n%s", out.String())
	}

	// The topic was created with 4 partitions and records spread over them.
	cl, _ := kgo.NewClient(kgo.SeedBrokers(brokers...))
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	used := 0
	ends.Each(func(o kadm.ListedOffset) {
		total += o.Offset
		if o.Offset > 0 {
			used++
		}
	})
	if len(ends["bench"]) != 4 || total != n || used < 2 {
		t.Fatalf("end offsets %v: want 4 partitions summing to %d over >= 2 partitions", ends, n)
	}

	var cout testkit.Buffer
	cr, err := Consume(ctx, ConsumeConfig{Brokers: brokers, Topic: "bench", Records: n, Idle: 10 * time.Second, Out: &cout})
	if err != nil {
		t.Fatalf("Consume: %v\n%s", err, cout.String())
	}
	if cr.Records != n || cr.Bytes != n*64 || cr.Fetches == 0 || cr.FetchLatency.Count() == 0 {
		t.Fatalf("consume result %+v", cr)
	}
	if !strings.Contains(cout.String(), "30000 records consumed") {
		t.Fatalf("consume summary missing:\n%s", cout.String())
	}

	// Asking for more than exists ends with ErrIdle after the idle time.
	cr, err = Consume(ctx, ConsumeConfig{Brokers: brokers, Topic: "bench", Records: n + 1, Idle: 500 * time.Millisecond})
	if !errors.Is(err, ErrIdle) || cr.Records != n {
		t.Fatalf("over-asking: err %v, records %d", err, cr.Records)
	}
}

func TestProduceThrottled(t *testing.T) {
	brokers := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n, rate = 600, 2000.0 // 0.3 s at the cap
	pr, err := Produce(ctx, ProduceConfig{Brokers: brokers, Topic: "slow", Records: n, Acks: 1, Throughput: rate, Report: -1})
	if err != nil {
		t.Fatal(err)
	}
	if min := time.Duration(float64(n-1) / rate * float64(time.Second)); pr.Elapsed < min-5*time.Millisecond {
		t.Fatalf("throttled run took %v, want >= %v", pr.Elapsed, min)
	}
	if pr.RecordsPerSec() > rate*1.1 {
		t.Fatalf("rate %.0f exceeds the cap %.0f", pr.RecordsPerSec(), rate)
	}
}

func TestProduceConfigErrors(t *testing.T) {
	ctx := context.Background()
	for _, c := range []ProduceConfig{
		{Topic: "t", Records: 1},
		{Brokers: []string{"x:1"}, Records: 1},
		{Brokers: []string{"x:1"}, Topic: "t"},
	} {
		if _, err := Produce(ctx, c); !errors.Is(err, ErrConfig) {
			t.Errorf("Produce(%+v) err = %v, want ErrConfig", c, err)
		}
	}
	if _, err := Consume(ctx, ConsumeConfig{Topic: "t"}); !errors.Is(err, ErrConfig) {
		t.Errorf("Consume without brokers err = %v", err)
	}
}

func TestProduceErrorStops(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The broker refuses every produce with a non-retriable error.
	c.ControlKey(0, func(req kmsgRequest) (kmsgResponse, error, bool) {
		c.KeepControl()
		return rejectProduce(req), nil, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pr, err := Produce(ctx, ProduceConfig{Brokers: c.ListenAddrs(), Topic: "t", Records: 1000, Acks: 1, Report: -1})
	if err == nil || !strings.Contains(err.Error(), `topic "t"`) {
		t.Fatalf("err = %v, want a produce error naming the topic", err)
	}
	if pr.Errors == 0 || pr.Records != 0 {
		t.Fatalf("result %+v", pr)
	}
}

// kgo truncates Record.Timestamp to milliseconds; latency must come from
// the precise enqueue time. With a clock that starts 0.9 ms into a
// millisecond and ticks 1 µs per reading, every latency stays far below
// the 0.9 ms a truncated start would add.
func TestLatencyUsesPreciseEnqueueTime(t *testing.T) {
	brokers := newFake(t)
	var mu sync.Mutex
	now := time.Unix(1700000000, 900_000) // .000900 s
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Microsecond)
		return now
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pr, err := Produce(ctx, ProduceConfig{Brokers: brokers, Topic: "clock", Records: 100, Acks: 1, Partitions: 1, Report: -1, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Latency.Count() != 100 || pr.Latency.Max() >= 500_000 {
		t.Fatalf("latencies: count %d, max %dns; want 100 below 0.5 ms of fake time", pr.Latency.Count(), pr.Latency.Max())
	}
}

// Warm-up records are produced (the topic holds all of them) but left out
// of the counts, the latency histogram and the elapsed time.
func TestProduceWarmupExcluded(t *testing.T) {
	brokers := newFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out testkit.Buffer
	const n, warm, rate = 1000, 400, 4000.0 // warm-up alone takes 0.1 s at the cap
	start := time.Now()
	pr, err := Produce(ctx, ProduceConfig{Brokers: brokers, Topic: "warm", Records: n, Warmup: warm, RecordSize: 10,
		Acks: 1, Partitions: 1, Producers: 2, Throughput: rate, Report: -1, Out: &out})
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Records != n-warm || pr.Warmup != warm || pr.Latency.Count() != n-warm || pr.Bytes != (n-warm)*10 {
		t.Fatalf("result %+v, %d latencies; want %d measured after %d warm-up", pr, pr.Latency.Count(), n-warm, warm)
	}
	// The throughput cap makes the warm-up last at least warm/rate
	// (0.1 s) however loaded the machine is: a measurement that excludes
	// it is shorter than the whole call by at least that much.
	if warmMin := time.Duration(float64(warm) / rate * float64(time.Second)); pr.Elapsed > wall-warmMin {
		t.Fatalf("elapsed %v includes the warm-up (the call took %v; the warm-up alone at least %v)", pr.Elapsed, wall, warmMin)
	}
	if !strings.Contains(out.String(), "600 records sent (after 400 warm-up records)") {
		t.Fatalf("summary: %s", out.String())
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(brokers...))
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "warm")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("warm", 0); o.Offset != n {
		t.Fatalf("topic holds %d records, want %d", o.Offset, n)
	}
	if _, err := Produce(ctx, ProduceConfig{Brokers: brokers, Topic: "warm", Records: 5, Warmup: 5, Acks: 1}); !errors.Is(err, ErrConfig) {
		t.Fatalf("warm-up of every record: err %v, want ErrConfig", err)
	}
}
