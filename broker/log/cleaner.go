package log

import (
	"errors"
	"math"
	"time"

	"go.uber.org/zap"
)

// CleanerConfig is the log cleaner's broker-wide settings, Kafka's
// CleanerConfig (log.cleaner.*). The per-topic ones (delete.retention.ms,
// min.compaction.lag.ms, max.compaction.lag.ms, min.cleanable.dirty.ratio,
// whose broker defaults are log.cleaner.*) are in Config.
type CleanerConfig struct {
	// Backoff is log.cleaner.backoff.ms: the sleep between cleaning
	// rounds (a round looks at every compacted log and cleans those due).
	Backoff time.Duration
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size, shared by
	// Threads cleaner threads; with IOBufferLoadFactor it bounds the keys
	// one pass dedupes (Kafka's SkimpyOffsetMap: 24 bytes an entry, filled
	// up to the load factor); a log with more keys is cleaned over
	// several passes. 0 = weir's default (4 Mi keys).
	DedupeBufferSize   int64
	Threads            int     // log.cleaner.threads (divides the buffer; weir cleans on one goroutine)
	IOBufferLoadFactor float64 // log.cleaner.io.buffer.load.factor (default 0.9)
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second: the
	// cleaner's read plus write rate; <= 0 or +Inf = unlimited.
	IOMaxBytesPerSecond float64
}

// offsetMapEntry is Kafka's SkimpyOffsetMap entry size: an MD5 hash (16
// bytes) and an offset (8).
const offsetMapEntry = 24

// maxKeys is the keys one pass may dedupe.
func (c CleanerConfig) maxKeys() int {
	if c.DedupeBufferSize <= 0 {
		return maxCompactKeys
	}
	threads := int64(max(c.Threads, 1))
	lf := c.IOBufferLoadFactor
	if lf <= 0 || lf > 1 {
		lf = 0.9
	}
	mem := min(c.DedupeBufferSize/threads, math.MaxInt32)
	return max(int(float64(mem/offsetMapEntry)*lf), 1)
}

// WakeCleaner starts a cleaning round now (with the settings of that
// moment) instead of at the end of the current backoff.
func (m *Manager) WakeCleaner() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) cleanerConfig() CleanerConfig {
	if m.opts.Cleaner != nil {
		c := m.opts.Cleaner()
		if c.Backoff <= 0 {
			c.Backoff = time.Millisecond // log.cleaner.backoff.ms=0: back to back
		}
		return c
	}
	return CleanerConfig{Backoff: m.opts.CleanerInterval}
}

// cleanerLoop is Kafka's CleanerThread: a round over the compacted logs,
// then log.cleaner.backoff.ms of sleep; the settings are read anew for
// every round.
func (m *Manager) cleanerLoop() {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			t := time.NewTimer(m.cleanerConfig().Backoff)
			select {
			case <-m.stop:
				t.Stop()
				return
			case <-m.wake:
				t.Stop()
			case <-t.C:
			}
			if !m.cleanRound(m.cleanerConfig()) {
				return
			}
		}
	}()
}

// cleanRound compacts every log that is due; false when the manager stops.
func (m *Manager) cleanRound(c CleanerConfig) bool {
	p := cleanerPass{maxKeys: c.maxKeys()}
	if r := c.IOMaxBytesPerSecond; r > 0 && !math.IsInf(r, 1) {
		p.throttle = m.throttler(r)
	}
	for _, l := range m.snapshot() {
		select {
		case <-m.stop:
			return false
		default:
		}
		if _, err := l.maybeCompact(p); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Warn("log compaction failed", zap.String("partition_dir", l.dir), zap.Error(err))
		}
	}
	return true
}

// throttler is Kafka's Throttler for the cleaner's I/O: after n more
// bytes, it sleeps as long as keeps the round's bytes per second at or
// under rate (a stop of the manager ends the sleep).
func (m *Manager) throttler(rate float64) func(n int64) {
	start := time.Now()
	var total int64
	return func(n int64) {
		total += n
		want := time.Duration(float64(total) / rate * float64(time.Second))
		if wait := want - time.Since(start); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-m.stop:
			case <-t.C:
			}
			t.Stop()
		}
	}
}
