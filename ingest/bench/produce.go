package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
)

// ErrConfig is wrapped by every configuration error from Produce and
// Consume.
var ErrConfig = errors.New("invalid bench configuration")

// ProduceConfig configures Produce. Zero values mean the documented
// defaults.
type ProduceConfig struct {
	Brokers     []string             // required
	Security    kafkaclient.Security // TLS and SASL (weir bench --command-config; zero: PLAINTEXT)
	Topic       string               // required
	Records     int64                // records to send; required > 0
	RecordSize  int                  // value bytes per record; default 100
	Acks        kafkaclient.Acks     // 0, 1 or -1 (all); zero value is acks=0, so set it
	Compression kgo.CompressionCodec // default none
	Partitions  int32                // create Topic with this many partitions if missing; 0 leaves it to auto-creation
	Replication int16                // replication factor when creating; 0 = broker default
	Throughput  float64              // records/s cap across all producers; <= 0 unlimited
	Warmup      int64                // first records (of Records) sent but left out of the results; default 0
	Producers   int                  // parallel kgo clients (connections); default 1
	Linger      time.Duration        // kgo ProducerLinger; default 0 (send as soon as possible)
	BatchBytes  int32                // kgo ProducerBatchMaxBytes; default 1 MiB
	MaxBuffered int                  // kgo MaxBufferedRecords per producer; default 100,000
	BufferBytes int                  // kgo MaxBufferedBytes per producer; default 32 MiB (Java's buffer.memory)
	MaxInflight int                  // produce requests in flight per broker for acks 0/1; default 5
	Report      time.Duration        // progress line interval; default 5s, < 0 disables
	Out         io.Writer            // progress and summary lines; nil discards
	ExtraOpts   []kgo.Opt            // appended last, to override anything above
	Payload     func(i int64) []byte // optional value generator; default one random buffer reused
	Now         func() time.Time     // clock, for tests; default time.Now's monotonic reading
}

