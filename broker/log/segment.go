package log

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"weir/broker/log/vfs"
)

// File name suffixes in a partition directory.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	cleanedSuffix   = ".cleaned" // compaction output being built
	swapSuffix      = ".swap"    // compaction output committed, being renamed
	tmpSuffix       = ".tmp"
)

// segment is one <base>.log file with its .index and .timeindex. Fields other
// than base/fs/dir are guarded by Log.mu.
type segment struct {
	fs   vfs.FS
	dir  string
	base int64

	size       int64
	maxTs      int64 // valid if maxTsKnown
	maxTsKnown bool
	// act is the in-memory state of the active (last) segment; nil once sealed.
	act *indexBuilder
	// rollTs is the time base for segment.ms (ms).
	rollTs int64
}

func segmentName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

func (s *segment) path(suffix string) string { return path.Join(s.dir, segmentName(s.base, suffix)) }

// parseSegmentName returns the base offset of "<20 digits>.log" style names.
func parseSegmentName(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	digits := strings.TrimSuffix(name, suffix)
	if len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// batchScanner walks the batches of a segment file from a position, reading
// through a window buffer so small batches cost few syscalls.
type batchScanner struct {
	f        vfs.File
	pos, end int64
	buf      []byte
	winPos   int64 // file position of buf[0]
	winLen   int
	chunk    int
	withBody bool // read whole batches (needed for CRC checks)
	checkCRC bool
	minBase  int64 // a batch's base offset must be >= minBase
}

func newScanner(f vfs.File, pos, end int64, chunk int) *batchScanner {
	return &batchScanner{f: f, pos: pos, end: end, chunk: chunk, minBase: -1}
}

// window makes [pos, pos+n) available in buf and returns it.
func (s *batchScanner) window(pos int64, n int) ([]byte, error) {
	if pos >= s.winPos && pos+int64(n) <= s.winPos+int64(s.winLen) {
		off := int(pos - s.winPos)
		return s.buf[off : off+n], nil
	}
	want := n
	if want < s.chunk {
		want = s.chunk
	}
	if rem := s.end - pos; int64(want) > rem {
		want = int(rem)
	}
	if want < n {
		return nil, io.ErrUnexpectedEOF
	}
	if cap(s.buf) < want {
		s.buf = make([]byte, want)
	}
	s.buf = s.buf[:want]
	m, err := s.f.ReadAt(s.buf, pos)
	if m < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		s.winLen = 0
		return nil, err
	}
	s.winPos, s.winLen = pos, m
	return s.buf[:n], nil
}

// next returns the batch at the scanner's position and advances past it. It
// returns io.EOF at the end, and an error wrapping ErrCorruptBatch for a torn
// or corrupt batch (pos then still points at it). body is only set when
// withBody and is valid until the next call.
func (s *batchScanner) next() (h BatchHeader, pos int64, body []byte, err error) {
	pos = s.pos
	if pos >= s.end {
		return h, pos, nil, io.EOF
	}
	if s.end-pos < BatchHeaderSize {
		return h, pos, nil, fmt.Errorf("%w: %d trailing bytes at position %d", ErrCorruptBatch, s.end-pos, pos)
	}
	hb, err := s.window(pos, BatchHeaderSize)
	if err != nil {
		return h, pos, nil, readError("reading header", pos, err)
	}
	h, err = ParseBatchHeader(hb)
	if err != nil {
		return h, pos, nil, fmt.Errorf("position %d: %w", pos, err)
	}
	if pos+h.Size() > s.end {
		return h, pos, nil, fmt.Errorf("%w: batch at position %d (%d bytes) runs past end %d", ErrCorruptBatch, pos, h.Size(), s.end)
	}
	if h.BaseOffset < s.minBase {
		return h, pos, nil, fmt.Errorf("%w: batch at position %d has base offset %d, expected >= %d", ErrCorruptBatch, pos, h.BaseOffset, s.minBase)
	}
	if s.withBody || s.checkCRC {
		body, err = s.window(pos, int(h.Size()))
		if err != nil {
			return h, pos, nil, readError("reading batch", pos, err)
		}
		if s.checkCRC {
			if got := batchCRC(body); got != h.CRC {
				return h, pos, nil, fmt.Errorf("%w: batch at position %d (offset %d): crc32c %08x, header says %08x", ErrCorruptBatch, pos, h.BaseOffset, got, h.CRC)
			}
		}
	}
	s.pos = pos + h.Size()
	if s.minBase >= 0 {
		s.minBase = h.LastOffset() + 1
	}
	return h, pos, body, nil
}

// readError reports a failed read while scanning: a file shorter than its
// batches say is a torn batch (ErrCorruptBatch); any other error (EIO) is
// an I/O failure, never a reason to cut data, and is returned as is.
func readError(what string, pos int64, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s at position %d: %w", ErrCorruptBatch, what, pos, err)
	}
	return fmt.Errorf("%s at position %d: %w", what, pos, err)
}
