package syslog

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// frameReader splits a TCP stream into syslog messages (RFC 6587):
// octet counting ("MSG-LEN SP MSG", chosen when a frame starts with a
// digit followed by digits and a space) or non-transparent framing (each
// message ends with LF; a trailing CR is dropped). Both may be mixed on
// one connection. Messages longer than max are cut to max bytes and
// flagged; the rest of them is read and discarded, never buffered.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max, buf: make([]byte, 0, 4096)}
}

// next returns the next message (valid until the next call) and whether
// it was cut. At the end of the stream it returns io.EOF; a last message
// without its LF is returned first.
func (f *frameReader) next() ([]byte, bool, error) {
	f.buf = f.buf[:0]
	// Octet counting: up to 10 digits then a space.
	n, digits := 0, 0
	for digits < 10 {
		c, err := f.r.ReadByte()
		if err != nil {
			if len(f.buf) > 0 && errors.Is(err, io.EOF) {
				if len(f.buf) > f.max {
					return f.buf[:f.max], true, nil
				}
				return f.buf, false, nil
			}
			return nil, false, err
		}
		if c >= '0' && c <= '9' && !(digits == 0 && c == '0') {
			f.buf = append(f.buf, c)
			n = n*10 + int(c-'0')
			digits++
			continue
		}
		if c == ' ' && digits > 0 {
			return f.counted(n)
		}
		f.r.UnreadByte()
		break
	}
	// Non-transparent framing; f.buf may hold digits already read.
	return f.line()
}

func (f *frameReader) counted(n int) ([]byte, bool, error) {
	take := min(n, f.max)
	if cap(f.buf) < take {
		f.buf = make([]byte, 0, take)
	}
	f.buf = f.buf[:take]
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, false, errors.New("connection closed inside an octet-counted frame")
		}
		return nil, false, err
	}
	if n > take {
		if _, err := f.r.Discard(n - take); err != nil {
			return f.buf, true, nil // keep what was read; the next call sees the error
		}
		return f.buf, true, nil
	}
	return f.buf, false, nil
}

func (f *frameReader) line() ([]byte, bool, error) {
	cut := false
	if len(f.buf) > f.max { // digits read while looking for a count
		f.buf, cut = f.buf[:f.max], true
	}
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !cut {
			room := f.max - len(f.buf)
			content := chunk
			if len(content) > 0 && content[len(content)-1] == '\n' {
				content = content[:len(content)-1] // the LF does not count
			}
			if len(content) > room {
				f.buf = append(f.buf, content[:max(room, 0)]...)
				cut = true
			} else {
				f.buf = append(f.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			b := f.buf
			if len(b) > 0 && b[len(b)-1] == '\n' {
				b = b[:len(b)-1]
			}
			if len(b) > 0 && b[len(b)-1] == '\r' {
				b = b[:len(b)-1]
			}
			return b, cut, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(f.buf) > 0:
			return f.buf, cut, nil
		default:
			return nil, false, err
		}
	}
}

// ready reports whether a whole next message is already buffered, so
// next returns it without reading from the connection.
func (f *frameReader) ready() bool {
	buf, _ := f.r.Peek(f.r.Buffered())
	if len(buf) == 0 {
		return false
	}
	n, i := 0, 0
	for ; i < len(buf) && i < 10 && buf[i] >= '0' && buf[i] <= '9' && !(i == 0 && buf[i] == '0'); i++ {
		n = n*10 + int(buf[i]-'0')
	}
	if i > 0 && i < len(buf) && buf[i] == ' ' {
		return len(buf)-i-1 >= n
	}
	return bytes.IndexByte(buf, '\n') >= 0
}
