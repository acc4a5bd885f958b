package log

import (
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"weir/broker/log/vfs"
)

// Benchmarks. Each is run beside its baseline in the same run; see
// BENCHMARKS.md for commands and figures.

var (
	benchRoot     string
	benchRootOnce sync.Once
	benchBuilt    sync.Map // key -> dir
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

func benchDir(b *testing.B) string {
	benchRootOnce.Do(func() {
		var err error
		if benchRoot, err = os.MkdirTemp("", "weir-log-bench-"); err != nil {
			b.Fatal(err)
		}
	})
	return benchRoot
}

// builtLog returns a directory holding a log built once per process by
// build (cleanly closed).
func builtLog(b *testing.B, key string, build func(dir string)) string {
	if d, ok := benchBuilt.Load(key); ok {
		return d.(string)
	}
	dir := filepath.Join(benchDir(b), key, "bench-0")
	build(dir)
	benchBuilt.Store(key, dir)
	return dir
}

// appendBatch is 1,000 records of 100-byte values (about 110 KB).
func appendBatch(b *testing.B) []byte { return valueBatch(b, 1000, 100, 1_700_000_000_000) }

// BenchmarkAppend appends 1,000-record batches of 100-byte records to a
// log on the OS file system (default flush policy: leave it to the OS).
func BenchmarkAppend(b *testing.B) {
	l := mustOpen(b, vfs.OS, filepath.Join(b.TempDir(), "t-0"), DefaultConfig(), Options{})
	defer l.Close()
	batch := appendBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer() // Close flushes: not part of the append rate
}

// BenchmarkRawFileAppend is the baseline: the same bytes written to an
// os.File.
func BenchmarkRawFileAppend(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	batch := appendBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// buildSegments builds a log of n segments of 20 batches (10 records each).
func buildSegments(b *testing.B, n int) string { return buildSegmentsOf(b, n, 20) }

// buildSegmentsOf builds a log of n segments of per batches each.
func buildSegmentsOf(b *testing.B, n, per int) string {
	return builtLog(b, fmt.Sprintf("segs-%d-%d", n, per), func(dir string) {
		l := mustOpen(b, vfs.OS, dir, DefaultConfig(), Options{})
		for s := 0; s < n; s++ {
			for i := 0; i < per; i++ {
				mustAppend(b, l, valueBatch(b, 10, 100, 1_700_000_000_000))
			}
			if s < n-1 {
				if err := l.Roll(); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkReadRandom: offset lookup + Section of a random offset, for a
// log of 10 segments vs one of 1,000 (same FileCache size as a Manager).
// The plain cases have segments of the same shape (20 batches), so the
// 1,000-segment log also holds 100x the bytes; "same-bytes" is a 10-segment
// log holding as many bytes as the 1,000-segment one (2,000 batches per
// segment), which separates segment count from working-set size.
func BenchmarkReadRandom(b *testing.B) {
	for _, c := range []struct {
		name   string
		n, per int
	}{{"segments=10", 10, 20}, {"segments=1000", 1000, 20}, {"segments=10,same-bytes", 10, 2000}} {
		b.Run(c.name, func(b *testing.B) {
			dir := buildSegmentsOf(b, c.n, c.per)
			l := mustOpen(b, vfs.OS, dir, DefaultConfig(), Options{Files: NewFileCache(1000)})
			defer l.Close()
			leo := l.EndOffset()
			rng := rand.New(rand.NewSource(1))
			// Warm up: touch every segment once (open its file, map its
			// indexes) so the timed loop measures steady-state lookups.
			for off := int64(0); off < leo; off += 100 {
				s, err := l.Read(off, 1, leo)
				if err != nil {
					b.Fatal(err)
				}
				s.Release()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := l.Read(rng.Int63n(leo), 1<<20, leo)
				if err != nil || s.Len() == 0 {
					b.Fatal(err)
				}
				s.Release()
			}
			b.StopTimer()
		})
	}
}

// BenchmarkAppendManySegments: append rate to a log with 1,000 existing
// segments vs an empty log.
func BenchmarkAppendManySegments(b *testing.B) {
	for _, n := range []int{0, 1000} {
		b.Run(fmt.Sprintf("existing=%d", n), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "t-0")
			if n > 0 {
				dir = buildSegments(b, n)
			}
			l := mustOpen(b, vfs.OS, dir, DefaultConfig(), Options{Files: NewFileCache(1000)})
			defer l.Close()
			if n > 0 && l.NumSegments() != n {
				b.Fatalf("%d segments", l.NumSegments())
			}
			batch := appendBatch(b)
			b.SetBytes(int64(len(batch)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := l.Append(batch, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
		})
	}
}

const recoveryLogBytes = 1 << 30

func buildRecoveryLog(b *testing.B) string {
	return builtLog(b, "recovery-1g", func(dir string) {
		cfg := DefaultConfig()
		cfg.SegmentBytes = 128 << 20
		l := mustOpen(b, vfs.OS, dir, cfg, Options{})
		batch := appendBatch(b)
		for l.Size() < recoveryLogBytes {
			mustAppend(b, l, batch)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	})
}

// makeUnclean turns a closed log into one after an unclean stop with no
// recovery point: every batch of the 1 GiB is validated (the worst case).
func makeUnclean(b *testing.B, dir string) {
	for _, n := range []string{cleanMarkerName, checkpointName} {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecovery opens a 1 GiB log after an unclean stop (CRC32C of
// every batch, index rebuild); baseline: reading the same files and
// computing CRC32C over them, with no parsing.
func BenchmarkRecovery(b *testing.B) {
	dir := buildRecoveryLog(b)
	b.Run("log", func(b *testing.B) {
		b.SetBytes(recoveryLogBytes)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			makeUnclean(b, dir)
			b.StartTimer()
			l, err := Open(vfs.OS, dir, DefaultConfig(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if l.Size() < recoveryLogBytes {
				b.Fatalf("recovered %d bytes", l.Size())
			}
			l.Close()
			b.StartTimer()
		}
	})
	b.Run("raw-read-crc", func(b *testing.B) {
		b.SetBytes(recoveryLogBytes)
		buf := make([]byte, recoveryChunk)
		for i := 0; i < b.N; i++ {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if filepath.Ext(e.Name()) != logSuffix {
					continue
				}
				readCRC(b, filepath.Join(dir, e.Name()), buf)
			}
		}
	})
}

// readCRC reads the file name through buf, computing CRC32C over it: the
// recovery benchmarks' baseline.
func readCRC(b *testing.B, name string, buf []byte) uint32 {
	f, err := os.Open(name)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer f.Close()
	var c uint32
	for {
		n, err := f.Read(buf)
		c = crc32.Update(c, castagnoli, buf[:n])
		if err != nil {
			if err != io.EOF {
				b.Error(err)
			}
			return c
		}
	}
}
