package log

import (
	"errors"
	"testing"
	"time"

	"weir/broker/log/vfs"
)

func TestAppendReadAcrossRolls(t *testing.T) {
	for _, fsName := range []string{"mem", "os"} {
		t.Run(fsName, func(t *testing.T) {
			var fs vfs.FS = vfs.NewMem()
			dir := "/data/t-0"
			if fsName == "os" {
				fs, dir = vfs.OS, t.TempDir()+"/t-0"
			}
			clk := newClock()
			cfg := DefaultConfig()
			cfg.SegmentBytes = 8 << 10
			cfg.IndexIntervalBytes = 512
			l := mustOpen(t, fs, dir, cfg, testOpts(clk))
			var want []AppendInfo
			for i := 0; i < 200; i++ {
				info := mustAppend(t, l, valueBatch(t, 1+i%7, 40, clk.Ms()))
				if i > 0 && info.FirstOffset != want[i-1].LastOffset+1 {
					t.Fatalf("append %d: first offset %d, want %d", i, info.FirstOffset, want[i-1].LastOffset+1)
				}
				want = append(want, info)
				clk.Add(time.Millisecond)
			}
			if l.NumSegments() < 5 {
				t.Fatalf("expected several segments, got %d", l.NumSegments())
			}
			if got := l.EndOffset(); got != want[len(want)-1].LastOffset+1 {
				t.Fatalf("LEO %d, want %d", got, want[len(want)-1].LastOffset+1)
			}
			// Every offset reads back the batch holding it.
			for _, w := range want {
				for off := w.FirstOffset; off <= w.LastOffset; off++ {
					s, err := l.Read(off, 1, l.EndOffset())
					if err != nil {
						t.Fatal(err)
					}
					b, _ := s.Bytes()
					s.Release()
					h, err := ParseBatch(b)
					if err != nil {
						t.Fatalf("offset %d: %v", off, err)
					}
					if h.BaseOffset != w.FirstOffset || h.LastOffset() != w.LastOffset || int64(len(b)) != h.Size() {
						t.Fatalf("offset %d: got batch [%d,%d] (%d bytes), want [%d,%d]", off, h.BaseOffset, h.LastOffset(), len(b), w.FirstOffset, w.LastOffset)
					}
					if h.PartitionLeaderEpoch != 1 {
						t.Fatalf("leader epoch %d not stamped", h.PartitionLeaderEpoch)
					}
				}
			}
			hs := readAll(t, l, 0)
			if len(hs) != len(want) {
				t.Fatalf("read %d batches, want %d", len(hs), len(want))
			}
			// Out of range and end.
			if _, err := l.Read(l.EndOffset()+1, 100, l.EndOffset()+5); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("read past end: %v", err)
			}
			s, err := l.Read(l.EndOffset(), 100, l.EndOffset())
			if err != nil || s.Len() != 0 {
				t.Fatalf("read at end: %v len %d", err, s.Len())
			}
			// maxOffset bounds the section.
			s, err = l.Read(0, 1<<20, want[3].FirstOffset)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := s.Bytes()
			s.Release()
			var last int64 = -1
			for len(b) > 0 {
				h, err := ParseBatch(b)
				if err != nil {
					t.Fatal(err)
				}
				last = h.LastOffset()
				b = b[h.Size():]
			}
			if last != want[2].LastOffset {
				t.Fatalf("maxOffset: last offset %d, want %d", last, want[2].LastOffset)
			}
			// Reopen after a clean close: same content.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, fs, dir, cfg, testOpts(clk))
			defer l.Close()
			if got := l.EndOffset(); got != want[len(want)-1].LastOffset+1 {
				t.Fatalf("reopened LEO %d", got)
			}
			if hs := readAll(t, l, 0); len(hs) != len(want) {
				t.Fatalf("reopened: read %d batches, want %d", len(hs), len(want))
			}
			info := mustAppend(t, l, valueBatch(t, 3, 10, clk.Ms()))
			if info.FirstOffset != want[len(want)-1].LastOffset+1 {
				t.Fatalf("append after reopen at %d", info.FirstOffset)
			}
		})
	}
}

func TestAppendRejectsCorruptBatch(t *testing.T) {
	l := mustOpen(t, vfs.NewMem(), "/d/t-0", DefaultConfig(), Options{})
	defer l.Close()
	good := valueBatch(t, 3, 10, 1000)
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff
	both := append(append([]byte(nil), good...), bad...)
	for name, b := range map[string][]byte{"crc": bad, "second bad": both, "short": good[:40], "trailing": append(append([]byte(nil), good...), 1, 2, 3), "empty": nil} {
		if _, err := l.Append(b, 0); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: err %v, want ErrCorruptBatch", name, err)
		}
	}
	if l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("corrupt append wrote something: LEO %d size %d", l.EndOffset(), l.Size())
	}
	magic := append([]byte(nil), good...)
	magic[OffMagic] = 1
	if _, err := l.Append(magic, 0); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("magic 1: %v", err)
	}
}

func TestMaxBytesReturnsAtLeastOneBatch(t *testing.T) {
	l := mustOpen(t, vfs.NewMem(), "/d/t-0", DefaultConfig(), Options{})
	defer l.Close()
	var sizes []int
	for i := 0; i < 10; i++ {
		b := valueBatch(t, 10, 100, 1000)
		sizes = append(sizes, len(b))
		mustAppend(t, l, b)
	}
	s, err := l.Read(0, 10, l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != int64(sizes[0]) {
		t.Fatalf("maxBytes=10: section %d bytes, want one batch of %d", s.Len(), sizes[0])
	}
	s.Release()
	s, err = l.Read(15, int32(sizes[0]*3+5), l.EndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != int64(sizes[0]*3) {
		t.Fatalf("3.x batches of bytes: section %d, want %d", s.Len(), sizes[0]*3)
	}
	s.Release()
}
