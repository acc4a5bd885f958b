package log

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"weir/broker/log/vfs"
	"weir/internal/testkit"
)

// latestByKey reads the whole log and returns key -> (value, offset) of the
// last record per key, plus the number of records.
func latestByKey(t *testing.T, l *Log) (map[string]string, map[string]int64, int) {
	t.Helper()
	vals, offs := map[string]string{}, map[string]int64{}
	n := 0
	var prev int64 = -1
	for _, h := range readAll(t, l, l.StartOffset()) {
		s, err := l.Read(h.BaseOffset, 1, l.EndOffset())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.Bytes()
		s.Release()
		// Parse again: a concurrent compaction may have rewritten the batch.
		h, err := ParseBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.LastOffset() <= prev {
			continue // its records were seen through an earlier batch
		}
		recs, err := batchRecords(b, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			off := h.BaseOffset + int64(r.rec.OffsetDelta)
			if off <= prev && off < h.LastOffset() {
				continue
			}
			if off <= prev {
				t.Fatalf("record offsets not increasing: %d after %d", off, prev)
			}
			prev = off
			n++
			k := string(r.rec.Key)
			if r.rec.Value == nil {
				vals[k] = "<nil>"
			} else {
				vals[k] = string(r.rec.Value)
			}
			offs[k] = off
		}
	}
	return vals, offs, n
}

func TestCompactionKeepsLatestAndOffsets(t *testing.T) {
	for _, codec := range []int8{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		t.Run(fmt.Sprint("codec", codec), func(t *testing.T) {
			clk := newClock()
			cfg := DefaultConfig()
			cfg.Compact, cfg.Delete = true, false
			cfg.SegmentBytes = 1500
			cfg.IndexIntervalBytes = 128
			cfg.DeleteRetentionMs = time.Hour
			mem := vfs.NewMem()
			l := mustOpen(t, mem, tdir, cfg, testOpts(clk))
			defer l.Close()
			want := map[string]string{}
			wantOff := map[string]int64{}
			for i := 0; i < 300; i++ {
				var recs []rec
				var keys []string
				for j := 0; j < 3; j++ {
					k := fmt.Sprintf("key-%d", (i*3+j)%23)
					v := fmt.Sprintf("v%d", i*3+j)
					r := rec{Key: []byte(k), Value: []byte(v)}
					if (i*3+j)%17 == 0 {
						r.Value, v = nil, "<nil>"
					}
					recs = append(recs, r)
					keys = append(keys, k)
					want[k] = v
				}
				info := mustAppend(t, l, buildBatch(t, clk.Ms(), codec, recs))
				for j, k := range keys {
					wantOff[k] = info.FirstOffset + int64(j)
				}
			}
			leo := l.EndOffset()
			sizeBefore := l.Size()
			st, err := l.Compact()
			if err != nil {
				t.Fatal(err)
			}
			if st.SegmentsCleaned == 0 || st.RecordsRemoved == 0 || l.Size() >= sizeBefore {
				t.Fatalf("compaction did nothing: %+v size %d -> %d", st, sizeBefore, l.Size())
			}
			got, gotOff, n := latestByKey(t, l)
			if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(gotOff) != fmt.Sprint(wantOff) {
				t.Fatalf("after compaction:\n got %v %v\nwant %v %v", got, gotOff, want, wantOff)
			}
			if n >= 900 {
				t.Fatalf("%d records left", n)
			}
			if l.EndOffset() != leo {
				t.Fatalf("LEO moved %d -> %d", leo, l.EndOffset())
			}
			// Tombstones expire after delete.retention.ms; other keys stay.
			clk.Add(2 * time.Hour)
			mustAppend(t, l, keyBatch(t, clk.Ms(), "fresh", "x"))
			l.Roll()
			if _, err := l.Compact(); err != nil {
				t.Fatal(err)
			}
			got, _, _ = latestByKey(t, l)
			for k, v := range want {
				if v == "<nil>" {
					if _, ok := got[k]; ok && wantOff[k] < l.active().base {
						t.Fatalf("expired tombstone for %s survived", k)
					}
				} else if got[k] != v {
					t.Fatalf("key %s = %q, want %q", k, got[k], v)
				}
			}
			// Reopen: the compacted log reads the same.
			l.Close()
			l = mustOpen(t, mem, tdir, cfg, testOpts(clk))
			got2, _, _ := latestByKey(t, l)
			if fmt.Sprint(got2) != fmt.Sprint(got) {
				t.Fatalf("after reopen %v, want %v", got2, got)
			}
		})
	}
}

func TestCompactionConcurrentAppendsAndReaders(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.Compact = true
	cfg.SegmentBytes = 2000
	mem := vfs.NewMem()
	l := mustOpen(t, mem, tdir, cfg, testOpts(clk))
	defer l.Close()
	var mu sync.Mutex
	want := map[string]string{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // appender
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k, v := fmt.Sprintf("k%d", i%31), fmt.Sprintf("v%d", i)
			mu.Lock()
			_, err := l.Append(keyBatch(t, clk.Ms(), k, v), 0)
			if err == nil {
				want[k] = v
			}
			mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // reader holding sections across compactions
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s, err := l.Read(l.StartOffset(), 1<<16, l.EndOffset())
			if err != nil {
				t.Error(err)
				return
			}
			b, err := s.Bytes()
			s.Release()
			for err == nil && len(b) > 0 {
				var h BatchHeader
				if h, err = ParseBatch(b); err == nil {
					b = b[h.Size():]
				}
			}
			if err != nil {
				t.Error("reader saw a bad batch:", err)
				return
			}
		}
	}()
	passes := 0
	testkit.CheckFor(t, 20*time.Second, func() error {
		st, err := l.Compact()
		if err != nil {
			return err
		}
		if st.SegmentsCleaned > 0 {
			passes++
		}
		if passes < 5 {
			return errNotYet
		}
		return nil
	})
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	l.Roll()
	if _, err := l.Compact(); err != nil {
		t.Fatal(err)
	}
	got, _, n := latestByKey(t, l)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if n != len(want) {
		t.Fatalf("%d records after full compaction, want %d", n, len(want))
	}
}

// TestCompactionCrashDuringSwap: a committed swap is completed on reopen and
// an uncommitted one is discarded; the log is consistent either way.
func TestCompactionCrashDuringSwap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Compact = true
	cfg.SegmentBytes = 1000
	clk := newClock()
	mem := vfs.NewMem()
	l := mustOpen(t, mem, tdir, cfg, testOpts(clk))
	for i := 0; i < 100; i++ {
		mustAppend(t, l, keyBatch(t, clk.Ms(), fmt.Sprintf("k%d", i%7), fmt.Sprint(i)))
	}
	l.Close()
	base := mem.Crash(vfs.CrashOptions{})
	for k := int64(0); k < 4000; k += 97 {
		m := base.Crash(vfs.CrashOptions{})
		ffs := vfs.NewFault(m)
		l := mustOpen(t, ffs, tdir, cfg, testOpts(clk))
		want, _, _ := latestByKey(t, l)
		ffs.CrashAfter(k)
		l.Compact()
		after := m.Crash(vfs.CrashOptions{KeepUnsynced: func(_ string, n int) int { return int(k) % (n + 1) }})
		l2, err := Open(after, tdir, cfg, testOpts(clk))
		if err != nil {
			t.Fatalf("crash after %d: %v", k, err)
		}
		got, _, _ := latestByKey(t, l2)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("crash after %d: got %v want %v", k, got, want)
		}
		if _, err := l2.Compact(); err != nil {
			t.Fatalf("crash after %d: compact again: %v", k, err)
		}
		l2.Close()
	}
}
