package file

import (
	"regexp"
	"time"
)

// multiline joins lines into events: a line for which isStart is true
// begins a new event, every other line continues the current one.
//
//	mode "start":    pattern matches the first line of an event
//	mode "continue": pattern matches continuation lines
//
// negate inverts the match. An event ends when the next one starts, when
// it reaches maxLines or maxBytes, or after flushTimeout without a new line.
type multiline struct {
	re           *regexp.Regexp
	continueMode bool
	negate       bool
	maxLines     int
	maxBytes     int
	flushTimeout time.Duration

	buf       []byte
	start     int64 // file offset of the event's first byte
	end       int64 // file offset after the event's last line
	lines     int
	truncated bool
	last      time.Time
}

type emitFunc func(msg []byte, start, end int64, truncated bool)

func (m *multiline) isStart(line []byte) bool {
	match := m.re.Match(line) != m.negate
	if m.continueMode {
		return !match
	}
	return match
}

// add feeds one line spanning [start, end) of the file.
func (m *multiline) add(line []byte, start, end int64, truncated bool, now time.Time, emit emitFunc) {
	if m.lines > 0 && (m.isStart(line) || m.lines >= m.maxLines) {
		m.flush(emit)
	}
	if m.lines == 0 {
		m.buf = append(m.buf[:0], line...)
		m.start = start
	} else {
		room := m.maxBytes - len(m.buf) - 1
		if room < 0 {
			room = 0
		}
		if len(line) > room {
			line = line[:room]
			m.truncated = true
		}
		if room > 0 {
			m.buf = append(m.buf, '\n')
			m.buf = append(m.buf, line...)
		}
	}
	m.truncated = m.truncated || truncated
	m.end = end
	m.lines++
	m.last = now
}

// flush emits the pending event, if any.
func (m *multiline) flush(emit emitFunc) {
	if m.lines == 0 {
		return
	}
	emit(m.buf, m.start, m.end, m.truncated)
	m.buf = m.buf[:0]
	m.lines = 0
	m.truncated = false
}

// due reports whether a pending event waited flushTimeout.
func (m *multiline) due(now time.Time) bool {
	return m.lines > 0 && now.Sub(m.last) >= m.flushTimeout
}
