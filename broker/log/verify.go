package log

import (
	"errors"
	"fmt"
	"io"
	"path"

	"weir/broker/log/vfs"
)

// DirReport is what Verify found in a partition directory.
type DirReport struct {
	Segments int
	Batches  int
	Records  int64
	// Start and End are the first offset and one past the last offset of
	// the batches found (End == Start when there are none).
	Start, End int64
}

// Verify checks a partition directory on disk without changing it: every
// segment's .log file must hold whole RecordBatch v2 batches with correct
// CRC32C from its first byte to its last (no torn tail, no bad batch), base
// offsets must not go below the segment's name nor backwards across
// segments, and each offset-index entry present must point at the start of
// a batch with that offset. Tests and operators use it after a crash
// (the log must be closed or not being written). The error lists the first
// problem of each bad segment.
func Verify(fsys vfs.FS, dir string) (DirReport, error) {
	var rep DirReport
	names, err := fsys.List(dir)
	if err != nil {
		return rep, err
	}
	var errs []error
	next := int64(-1)
	for _, n := range names {
		base, ok := parseSegmentName(n, logSuffix)
		if !ok {
			continue
		}
		rep.Segments++
		starts, err := verifySegment(fsys, dir, n, base, &next, &rep)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path.Join(dir, n), err))
			continue
		}
		idx, err := vfs.ReadFile(fsys, path.Join(dir, segmentName(base, indexSuffix)))
		if err != nil {
			if !isNotExist(err) {
				errs = append(errs, err)
			}
			continue
		}
		for i := 0; i < len(idx)/offsetEntrySize; i++ {
			rel, pos := offsetEntry(idx, i)
			if got, ok := starts[int64(pos)]; !ok || got != base+int64(rel) {
				errs = append(errs, fmt.Errorf("%s: %w: entry %d (offset %d at position %d) does not point at that batch",
					path.Join(dir, segmentName(base, indexSuffix)), ErrCorruptIndex, i, base+int64(rel), pos))
				break
			}
		}
	}
	if next >= 0 {
		rep.End = next
	} else {
		rep.End = rep.Start
	}
	return rep, errors.Join(errs...)
}

func verifySegment(fsys vfs.FS, dir, name string, base int64, next *int64, rep *DirReport) (map[int64]int64, error) {
	f, err := fsys.Open(path.Join(dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	sc := newScanner(f, 0, size, recoveryChunk)
	sc.checkCRC = true
	sc.minBase = max(base, *next)
	starts := map[int64]int64{}
	for {
		h, pos, _, err := sc.next()
		if err == io.EOF {
			return starts, nil
		}
		if err != nil {
			return nil, err
		}
		if *next < 0 {
			rep.Start = h.BaseOffset
		}
		starts[pos] = h.BaseOffset
		*next = h.LastOffset() + 1
		rep.Batches++
		rep.Records += int64(h.NumRecords)
	}
}
