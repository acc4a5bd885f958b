package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
)

// ConsumeConfig configures Consume. Zero values mean the documented
// defaults.
type ConsumeConfig struct {
	Brokers        []string             // required
	Security       kafkaclient.Security // TLS and SASL (zero: PLAINTEXT)
	Topic          string               // required
	Records        int64                // stop after this many records; 0 = until idle
	Idle           time.Duration        // stop when no record arrived for this long; default 10s
	FetchMaxBytes  int32                // kgo FetchMaxBytes; default 64 MiB
	PartitionBytes int32                // kgo FetchMaxPartitionBytes; default 8 MiB
	Report         time.Duration        // progress line interval; default 5s, < 0 disables
	Out            io.Writer            // progress and summary lines; nil discards
	ExtraOpts      []kgo.Opt            // appended last
}

// ConsumeResult is what Consume measured.
type ConsumeResult struct {
	Records int64         // records read
	Bytes   int64         // key plus value bytes read
	Elapsed time.Duration // first poll to last record
	Fetches int64         // fetch responses read
	// FetchLatency is each Fetch request's write-to-response-read time in
	// nanoseconds. While the consumer lags it measures the broker's read
	// path; once caught up it includes the long-poll wait (FetchMaxWait).
	FetchLatency *Histogram
}

// RecordsPerSec is the read record rate.
func (r ConsumeResult) RecordsPerSec() float64 { return perSec(float64(r.Records), r.Elapsed) }

// MBPerSec is the read rate in MiB/s.
func (r ConsumeResult) MBPerSec() float64 { return perSec(float64(r.Bytes)/(1<<20), r.Elapsed) }

// Summary formats r like kafka-consumer-perf-test's result, with fetch
// latency quantiles.
func (r ConsumeResult) Summary() string {
	h := r.FetchLatency
	return fmt.Sprintf("%d records consumed, %.1f records/sec (%.2f MB/sec), %.2f MB, %d fetches, fetch latency %.3f ms 50th, %.3f ms 99th, %.3f ms 99.9th, %.3f ms max; %.2f s",
		r.Records, r.RecordsPerSec(), r.MBPerSec(), float64(r.Bytes)/(1<<20), r.Fetches,
		ms(h.Quantile(0.5)), ms(h.Quantile(0.99)), ms(h.Quantile(0.999)), ms(h.Max()), r.Elapsed.Seconds())
}

type fetchHook struct{ h *Histogram }

func (f fetchHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	if key == 1 && e2e.Err() == nil {
		f.h.RecordDuration(e2e.DurationE2E())
	}
}

// ErrIdle is returned by Consume when it stopped for lack of records before
// reading cfg.Records.
var ErrIdle = errors.New("no records arrived within the idle timeout")

// Consume reads cfg.Topic from the earliest offset of every partition
// (no consumer group) until cfg.Records records were read, nothing arrived
// for cfg.Idle, or ctx ends.
func Consume(ctx context.Context, cfg ConsumeConfig) (ConsumeResult, error) {
	res := ConsumeResult{FetchLatency: new(Histogram)}
	if len(cfg.Brokers) == 0 {
		return res, fmt.Errorf("%w: no brokers", ErrConfig)
	}
	if cfg.Topic == "" {
		return res, fmt.Errorf("%w: no topic (set --topic)", ErrConfig)
	}
	if cfg.Records < 0 {
		return res, fmt.Errorf("%w: --records %d must not be negative", ErrConfig, cfg.Records)
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 10 * time.Second
	}
	if cfg.FetchMaxBytes <= 0 {
		cfg.FetchMaxBytes = 64 << 20
	}
	if cfg.PartitionBytes <= 0 {
		cfg.PartitionBytes = 8 << 20
	}
	if cfg.Report == 0 {
		cfg.Report = 5 * time.Second
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	opts := []kgo.Opt{
		kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(cfg.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(cfg.PartitionBytes),
		kgo.BrokerMaxReadBytes(2 * cfg.FetchMaxBytes),
		kgo.WithHooks(fetchHook{res.FetchLatency}),
	}
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: cfg.Brokers, Security: cfg.Security}, append(opts, cfg.ExtraOpts...)...)
	if err != nil {
		return res, fmt.Errorf("consumer client: %w", err)
	}
	defer cl.Close()

	var win window
	start := time.Now()
	lastReport, lastRecord := start, start
	var lastFetches int64
	for cfg.Records == 0 || res.Records < cfg.Records {
		pollCtx, cancel := context.WithDeadline(ctx, lastRecord.Add(cfg.Idle))
		if cfg.Report > 0 {
			if next := lastReport.Add(cfg.Report); next.Before(lastRecord.Add(cfg.Idle)) {
				cancel()
				pollCtx, cancel = context.WithDeadline(ctx, next)
			}
		}
		fs := cl.PollFetches(pollCtx)
		cancel()
		now := time.Now()
		var stop error
		fs.EachError(func(t string, p int32, err error) {
			switch {
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			default:
				if stop == nil {
					stop = fmt.Errorf("consuming topic %q partition %d: %w", t, p, err)
				}
			}
		})
		got := int64(0)
		fs.EachRecord(func(r *kgo.Record) {
			if cfg.Records > 0 && res.Records >= cfg.Records {
				return
			}
			n := int64(len(r.Key) + len(r.Value))
			res.Records++
			res.Bytes += n
			win.add(n, 0)
			got++
		})
		res.Fetches = int64(res.FetchLatency.Count())
		if got > 0 {
			lastRecord = now
			res.Elapsed = now.Sub(start)
		}
		if cfg.Report > 0 && now.Sub(lastReport) >= cfg.Report {
			fmt.Fprintf(cfg.Out, "%s, %d fetches\n", win.rateLine("consumed", now.Sub(lastReport)), res.Fetches-lastFetches)
			lastFetches = res.Fetches
			lastReport = now
		}
		if stop != nil {
			fmt.Fprintln(cfg.Out, res.Summary())
			return res, stop
		}
		if err := ctx.Err(); err != nil {
			fmt.Fprintln(cfg.Out, res.Summary())
			return res, err
		}
		if now.Sub(lastRecord) >= cfg.Idle {
			fmt.Fprintln(cfg.Out, res.Summary())
			if cfg.Records > 0 {
				return res, fmt.Errorf("topic %q: read %d of %d records: %w (%s)", cfg.Topic, res.Records, cfg.Records, ErrIdle, cfg.Idle)
			}
			return res, nil
		}
	}
	res.Fetches = int64(res.FetchLatency.Count())
	fmt.Fprintln(cfg.Out, res.Summary())
	return res, nil
}
