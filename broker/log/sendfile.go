package log

import (
	"errors"
	"io"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// WriteTo writes the section to w. When w is a socket (a syscall.Conn such
// as *net.TCPConn) and the section's file is an OS file, it uses sendfile(2)
// with an explicit offset, never the file's shared position, so concurrent
// fetches of one segment do not race; otherwise it copies through ReadAt.
func (s *Section) WriteTo(w io.Writer) (int64, error) {
	if s.n == 0 {
		return 0, nil
	}
	if sc, ok := w.(syscall.Conn); ok {
		if fc, ok := s.f.(syscall.Conn); ok {
			n, err, handled := sendfile(sc, fc, s.off, s.n)
			if handled {
				return n, err
			}
			if n > 0 { // partial progress then an unsupported condition
				m, err := io.Copy(w, io.NewSectionReader(s.f, s.off+n, s.n-n))
				return n + m, err
			}
		}
	}
	return io.Copy(w, io.NewSectionReader(s.f, s.off, s.n))
}

// sendfileBytes counts bytes sent with sendfile(2) (observability for tests
// and metrics).
var sendfileBytes atomic.Int64

// SendfileBytes returns the bytes sent with sendfile(2) so far by this process.
func SendfileBytes() int64 { return sendfileBytes.Load() }

// sendfile sends n bytes of file from off to the socket. handled=false means
// sendfile could not be used (caller falls back).
func sendfile(dst, src syscall.Conn, off, n int64) (written int64, err error, handled bool) {
	out, err := dst.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	in, err := src.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	handled = true
	var werr error
	cerr := in.Control(func(infd uintptr) {
		pos := off
		remain := n
		err := out.Write(func(outfd uintptr) bool {
			for remain > 0 {
				chunk := remain
				if chunk > 1<<30 {
					chunk = 1 << 30
				}
				m, err := unix.Sendfile(int(outfd), int(infd), &pos, int(chunk))
				if m > 0 {
					sendfileBytes.Add(int64(m))
					written += int64(m)
					remain -= int64(m)
				}
				switch {
				case err == unix.EAGAIN:
					return false // wait until the socket is writable
				case err == unix.EINTR:
					continue
				case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
					if written == 0 {
						handled = false
					}
					return true
				case err != nil:
					werr = err
					return true
				case m == 0:
					werr = io.ErrUnexpectedEOF // file shorter than the section
					return true
				}
			}
			return true
		})
		if werr == nil && err != nil {
			werr = err
		}
	})
	if cerr != nil {
		return written, cerr, handled
	}
	if !handled {
		return written, nil, false
	}
	return written, werr, true
}
