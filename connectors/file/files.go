package file

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"go.uber.org/zap"
)

type devIno struct{ dev, ino uint64 }

func fileID(info os.FileInfo) devIno {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return devIno{}
	}
	return devIno{uint64(st.Dev), uint64(st.Ino)}
}

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// tracked is one open file.
type tracked struct {
	path  string
	f     *os.File
	id    devIno
	key   string // source partition: fingerprint or inode key
	small bool   // key is the inode key (file shorter than the fingerprint)
	head  []byte // first bytes of the file, up to fingerprint_bytes (small files)

	readOff   int64  // next byte to read
	partial   []byte // incomplete line (or head of an overlong line)
	lineStart int64  // file offset of partial[0]
	skipping  bool   // discarding the rest of an overlong line
	lastPos   position
	ml        *multiline

	lastData time.Time // last time bytes were read
	gone     bool      // its path no longer leads to it (renamed away, deleted)
}

// positionAt is t's position after an event ending at end.
func (t *tracked) positionAt(end int64) position {
	p := position{offset: end}
	if t.small {
		p.headLen = int(min(end, int64(len(t.head))))
		p.headHash = hashBytes(t.head[:p.headLen])
	}
	return p
}

// rescan expands the globs, opens new files and notices renamed and
// deleted ones.
func (s *Source) rescan() {
	first := s.firstScan
	s.firstScan = false
	s.lastScan = s.now
	seen := map[*tracked]bool{}
	for _, r := range s.scanner.scan() {
		id := fileID(r.info)
		if t := s.byIno[id]; t != nil {
			if t.path != r.path {
				s.log.Info("file renamed", zap.String("from", t.path), zap.String("to", r.path))
				s.m.Event("file_renamed")
				t.path = r.path
			}
			seen[t] = true
			continue
		}
		if t := s.open(r, first && s.fresh && s.o.StartAtEnd); t != nil {
			seen[t] = true
		}
	}
	for _, t := range s.files {
		if !seen[t] && !t.gone {
			t.gone = true
			s.log.Info("file renamed away or deleted; reading it to its end", zap.String("path", t.path))
			s.m.Event("file_gone")
		}
		if seen[t] && !t.gone {
			s.checkHead(t)
		}
	}
}

// open identifies and opens a newly found file.
func (s *Source) open(r scanResult, startAtEnd bool) *tracked {
	f, err := os.Open(r.path)
	if err != nil {
		s.pathError(r.path, err)
		return nil
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		s.pathError(r.path, err)
		return nil
	}
	id := fileID(info)
	size := info.Size()
	n := int(min(size, int64(s.o.FingerprintBytes)))
	head := make([]byte, n)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, int64(n)), head); err != nil {
		f.Close()
		s.pathError(r.path, err)
		return nil
	}
	delete(s.badPaths, r.path)
	t := &tracked{path: r.path, f: f, id: id, lastData: s.now}
	if n == s.o.FingerprintBytes {
		t.key = fpKey(head)
	} else {
		t.key, t.small, t.head = inoKey(id.dev, id.ino), true, head
	}
	if other := s.byKey[t.key]; other != nil {
		// Same first bytes as an open file: a copy being made by a
		// copytruncate rotation (read once the original is truncated), or
		// a duplicate.
		f.Close()
		return nil
	}
	off, found := s.resume(t, head, id)
	switch {
	case found && off > size:
		s.log.Warn("file is shorter than its stored position; it was truncated while weir was away, reading it from the start",
			zap.String("path", r.path), zap.Int64("position", off), zap.Int64("size", size))
		s.m.Event("file_truncated")
		off = 0
	case !found && startAtEnd:
		off = size
		// Start at the end of the last complete line.
		off = lastLineEnd(f, size)
	}
	t.readOff, t.lastPos = off, t.positionAt(off)
	if s.o.MultilinePattern != nil {
		t.ml = &multiline{re: s.o.MultilinePattern, continueMode: s.o.MultilineContinue, negate: s.o.MultilineNegate,
			maxLines: s.o.MultilineMaxLines, maxBytes: s.o.MaxLineBytes, flushTimeout: s.o.MultilineFlushTimeout}
	}
	s.files = append(s.files, t)
	s.byIno[id] = t
	s.byKey[t.key] = t
	s.m.Event("file_opened")
	s.log.Info("tailing file", zap.String("path", r.path), zap.String("key", t.key), zap.Int64("offset", off), zap.Bool("resumed", found))
	return t
}

// resume finds the stored position of a file with this head.
func (s *Source) resume(t *tracked, head []byte, id devIno) (int64, bool) {
	matches := func(p position) bool {
		return p.headLen <= len(head) && hashBytes(head[:p.headLen]) == p.headHash
	}
	if p, ok := s.known[t.key]; ok && (!t.small || matches(p)) {
		return p.offset, true
	}
	if !t.small {
		// It may have been read while shorter than the fingerprint.
		if p, ok := s.known[inoKey(id.dev, id.ino)]; ok && matches(p) {
			return p.offset, true
		}
	}
	return 0, false
}

// lastLineEnd returns the offset after the last newline before size.
func lastLineEnd(f *os.File, size int64) int64 {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		n, _ := f.ReadAt(buf[:end-start], start)
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1
		}
		end = start
	}
	return 0
}

// checkHead detects a file whose content was replaced in place
// (copytruncate followed by fast writes).
func (s *Source) checkHead(t *tracked) {
	if s.headChanged(t) {
		s.truncated(t, "its first bytes changed")
	}
}

// headChanged reports whether t's first bytes are no longer those that
// identify it: the file was truncated and written again in place.
func (s *Source) headChanged(t *tracked) bool {
	n := s.o.FingerprintBytes
	if t.small {
		n = len(t.head)
	}
	if n == 0 {
		return false
	}
	head := make([]byte, n)
	got, _ := t.f.ReadAt(head, 0)
	same := got == n && (t.small && bytes.Equal(head, t.head) || !t.small && fpKey(head) == t.key)
	return !same
}