func (c *ProduceConfig) defaults() error {
	if len(c.Brokers) == 0 {
		return fmt.Errorf("%w: no brokers", ErrConfig)
	}
	if c.Topic == "" {
		return fmt.Errorf("%w: no topic (set --topic)", ErrConfig)
	}
	if c.Records <= 0 {
		return fmt.Errorf("%w: --records %d must be positive", ErrConfig, c.Records)
	}
	if c.RecordSize < 0 {
		return fmt.Errorf("%w: --record-size %d must not be negative", ErrConfig, c.RecordSize)
	}
	if c.RecordSize == 0 {
		c.RecordSize = 100
	}
	if c.Compression == (kgo.CompressionCodec{}) {
		c.Compression = kgo.NoCompression()
	}
	if c.Producers <= 0 {
		c.Producers = 1
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = 1 << 20
	}
	if c.MaxBuffered <= 0 {
		c.MaxBuffered = 100_000
	}
	if c.BufferBytes <= 0 {
		c.BufferBytes = 32 << 20
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = 5
	}
	if c.Report == 0 {
		c.Report = 5 * time.Second
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Warmup < 0 || c.Warmup >= c.Records {
		return fmt.Errorf("%w: --warmup-records %d must be in [0, --records %d)", ErrConfig, c.Warmup, c.Records)
	}
	if c.Now == nil {
		c.Now = monoClock()
	}
	return nil
}

// monoClock returns a clock reading only the monotonic clock: a quarter
// of time.Now's cost here (time.Since's fast path skips the wall clock),
// which matters at two readings per record and millions of records/s.
func monoClock() func() time.Time {
	base := time.Now()
	return func() time.Time { return base.Add(time.Since(base)) }
}

// ProduceResult is what Produce measured. Warm-up records count only in
// Warmup (and Errors).
type ProduceResult struct {
	Records int64         // measured records acknowledged without error
	Bytes   int64         // value bytes of those records
	Errors  int64         // records whose promise reported an error
	Warmup  int64         // warm-up records acknowledged (not in the figures)
	Elapsed time.Duration // first measured Produce call to last promise
	Latency *Histogram    // per-record enqueue→promise latency, nanoseconds
}

// RecordsPerSec is the acknowledged record rate.
func (r ProduceResult) RecordsPerSec() float64 { return perSec(float64(r.Records), r.Elapsed) }

// MBPerSec is the acknowledged value rate in MiB/s.
func (r ProduceResult) MBPerSec() float64 { return perSec(float64(r.Bytes)/(1<<20), r.Elapsed) }

// Summary formats r like kafka-producer-perf-test's final line.
func (r ProduceResult) Summary() string {
	h := r.Latency
	warm := ""
	if r.Warmup > 0 {
		warm = fmt.Sprintf(" (after %d warm-up records)", r.Warmup)
	}
	return fmt.Sprintf("%d records sent%s, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %.3f ms 50th, %.3f ms 99th, %.3f ms 99.9th; %d errors, %.2f s",
		r.Records, warm, r.RecordsPerSec(), r.MBPerSec(), h.Mean()/1e6, ms(h.Max()),
		ms(h.Quantile(0.5)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), r.Errors, r.Elapsed.Seconds())
}

func perSec(v float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return v / d.Seconds()
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// window accumulates the stats of one progress interval.
type window struct {
	n, bytes, latSum atomic.Int64
	latMax           atomic.Int64
}

func (w *window) add(bytes, lat int64) {
	w.n.Add(1)
	w.bytes.Add(bytes)
	w.latSum.Add(lat)
	for {
		m := w.latMax.Load()
		if lat <= m || w.latMax.CompareAndSwap(m, lat) {
			return
		}
	}
}

// line returns the progress line for the interval d, with latency, and
// resets w.
func (w *window) line(verb string, d time.Duration) string {
	s, m := w.latSum.Swap(0), w.latMax.Swap(0)
	n := w.n.Load()
	avg := 0.0
	if n > 0 {
		avg = float64(s) / float64(n) / 1e6
	}
	return fmt.Sprintf("%s, %.2f ms avg latency, %.2f ms max latency", w.rateLine(verb, d), avg, ms(m))
}

// rateLine returns "N records <verb>, X records/sec (Y MB/sec)" for the
// interval d and resets the counts.
func (w *window) rateLine(verb string, d time.Duration) string {
	n, b := w.n.Swap(0), w.bytes.Swap(0)
	return fmt.Sprintf("%d records %s, %.1f records/sec (%.2f MB/sec)",
		n, verb, perSec(float64(n), d), perSec(float64(b)/(1<<20), d))
}

// EnsureTopic creates topic with partitions (and replication, 0 = broker
// default) if it does not exist. It reports whether it created it and
// warns on out when an existing topic has a different partition count.
func EnsureTopic(ctx context.Context, o kafkaclient.Options, topic string, partitions int32, replication int16, out io.Writer) (bool, error) {
	brokers := o.Brokers
	cl, err := kafkaclient.New(o)
	if err != nil {
		return false, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return false, fmt.Errorf("listing topic %q on %v: %w", topic, brokers, err)
	}
	if td, ok := tds[topic]; ok && td.Err == nil {
		if int32(len(td.Partitions)) != partitions && out != nil {
			fmt.Fprintf(out, "topic %q exists with %d partitions (not %d); using it as is\n", topic, len(td.Partitions), partitions)
		}
		return false, nil
	}
	rf := replication
	if rf == 0 {
		rf = -1
	}
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("creating topic %q with %d partitions: %w (create it beforehand, or pass --partitions 0 to rely on the broker's auto-creation)", topic, partitions, err)
	}
	return true, nil
}

// Produce sends cfg.Records records of cfg.RecordSize bytes to cfg.Topic
// and waits for every promise. It stops early on ctx's end or the first
// produce error, which it returns with the partial result.
func Produce(ctx context.Context, cfg ProduceConfig) (ProduceResult, error) {
	res := ProduceResult{Latency: new(Histogram)}
	if err := cfg.defaults(); err != nil {
		return res, err
	}
	if cfg.Partitions > 0 {
		if _, err := EnsureTopic(ctx, kafkaclient.Options{Brokers: cfg.Brokers, Security: cfg.Security}, cfg.Topic, cfg.Partitions, cfg.Replication, cfg.Out); err != nil {
			return res, err
		}
	}

	payload := make([]byte, cfg.RecordSize)
	_, _ = rand.Read(payload)

	clients := make([]*kgo.Client, cfg.Producers)
	for i := range clients {
		opts := append(kafkaclient.Producer(cfg.Acks, cfg.Compression),
			kgo.DefaultProduceTopic(cfg.Topic),
			kgo.ProducerLinger(cfg.Linger),
			kgo.ProducerBatchMaxBytes(cfg.BatchBytes),
			kgo.MaxBufferedRecords(cfg.MaxBuffered),
			kgo.MaxBufferedBytes(cfg.BufferBytes),
			kgo.ProduceRequestTimeout(30*time.Second),
		)
		if cfg.Acks != -1 {
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(cfg.MaxInflight))
		}
		cl, err := kafkaclient.New(kafkaclient.Options{Brokers: cfg.Brokers, Security: cfg.Security}, append(opts, cfg.ExtraOpts...)...)
		if err != nil {
			for _, c := range clients[:i] {
				c.Close()
			}
			return res, fmt.Errorf("producer client: %w", err)
		}
		clients[i] = cl
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		win      window
		acked    atomic.Int64
		ackBytes atomic.Int64
		warmAck  atomic.Int64
		failed   atomic.Int64
		errOnce  sync.Once
		firstErr error
		pool     = sync.Pool{New: func() any { return new(benchRec) }}
	)
	promise := func(r *kgo.Record, err error) {
		br := r.Context.(*benchRec)
		lat := int64(cfg.Now().Sub(br.start))
		if err != nil {
			failed.Add(1)
			errOnce.Do(func() {
				firstErr = fmt.Errorf("producing to topic %q partition %d: %w", cfg.Topic, r.Partition, err)
				cancel()
			})
		} else {
			n := int64(len(r.Value))
			win.add(n, lat)
			if br.warm {
				warmAck.Add(1)
			} else {
				acked.Add(1)
				ackBytes.Add(n)
				res.Latency.Record(lat)
			}
		}
		*br = benchRec{}
		pool.Put(br)
	}

	start := cfg.Now()
	stopReport := make(chan struct{})
	reportDone := make(chan struct{})
	go func() {
		defer close(reportDone)
		if cfg.Report < 0 {
			<-stopReport
			return
		}
		t := time.NewTicker(cfg.Report)
		defer t.Stop()
		last := start
		for {
			select {
			case <-stopReport:
				return
			case <-t.C:
				now := cfg.Now()
				fmt.Fprintln(cfg.Out, win.line("sent", now.Sub(last)))
				last = now
			}
		}
	}()

	// measureStart is the earliest enqueue time of a measured record.
	var (
		msMu         sync.Mutex
		measureStart time.Time
	)
	markStart := func(t time.Time) {
		msMu.Lock()
		if measureStart.IsZero() || t.Before(measureStart) {
			measureStart = t
		}
		msMu.Unlock()
	}
	var wg sync.WaitGroup
	per, rem := cfg.Records/int64(cfg.Producers), cfg.Records%int64(cfg.Producers)
	wper, wrem := cfg.Warmup/int64(cfg.Producers), cfg.Warmup%int64(cfg.Producers)
	var base int64
	for i, cl := range clients {
		n, warm := per, wper
		if int64(i) < rem {
			n++
		}
		if int64(i) < wrem {
			warm++
		}
		wg.Add(1)
		go func(cl *kgo.Client, first, n, warm int64) {
			defer wg.Done()
			th := newThrottle(cfg.Throughput/float64(cfg.Producers), cfg.Now)
			for j := int64(0); j < n; j++ {
				if runCtx.Err() != nil {
					break
				}
				// One clock reading per record: the throttle's, which
				// is also the record's enqueue time.
				now := th.wait(runCtx, j)
				br := pool.Get().(*benchRec)
				r := &br.rec
				r.Context = br
				if cfg.Payload != nil {
					r.Value = cfg.Payload(first + j)
				} else {
					r.Value = payload
				}
				br.start = now
				// Setting the timestamp spares kgo its own time.Now
				// per record (a wall and a monotonic clock reading).
				r.Timestamp = now
				br.warm = j < warm
				if j == warm {
					markStart(now)
				}
				cl.Produce(runCtx, r, promise)
			}
			_ = cl.Flush(ctx)
		}(cl, base, n, warm)
		base += n
	}
	wg.Wait()
	if measureStart.IsZero() {
		measureStart = start
	}
	res.Elapsed = cfg.Now().Sub(measureStart)
	close(stopReport)
	<-reportDone

	res.Records, res.Bytes, res.Errors, res.Warmup = acked.Load(), ackBytes.Load(), failed.Load(), warmAck.Load()
	fmt.Fprintln(cfg.Out, res.Summary())
	if firstErr != nil {
		return res, firstErr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

// benchRec is a pooled record with its enqueue time. kgo truncates
// Record.Timestamp to milliseconds (dropping the monotonic clock), so the
// start time is kept here; the record's Context points back at the
// benchRec (a never-cancelled context, allocation free) so the promise
// finds it.
type benchRec struct {
	rec   kgo.Record
	start time.Time
	warm  bool // a warm-up record: not in the results
}

func (*benchRec) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*benchRec) Done() <-chan struct{}       { return nil }
func (*benchRec) Err() error                  { return nil }
func (*benchRec) Value(any) any               { return nil }

var _ context.Context = (*benchRec)(nil)

// throttle paces one producer at rate records/s, as the Java perf test's
// ThroughputThrottler does: sleep whenever ahead of schedule.
type throttle struct {
	rate  float64
	start time.Time
	now   func() time.Time
}

func newThrottle(rate float64, now func() time.Time) *throttle {
	return &throttle{rate: rate, start: now(), now: now}
}

// wait blocks until record i (0-based) is due and returns the time then.
func (t *throttle) wait(ctx context.Context, i int64) time.Time {
	now := t.now()
	if t.rate <= 0 {
		return now
	}
	due := t.start.Add(time.Duration(float64(i) / t.rate * float64(time.Second)))
	if d := due.Sub(now); d > 0 {
		// Sleeping below ~1ms is imprecise; let short debts accumulate.
		if d < time.Millisecond {
			return now
		}
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
		}
		now = t.now()
	}
	return now
}
