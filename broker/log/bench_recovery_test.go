package log

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"weir/broker/log/vfs"
)

// brokerBench is the data of BenchmarkBrokerRecovery: partitions logs of
// partMiB MiB each in 1 MiB segments under one data directory, built once
// per process (TestMain removes it).
type brokerBench struct {
	dir        string
	partitions int
	bytes      int64
	activeBase map[string]int64 // partition dir -> base of its last segment
}

var (
	brokerBenchOnce sync.Once
	brokerBenchData *brokerBench
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func buildBrokerBench(b *testing.B) *brokerBench {
	brokerBenchOnce.Do(func() {
		bb := &brokerBench{
			dir:        filepath.Join(benchDir(b), "broker"),
			partitions: envInt("WEIR_BENCH_PARTITIONS", 1000),
			activeBase: map[string]int64{},
		}
		if d := os.Getenv("WEIR_BENCH_DIR"); d != "" {
			// Reuse (or build once and keep) the data between processes;
			// remove the directory when done.
			bb.dir = d
			if bb.load(b) {
				brokerBenchData = bb
				return
			}
		}
		partBytes := int64(envInt("WEIR_BENCH_PARTITION_MIB", 10)) << 20
		cfg := DefaultConfig()
		cfg.SegmentBytes = 1 << 20
		batch := valueBatch(b, 100, 150, 1_700_000_000_000) // ~16 KiB, like a producer batch
		var next atomic.Int64
		var wg sync.WaitGroup
		var mu sync.Mutex
		for w := 0; w < runtime.GOMAXPROCS(0); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for p := int(next.Add(1) - 1); p < bb.partitions; p = int(next.Add(1) - 1) {
					name := fmt.Sprintf("bench-%d", p)
					l := mustOpen(b, vfs.OS, filepath.Join(bb.dir, name), cfg, Options{})
					buf := make([]byte, len(batch))
					for l.Size() < partBytes {
						copy(buf, batch)
						mustAppend(b, l, buf)
					}
					l.mu.RLock()
					base, size := l.active().base, l.Size()
					l.mu.RUnlock()
					if err := l.Close(); err != nil {
						b.Error(err)
					}
					mu.Lock()
					bb.activeBase[name], bb.bytes = base, bb.bytes+size
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		brokerBenchData = bb
	})
	if brokerBenchData == nil {
		b.Fatal("building the benchmark data failed")
	}
	return brokerBenchData
}

// load takes the shape of data already in bb.dir; false if there is none
// or not the expected number of partitions.
func (bb *brokerBench) load(b *testing.B) bool {
	ents, err := os.ReadDir(bb.dir)
	if err != nil || len(ents) != bb.partitions {
		return false
	}
	for _, e := range ents {
		logs, _ := filepath.Glob(filepath.Join(bb.dir, e.Name(), "*"+logSuffix))
		if len(logs) == 0 {
			return false
		}
		for _, p := range logs {
			fi, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			bb.bytes += fi.Size()
		}
		base, ok := parseSegmentName(filepath.Base(logs[len(logs)-1]), logSuffix)
		if !ok {
			return false
		}
		bb.activeBase[e.Name()] = base
	}
	return true
}

// dirty makes every partition look like it was killed: no clean-shutdown
// marker; checkpoint with the recovery point at the last segment's base
// (what the flush at the last roll leaves), or none at all.
func (bb *brokerBench) dirty(b *testing.B, withCheckpoint bool) {
	for name, base := range bb.activeBase {
		dir := filepath.Join(bb.dir, name)
		if err := os.Remove(filepath.Join(dir, cleanMarkerName)); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
		ck := filepath.Join(dir, checkpointName)
		if !withCheckpoint {
			os.Remove(ck)
			continue
		}
		data := fmt.Appendf(nil, "recovery-point %d\nlog-start-offset 0\nhigh-watermark 0\n", base)
		if err := os.WriteFile(ck, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// loadAll opens every partition through a Manager's LoadExisting with
// threads recovery threads, then closes the manager (outside the timer).
func (bb *brokerBench) loadAll(b *testing.B, threads int) {
	m, err := NewManager(vfs.OS, bb.dir, ManagerOptions{RecoveryThreads: threads})
	if err != nil {
		b.Fatal(err)
	}
	if err := m.LoadExisting(nil); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	m.mu.Lock()
	n := len(m.loaded)
	m.mu.Unlock()
	if n != bb.partitions {
		b.Fatalf("loaded %d partitions, want %d", n, bb.partitions)
	}
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
}

// BenchmarkBrokerRecovery: a broker's data directory of 1,000 partitions
// and 10 GiB (WEIR_BENCH_PARTITIONS, WEIR_BENCH_PARTITION_MIB; built once
// per process, or kept in WEIR_BENCH_DIR across processes) opened
// after an unclean shutdown with LoadExisting, recovery threads =
// GOMAXPROCS: from the recovery point (the normal case), and with no
// checkpoint (every batch validated: the worst case); one thread for the
// parallel speed-up; baselines in the same run: the same directory after a
// clean shutdown, and reading + CRC32C of every .log byte with as many
// threads and no parsing.
func BenchmarkBrokerRecovery(b *testing.B) {
	bb := buildBrokerBench(b)
	threads := runtime.GOMAXPROCS(0)
	run := func(name string, threads int, prep func()) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(bb.bytes)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				prep()
				b.StartTimer()
				bb.loadAll(b, threads)
			}
		})
	}
	run("unclean-from-recovery-point", threads, func() { bb.dirty(b, true) })
	run("unclean-no-checkpoint", threads, func() { bb.dirty(b, false) })
	run("unclean-no-checkpoint-1-thread", 1, func() { bb.dirty(b, false) })
	run("clean", threads, func() {})
	b.Run("raw-read-crc", func(b *testing.B) {
		b.SetBytes(bb.bytes)
		for i := 0; i < b.N; i++ {
			var files []string
			for name := range bb.activeBase {
				ms, _ := filepath.Glob(filepath.Join(bb.dir, name, "*"+logSuffix))
				files = append(files, ms...)
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			for w := 0; w < threads; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, recoveryChunk)
					for j := int(next.Add(1) - 1); j < len(files); j = int(next.Add(1) - 1) {
						readCRC(b, files[j], buf)
					}
				}()
			}
			wg.Wait()
		}
	})
}
