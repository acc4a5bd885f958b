package file

import (
	"bytes"
	"io"

	"go.uber.org/zap"
)

// readChunk reads the next chunk of t and emits its complete lines. It
// returns the number of bytes read (0 at the end of the file).
func (s *Source) readChunk(t *tracked) int {
	n, err := t.f.ReadAt(s.buf, t.readOff)
	if err != nil && err != io.EOF {
		s.m.Error("read")
		s.log.Warn("read failed; will retry", zap.String("path", t.path), zap.Error(err))
		return 0
	}
	if n == 0 {
		if info, err := t.f.Stat(); err == nil && info.Size() < t.readOff {
			s.truncated(t, "it is shorter than the read position")
		}
		return 0
	}
	// A reader behind a copytruncate rotation finds the file truncated and
	// written again past its offset: what it read is new content, not the
	// rest of the old. The head is checked after the read, so new bytes
	// read imply a changed head; the chunk is dropped and the file read
	// again from the start (the copy resumes the old content). At offset 0
	// too: the file was identified by its head when it was opened, and a
	// rotation between that and the first read leaves other content
	// under that identity (read as the identified file, its lines would
	// carry positions that the copy resumes from).
	if s.headChanged(t) {
		s.truncated(t, "its first bytes changed")
		return 0
	}
	if t.small && t.readOff == 0 && n >= s.o.FingerprintBytes && s.identifyCopy(t, s.buf[:s.o.FingerprintBytes]) {
		return 0
	}
	data := s.buf[:n]
	base := t.readOff
	t.readOff += int64(n)
	t.lastData = s.now
	if t.small {
		s.growHead(t, data, base)
	}
	max := s.o.MaxLineBytes
	for p := 0; p < len(data); {
		i := bytes.IndexByte(data[p:], '\n')
		if i < 0 {
			rest := data[p:]
			if !t.skipping {
				if len(t.partial) == 0 {
					t.lineStart = base + int64(p)
				}
				if room := max - len(t.partial); len(rest) > room {
					t.partial = append(t.partial, rest[:room]...)
					t.skipping = true
				} else {
					t.partial = append(t.partial, rest...)
				}
			}
			break
		}
		seg := data[p : p+i]
		end := base + int64(p+i+1)
		var line []byte
		start := base + int64(p)
		truncated := t.skipping
		switch {
		case t.skipping:
			line, start = t.partial, t.lineStart
		case len(t.partial) > 0:
			room := max - len(t.partial)
			if len(seg) > room {
				seg, truncated = seg[:room], true
			}
			t.partial = append(t.partial, seg...)
			line, start = t.partial, t.lineStart
		default:
			line = seg
			if len(line) > max {
				line, truncated = line[:max], true
			}
		}
		if len(line) > 0 && line[len(line)-1] == '\r' && !truncated {
			line = line[:len(line)-1]
		}
		s.deliver(t, line, start, end, truncated)
		t.partial = t.partial[:0]
		t.skipping = false
		p += i + 1
	}
	if cap(t.partial) > 64<<10 && len(t.partial) == 0 {
		t.partial = nil // do not keep a big buffer per file after a long line
	}
	return n
}

// growHead extends a small file's head and switches it to a fingerprint
// key once it holds fingerprint_bytes.
func (s *Source) growHead(t *tracked, data []byte, base int64) {
	have := int64(len(t.head))
	if base > have || have >= int64(s.o.FingerprintBytes) {
		return
	}
	from := have - base
	upto := min(int64(len(data)), int64(s.o.FingerprintBytes)-base)
	if from < upto {
		t.head = append(t.head, data[from:upto]...)
	}
	if len(t.head) == s.o.FingerprintBytes {
		key := fpKey(t.head)
		if s.byKey[key] != nil {
			return // another open file has the same first bytes: keep the inode key
		}
		delete(s.byKey, t.key)
		s.log.Debug("file grew past the fingerprint size", zap.String("path", t.path), zap.String("from", t.key), zap.String("to", key))
		t.key, t.small, t.head = key, false, nil
		s.byKey[key] = t
	}
}

