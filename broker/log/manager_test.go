package log

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"weir/broker/log/vfs"
	"weir/internal/testkit"
)

func TestParsePartitionDir(t *testing.T) {
	for in, want := range map[string]TopicPartition{
		"a-0": {"a", 0}, "my-topic-12": {"my-topic", 12}, "x--3": {"x-", 3},
	} {
		if got, ok := ParsePartitionDir(in); !ok || got != want {
			t.Errorf("%s: %v %v", in, got, ok)
		}
	}
	for _, bad := range []string{"a", "a-", "-1", "a-b", "a-1x"} {
		if _, ok := ParsePartitionDir(bad); ok {
			t.Errorf("%s parsed", bad)
		}
	}
}

func TestManagerLifecycle(t *testing.T) {
	mem := vfs.NewMem()
	clk := newClock()
	opts := ManagerOptions{Now: clk.Now, RetentionCheckInterval: 5 * time.Millisecond, FlushCheckInterval: 5 * time.Millisecond, CleanerInterval: 5 * time.Millisecond}
	m, err := NewManager(mem, "/data", opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallCfg()
	cfg.RetentionMs = time.Hour
	a, err := m.Open("orders-eu", 3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Open("orders-eu", 3, cfg); again != a {
		t.Fatal("second Open returned another log")
	}
	if _, err := m.Open("bad/name", 0, cfg); err == nil {
		t.Fatal("accepted a topic with '/'")
	}
	ccfg := cfg
	ccfg.Compact, ccfg.Delete = true, false
	c, _ := m.Open("offsets", 0, ccfg)
	for i := 0; i < 50; i++ {
		mustAppend(t, a, valueBatch(t, 2, 80, clk.Ms()))
		mustAppend(t, c, keyBatch(t, clk.Ms(), "k", fmt.Sprint(i)))
	}
	// The cleaner compacts in the background.
	testkit.CheckFor(t, 10*time.Second, func() error {
		c.mu.RLock()
		inActive := int(c.leo - c.active().base)
		c.mu.RUnlock()
		if _, _, n := latestByKey(t, c); n > inActive+1 {
			return fmt.Errorf("%d records still there, %d in the active segment", n, inActive)
		}
		return nil
	})
	// Retention runs in the background once data expires.
	segs := a.NumSegments()
	clk.Add(2 * time.Hour)
	testkit.CheckFor(t, 10*time.Second, func() error {
		if a.NumSegments() >= segs || a.StartOffset() == 0 {
			return fmt.Errorf("retention has not run: %d segments, start %d", a.NumSegments(), a.StartOffset())
		}
		return nil
	})
	if tps, _ := m.Existing(); len(tps) != 2 || tps[0] != (TopicPartition{"offsets", 0}) || tps[1] != (TopicPartition{"orders-eu", 3}) {
		t.Fatalf("existing %v", tps)
	}
	leo := a.EndOffset()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := NewManager(mem, "/data", opts)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := m2.Open("orders-eu", 3, cfg)
	if err != nil || a2.EndOffset() != leo {
		t.Fatalf("reopen: %v LEO %d want %d", err, a2.EndOffset(), leo)
	}
	if err := m2.Delete("orders-eu", 3); err != nil {
		t.Fatal(err)
	}
	if tps, _ := m2.Existing(); len(tps) != 1 {
		t.Fatalf("after delete: %v", tps)
	}
	m2.Close()
}

func TestManagerFlushMs(t *testing.T) {
	mem := vfs.NewMem()
	m, _ := NewManager(mem, "/data", ManagerOptions{FlushCheckInterval: 5 * time.Millisecond})
	defer m.Close()
	cfg := DefaultConfig()
	cfg.FlushMs = 10 * time.Millisecond
	l, _ := m.Open("t", 0, cfg)
	mustAppend(t, l, valueBatch(t, 3, 10, 1))
	testkit.CheckFor(t, 10*time.Second, func() error {
		if l.RecoveryPoint() != l.EndOffset() {
			return errNotYet
		}
		return nil
	})
	// Flushed data survives a crash that drops unsynced bytes.
	l2 := mustOpen(t, mem.Crash(vfs.CrashOptions{}), "/data/t-0", cfg, Options{})
	checkLog(t, l2, 3)
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func copyDir(t testing.TB, from, to string) {
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(from)
	for _, e := range ents {
		// Hard links: same bytes, no copy (the log replaces rather than
		// rewrites index, checkpoint and marker files).
		if err := os.Link(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIdlePartitionsCost opens 10,000 idle partitions of 3 segments each
// through a Manager on the OS file system, reads one batch from the oldest
// segment of each, and checks Go heap < 200 MiB and open fds < 2,000.
func TestIdlePartitionsCost(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 10,000 partitions")
	}
	const partitions = 10000
	root := t.TempDir()
	// One partition built through the Log API (3 segments, clean close),
	// copied to the others: the files are what Log writes.
	tmpl := filepath.Join(root, "template-0")
	cfg := DefaultConfig()
	l := mustOpen(t, vfs.OS, tmpl, cfg, Options{})
	for s := 0; s < 3; s++ {
		for i := 0; i < 10; i++ {
			mustAppend(t, l, valueBatch(t, 10, 100, 1_700_000_000_000))
		}
		if s < 2 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if l.NumSegments() != 3 {
		t.Fatalf("template has %d segments", l.NumSegments())
	}
	leo := l.EndOffset()
	l.Close()
	data := filepath.Join(root, "data")
	for p := 0; p < partitions; p++ {
		copyDir(t, tmpl, filepath.Join(data, fmt.Sprintf("topic-%d", p)))
	}
	heap0, fds0 := heapInuse(), countFDs(t)
	start := time.Now()
	m, err := NewManager(vfs.OS, data, ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tps, err := m.Existing()
	if err != nil || len(tps) != partitions {
		t.Fatalf("existing: %d, %v", len(tps), err)
	}
	logs := make([]*Log, 0, partitions)
	for _, tp := range tps {
		l, err := m.Open(tp.Topic, tp.Partition, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if l.EndOffset() != leo {
			t.Fatalf("%v: LEO %d", tp, l.EndOffset())
		}
		logs = append(logs, l)
	}
	openTime := time.Since(start)
	heapOpen, fdsOpen := heapInuse()-heap0, countFDs(t)-fds0
	for _, l := range logs {
		s, err := l.Read(5, 1, leo)
		if err != nil {
			t.Fatal(err)
		}
		s.Release()
	}
	heapRead, fdsRead := heapInuse()-heap0, countFDs(t)-fds0
	t.Logf("10000 partitions x 3 segments: open %v; after open: heap %.1f MiB, fds %d; after one read each: heap %.1f MiB, fds %d",
		openTime, float64(heapOpen)/(1<<20), fdsOpen, float64(heapRead)/(1<<20), fdsRead)
	if heapRead > 200<<20 || heapOpen > 200<<20 {
		t.Errorf("heap over 200 MiB")
	}
	if fdsRead >= 2000 || fdsOpen >= 2000 {
		t.Errorf("open fds over 2000")
	}
}

// TestLoadExistingRecoversInParallel: after a crash, LoadExisting opens
// (recovers) every partition on disk, one log line each, and Open then
// returns those logs with their data.
func TestLoadExistingRecoversInParallel(t *testing.T) {
	mem := vfs.NewMem()
	m, err := NewManager(mem, "/data", ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallCfg()
	leos := map[int32]int64{}
	for p := int32(0); p < 8; p++ {
		l, err := m.Open("events", p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10+int(p); i++ {
			mustAppend(t, l, valueBatch(t, 2, 30, 1))
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		leos[p] = l.EndOffset()
	}
	disk := mem.Crash(vfs.CrashOptions{})
	m.Close()

	core, logs := observer.New(zapcore.InfoLevel)
	m2, err := NewManager(disk, "/data", ManagerOptions{RecoveryThreads: 3, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if err := m2.LoadExisting(nil); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessageSnippet("recovered partition log").Len(); n != 8 {
		t.Fatalf("%d recovery lines, want one per partition (8)", n)
	}
	if err := m2.LoadExisting(nil); err == nil {
		t.Fatal("a second LoadExisting was accepted")
	}
	for p := int32(0); p < 8; p++ {
		l, err := m2.Open("events", p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, l, leos[p])
	}
	if n := logs.FilterMessageSnippet("recovered partition log").Len(); n != 8 {
		t.Fatalf("Open recovered again: %d recovery lines", n)
	}
	// A loaded partition never claimed can still be deleted.
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	m3, err := NewManager(disk, "/data", ManagerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m3.Close()
	if err := m3.LoadExisting(nil); err != nil {
		t.Fatal(err)
	}
	if err := m3.Delete("events", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := disk.Stat("/data/events-3"); err == nil {
		t.Fatal("deleted partition's directory is still there")
	}
}
