package kafka

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the protocol by hand, to send exact versions and bytes.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

// frame builds a request frame for req at its Version.
func (r *rawConn) frame(req kmsg.Request) []byte {
	r.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	return f.AppendRequest(nil, req, r.corr)
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

// readFrame reads one response frame (without its size prefix).
func (r *rawConn) readFrame(timeout time.Duration) ([]byte, error) {
	r.c.SetReadDeadline(time.Now().Add(timeout))
	var sz [4]byte
	if _, err := io.ReadFull(r.c, sz[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	_, err := io.ReadFull(r.c, b)
	return b, err
}

// roundTrip sends req and decodes the response into a new response of the
// matching kind.
func (r *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.write(r.frame(req))
	return r.readResponse(req)
}

func (r *rawConn) readResponse(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	b, err := r.readFrame(10 * time.Second)
	if err != nil {
		r.t.Fatalf("reading response to %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	if corr := int32(binary.BigEndian.Uint32(b)); corr != r.corr {
		r.t.Fatalf("correlation id %d, want %d", corr, r.corr)
	}
	b = b[4:]
	if resp.IsFlexible() && req.Key() != 18 {
		if len(b) == 0 || b[0] != 0 {
			r.t.Fatalf("flexible response header tags: %x", b[:min(len(b), 4)])
		}
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		r.t.Fatalf("decoding %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// expectClosed asserts the server closes the connection (EOF or reset)
// without sending anything.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	n, err := r.c.Read(b[:])
	if err == nil || n > 0 {
		r.t.Fatalf("connection still open (read %d bytes, err %v)", n, err)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatal("connection not closed within 10s")
	}
}
