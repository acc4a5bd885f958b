package log

import (
	"encoding/binary"
	"errors"
	"path"
	"testing"

	"weir/broker/log/vfs"
)

// FuzzParseBatch: arbitrary bytes as a batch and as concatenated batches
// give an error or a consistent header, never a panic.
func FuzzParseBatch(f *testing.F) {
	f.Add(valueBatch(f, 3, 10, 1000))
	f.Add(keyBatch(f, 5, "k", "v", "k2", "<nil>"))
	for _, codec := range []int8{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		f.Add(buildBatch(f, 7, codec, []rec{{Key: []byte("a"), Value: []byte("bbbbbbbb")}, {Key: []byte("c")}}))
	}
	f.Add(make([]byte, 61))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseBatchHeader(b)
		if err == nil && (h.Magic != 2 || h.Size() < BatchHeaderSize) {
			t.Fatalf("accepted header %+v", h)
		}
		if h2, err := ParseBatch(b); err == nil {
			if int64(len(b)) < h2.Size() {
				t.Fatal("accepted a short batch")
			}
			batchRecords(b, h2) // must not panic
		} else if !errors.Is(err, ErrCorruptBatch) {
			t.Fatalf("error not ErrCorruptBatch: %v", err)
		}
		if hs, err := splitBatches(b); err == nil {
			var n int64
			for _, h := range hs {
				n += h.Size()
			}
			if n != int64(len(b)) {
				t.Fatalf("batches cover %d of %d bytes", n, len(b))
			}
		}
	})
}

// FuzzIndexLoad: arbitrary index and time-index file bytes for a sealed
// segment are validated or rebuilt; reads stay correct.
func FuzzIndexLoad(f *testing.F) {
	var idx, tidx []byte
	for i := uint32(1); i < 5; i++ {
		idx = binary.BigEndian.AppendUint32(idx, i*3)
		idx = binary.BigEndian.AppendUint32(idx, i*300)
		tidx = binary.BigEndian.AppendUint64(tidx, uint64(1000+i))
		tidx = binary.BigEndian.AppendUint32(tidx, i*3)
	}
	f.Add(idx, tidx)
	f.Add([]byte{}, []byte{})
	f.Add(idx[:13], tidx[:7])
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 200
	mem := vfs.NewMem()
	l := mustOpen(f, mem, tdir, cfg, Options{})
	for i := 0; i < 60; i++ {
		mustAppend(f, l, valueBatch(f, 3, 30, int64(1000+i)))
	}
	l.Close()
	base := mem.Crash(vfs.CrashOptions{})
	f.Fuzz(func(t *testing.T, idx, tidx []byte) {
		m := base.Crash(vfs.CrashOptions{})
		for name, data := range map[string][]byte{segmentName(0, indexSuffix): idx, segmentName(0, timeIndexSuffix): tidx} {
			file, _ := m.Create(path.Join(tdir, name))
			file.WriteAt(data, 0)
			file.Close()
		}
		l := mustOpen(t, m, tdir, cfg, Options{})
		defer l.Close()
		for off := int64(0); off < 60; off += 7 {
			s, err := l.Read(off, 1, l.EndOffset())
			if err != nil {
				t.Fatal(err)
			}
			b, _ := s.Bytes()
			s.Release()
			h, err := ParseBatch(b)
			if err != nil || off < h.BaseOffset || off > h.LastOffset() {
				t.Fatalf("offset %d: batch [%d,%d] %v", off, h.BaseOffset, h.LastOffset(), err)
			}
		}
		// A structurally valid but wrong time index can only make the answer
		// later (never a panic, an error or an offset outside the log).
		if off, _, ok, err := l.OffsetForTimestamp(1010); err != nil || !ok || off < 26 || off >= l.EndOffset() {
			t.Fatalf("timestamp lookup: %d %v %v", off, ok, err)
		}
	})
}

// FuzzSegmentRecovery: arbitrary bytes appended to (or replacing) the
// active segment after an unclean stop are truncated away or accepted only
// as CRC-valid batches; the log never serves a corrupt batch.
func FuzzSegmentRecovery(f *testing.F) {
	good := valueBatch(f, 2, 20, 5)
	f.Add([]byte{}, false)
	f.Add(good[:30], false)
	f.Add(good, true)
	f.Add(append(append([]byte(nil), good...), good[:70]...), false)
	f.Fuzz(func(t *testing.T, tail []byte, replace bool) {
		mem := vfs.NewMem()
		l := mustOpen(t, mem, tdir, DefaultConfig(), Options{})
		for i := 0; i < 3; i++ {
			mustAppend(t, l, valueBatch(t, 2, 20, 5))
		}
		disk := mem.Crash(vfs.CrashOptions{KeepUnsynced: func(string, int) int { return 1 << 30 }})
		file, _ := disk.OpenReadWrite(path.Join(tdir, segmentName(0, logSuffix)))
		size, _ := file.Size()
		if replace {
			file.Truncate(0)
			size = 0
		}
		file.WriteAt(tail, size)
		file.Close()
		l2, err := Open(disk, tdir, DefaultConfig(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		hs := readAll(t, l2, 0) // checks every CRC
		if n := len(hs); n > 0 && hs[n-1].LastOffset()+1 != l2.EndOffset() {
			t.Fatalf("LEO %d, last batch ends %d", l2.EndOffset(), hs[n-1].LastOffset())
		}
		if !replace && l2.EndOffset() < 6 {
			t.Fatalf("lost valid data: LEO %d", l2.EndOffset())
		}
		if _, err := l2.Append(valueBatch(t, 1, 5, 1), 0); err != nil {
			t.Fatal(err)
		}
	})
}