// identifyCopy looks again at a file that was shorter than the
// fingerprint when it was opened (a copy being written: os.WriteFile
// creates the file empty, then writes) and now holds a whole fingerprint
// at its first read. If another open file has the same first bytes, it
// is the copy of a copytruncate rotation in progress: it is not read
// (true) until the original is truncated. If a file with these first
// bytes was read before, t takes that identity and resumes at its
// position (true, the next read starts there), as open does for a copy
// found complete. Otherwise it is a new file (false).
func (s *Source) identifyCopy(t *tracked, head []byte) bool {
	key := fpKey(head)
	if other := s.byKey[key]; other != nil && other != t {
		return true
	}
	p, ok := s.known[key]
	if !ok {
		return false
	}
	if info, err := t.f.Stat(); err != nil || p.offset > info.Size() {
		return false
	}
	delete(s.byKey, t.key)
	s.log.Info("file is a copy of one read before; resuming at its position", zap.String("path", t.path),
		zap.String("key", key), zap.Int64("offset", p.offset))
	t.key, t.small, t.head = key, false, nil
	s.byKey[key] = t
	t.readOff, t.lastPos = p.offset, t.positionAt(p.offset)
	return true
}

// deliver passes a line to multiline joining or emits it.
func (s *Source) deliver(t *tracked, line []byte, start, end int64, truncated bool) {
	if t.ml != nil {
		t.ml.add(line, start, end, truncated, s.now, func(msg []byte, st, e int64, tr bool) { s.emit(t, msg, st, e, tr) })
		return
	}
	s.emit(t, line, start, end, truncated)
}

// flushTail emits what t holds: a pending multiline event and, when final,
// an incomplete last line (a rotated file's last line without a newline).
func (s *Source) flushTail(t *tracked, final bool) {
	if final && (len(t.partial) > 0 || t.skipping) {
		s.deliver(t, t.partial, t.lineStart, t.readOff, t.skipping)
		t.partial, t.skipping = nil, false
	}
	if t.ml != nil {
		t.ml.flush(func(msg []byte, st, e int64, tr bool) { s.emit(t, msg, st, e, tr) })
	}
}

// truncated restarts t at offset 0 after its content was cut or replaced
// in place (copytruncate). Its old identity keeps its last position, so a
// copy of the old content resumes there.
func (s *Source) truncated(t *tracked, why string) {
	s.log.Info("file truncated; reading it again from the start", zap.String("path", t.path), zap.String("why", why),
		zap.Int64("old_offset", t.readOff))
	s.m.Event("file_truncated")
	s.flushTail(t, false)
	s.known[t.key] = t.lastPos
	delete(s.byKey, t.key)
	t.key, t.small, t.head = inoKey(t.id.dev, t.id.ino), true, nil
	if other := s.byKey[t.key]; other != nil && other != t {
		delete(s.byKey, t.key)
	}
	s.byKey[t.key] = t
	delete(s.known, t.key)
	t.readOff, t.partial, t.skipping = 0, nil, false
	t.lastPos = t.positionAt(0)
}

// housekeeping flushes due multiline events and closes files that are
// gone (after rotate_wait) or inactive (after close_inactive).
func (s *Source) housekeeping() {
	kept := s.files[:0]
	for _, t := range s.files {
		if t.ml != nil && t.ml.due(s.now) && !s.full() {
			t.ml.flush(func(msg []byte, st, e int64, tr bool) { s.emit(t, msg, st, e, tr) })
		}
		idle := s.now.Sub(t.lastData)
		if (t.gone && idle >= s.o.RotateWait) || idle >= s.o.CloseInactive {
			if s.full() {
				kept = append(kept, t)
				continue
			}
			if n := s.readChunk(t); n > 0 { // not at its end after all
				kept = append(kept, t)
				continue
			}
			s.flushTail(t, t.gone)
			s.known[t.key] = t.lastPos
			delete(s.byKey, t.key)
			delete(s.byIno, t.id)
			t.f.Close()
			s.log.Info("closed file", zap.String("path", t.path), zap.Bool("gone", t.gone), zap.Int64("offset", t.lastPos.offset))
			s.m.Event("file_closed")
			continue
		}
		kept = append(kept, t)
	}
	clear(s.files[len(kept):])
	s.files = kept
}
