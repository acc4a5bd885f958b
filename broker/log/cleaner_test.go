package log

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"weir/broker/log/vfs"
	"weir/internal/testkit"
)

// compactedLog opens a compacted log and appends segs sealed segments of
// keysPer distinct keys each (the same keys in every segment, so each
// segment supersedes the previous one), plus an active segment.
func compactedLog(t *testing.T, clk *fakeClock, cfg Config, segs, keysPer int) *Log {
	t.Helper()
	cfg.Compact, cfg.Delete = true, false
	cfg.DeleteRetentionMs = time.Hour
	l := mustOpen(t, vfs.NewMem(), tdir, cfg, testOpts(clk))
	t.Cleanup(func() { l.Close() })
	for s := 0; s < segs; s++ {
		addSegment(t, l, clk, s, keysPer)
	}
	return l
}

// addSegment appends one batch of keysPer keys (value tagged tag) and
// seals it.
func addSegment(t *testing.T, l *Log, clk *fakeClock, tag, keysPer int) {
	t.Helper()
	var kv []string
	for k := 0; k < keysPer; k++ {
		kv = append(kv, fmt.Sprintf("k%d", k), fmt.Sprintf("v%d", tag))
	}
	mustAppend(t, l, keyBatch(t, clk.Ms(), kv...))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
}

// log.cleaner.dedupe.buffer.size / threads / io.buffer.load.factor: the
// keys of one pass, as Kafka's SkimpyOffsetMap (24 bytes an entry).
func TestCleanerConfigMaxKeys(t *testing.T) {
	for _, c := range []struct {
		cfg  CleanerConfig
		want int
	}{
		{CleanerConfig{}, maxCompactKeys},
		{CleanerConfig{DedupeBufferSize: 134217728, Threads: 1, IOBufferLoadFactor: 0.9}, 5033164},
		{CleanerConfig{DedupeBufferSize: 134217728, Threads: 2, IOBufferLoadFactor: 0.9}, 2516581},
		{CleanerConfig{DedupeBufferSize: 240, Threads: 1, IOBufferLoadFactor: 1}, 10},
		{CleanerConfig{DedupeBufferSize: 240, Threads: 0, IOBufferLoadFactor: 0.5}, 5},
		{CleanerConfig{DedupeBufferSize: 1, Threads: 4, IOBufferLoadFactor: 0.9}, 1},
	} {
		if got := c.cfg.maxKeys(); got != c.want {
			t.Errorf("%+v: maxKeys %d, want %d", c.cfg, got, c.want)
		}
	}
}

// A dedupe buffer holding fewer keys than a segment has: a pass covers
// one segment only and the next pass goes on (Kafka cleans what fits).
func TestCleanerDedupeBufferBoundsPass(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.MinCleanableDirtyRatio = 0
	l := compactedLog(t, clk, cfg, 3, 4)
	segBase := func(i int) int64 {
		l.mu.RLock()
		defer l.mu.RUnlock()
		return l.segs[i].base
	}
	p := cleanerPass{maxKeys: CleanerConfig{DedupeBufferSize: 4 * 24, Threads: 1, IOBufferLoadFactor: 1}.maxKeys()}
	if _, err := l.maybeCompact(p); err != nil {
		t.Fatal(err)
	}
	l.maintMu.Lock()
	got := l.cleanedThrough
	l.maintMu.Unlock()
	if want := segBase(1); got != want {
		t.Fatalf("4-key buffer: cleaned through %d, want %d (one segment)", got, want)
	}
	if _, err := l.maybeCompact(cleanerPass{maxKeys: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	l.maintMu.Lock()
	got = l.cleanedThrough
	l.maintMu.Unlock()
	if want := segBase(len(l.segs) - 1); got != want {
		t.Fatalf("large buffer: cleaned through %d, want %d (every sealed segment)", got, want)
	}
}

// min.cleanable.dirty.ratio: after a pass, new dirty segments are cleaned
// only once they are that share of the sealed bytes.
func TestCleanerMinCleanableDirtyRatio(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.MinCleanableDirtyRatio = 0.9
	l := compactedLog(t, clk, cfg, 4, 8)
	if st, err := l.MaybeCompact(); err != nil || st.SegmentsCleaned == 0 {
		t.Fatalf("first pass (all dirty): %+v %v", st, err)
	}
	addSegment(t, l, clk, 10, 8) // one dirty segment beside the clean ones
	ratio, _ := l.dirtyRatio(l.cleanedThrough)
	if ratio <= 0 || ratio >= 0.9 {
		t.Fatalf("dirty ratio %v, want in (0, 0.9)", ratio)
	}
	if st, err := l.MaybeCompact(); err != nil || st.SegmentsCleaned != 0 {
		t.Fatalf("ratio %v < 0.9 cleaned: %+v %v", ratio, st, err)
	}
	cfg = l.Config()
	cfg.MinCleanableDirtyRatio = ratio
	l.SetConfig(cfg)
	if st, err := l.MaybeCompact(); err != nil || st.SegmentsCleaned == 0 {
		t.Fatalf("ratio %v >= min %v not cleaned: %+v %v", ratio, ratio, st, err)
	}
}

// max.compaction.lag.ms: a dirty segment older than it is cleaned below
// the dirty ratio.
func TestCleanerMaxCompactionLag(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.MinCleanableDirtyRatio = 1
	l := compactedLog(t, clk, cfg, 4, 8)
	if st, err := l.MaybeCompact(); err != nil || st.SegmentsCleaned == 0 {
		t.Fatalf("first pass: %+v %v", st, err)
	}
	addSegment(t, l, clk, 10, 8)
	clk.Add(time.Minute)
	if st, err := l.MaybeCompact(); err != nil || st.SegmentsCleaned != 0 {
		t.Fatalf("max lag forever: cleaned %+v %v", st, err)
	}
	cfg = l.Config()
	cfg.MaxCompactionLagMs = 30 * time.Second
	l.SetConfig(cfg)
	if st, err := l.MaybeCompact(); err != nil || st.SegmentsCleaned == 0 {
		t.Fatalf("dirty for 1 min > max lag 30 s, not cleaned: %+v %v", st, err)
	}
}

// log.cleaner.io.max.bytes.per.second: the throttle sleeps so the bytes
// per second stay under the rate.
func TestCleanerIOThrottle(t *testing.T) {
	m, err := NewManager(vfs.NewMem(), "/data", ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	th := m.throttler(1 << 20) // 1 MiB/s
	start := time.Now()
	th(128 << 10)
	th(128 << 10) // 256 KiB: at least 250 ms
	if el := time.Since(start); el < 240*time.Millisecond {
		t.Fatalf("256 KiB at 1 MiB/s took %v", el)
	}
	// Through a pass: the rewritten bytes are throttled too.
	clk := newClock()
	cfg := DefaultConfig()
	cfg.MinCleanableDirtyRatio = 0
	l := compactedLog(t, clk, cfg, 3, 200)
	var seen atomic.Int64
	st, err := l.maybeCompact(cleanerPass{maxKeys: 1 << 20, throttle: func(n int64) { seen.Add(n) }})
	if err != nil || st.SegmentsCleaned == 0 {
		t.Fatal(st, err)
	}
	if seen.Load() != st.BytesBefore+st.BytesAfter {
		t.Fatalf("throttle saw %d bytes, pass read+wrote %d", seen.Load(), st.BytesBefore+st.BytesAfter)
	}
}

// log.cleaner.backoff.ms: read before every round; WakeCleaner starts a
// round with a new value at once.
func TestCleanerBackoffLive(t *testing.T) {
	var backoff atomic.Int64
	backoff.Store(int64(time.Hour))
	m, err := NewManager(vfs.NewMem(), "/data", ManagerOptions{
		Cleaner: func() CleanerConfig { return CleanerConfig{Backoff: time.Duration(backoff.Load())} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := DefaultConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.DeleteRetentionMs = time.Hour
	l, err := m.Open("t", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fill := func(tag int) {
		for s := 0; s < 3; s++ {
			mustAppend(t, l, keyBatch(t, time.Now().UnixMilli(), "a", fmt.Sprint(tag, s), "b", fmt.Sprint(tag, s)))
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	records := func() int { _, _, n := latestByKey(t, l); return n }
	want := func(n int) func() error {
		return func() error {
			if got := records(); got != n {
				return fmt.Errorf("%d records, want %d", got, n)
			}
			return nil
		}
	}
	fill(1)
	// A 1 h backoff: not cleaned meanwhile.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := want(6)(); err != nil {
			t.Fatalf("during a 1 h backoff: %v", err)
		}
	}
	// A new value and a wake (what a dynamic change does): cleaned now.
	backoff.Store(int64(20 * time.Millisecond))
	m.WakeCleaner()
	testkit.CheckFor(t, 10*time.Second, want(2))
	// And the 20 ms is used for the next rounds (well under the 15 s
	// default and the old 1 h).
	fill(2)
	testkit.CheckFor(t, 10*time.Second, want(2))
}
