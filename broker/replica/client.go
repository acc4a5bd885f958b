package replica

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/tlsconf"
)

// client is a minimal Kafka protocol client for one broker connection:
// one request at a time (a follower's fetcher is sequential), kmsg for
// every encoding. The reply buffer is reused: a decoded response may
// alias it until the next request.
type client struct {
	nc   net.Conn
	br   *bufio.Reader
	fmt  *kmsg.RequestFormatter
	corr int32
	wbuf []byte
	rbuf []byte
}

// DialFunc opens a connection to a broker's Kafka listener.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

func defaultDial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// tlsDial wraps dial with the TLS handshake of Config.TLS. A refused
// handshake (the leader does not trust this broker's certificate, or
// this broker the leader's) is a warning, once per leader address and
// error, then counted.
func (m *Manager) tlsDial(dial DialFunc) DialFunc {
	timeout := m.cfg.HandshakeTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		nc, err := dial(ctx, addr)
		if err != nil {
			return nil, err
		}
		return m.cfg.TLS.DialHandshake(ctx, nc, addr, timeout, func(err error) {
			m.warn.Log("tls:"+addr, err.Error(), "replica fetcher cannot connect to the leader: TLS handshake failed",
				zap.String("addr", addr), zap.String("principal", tlsconf.RefusedPeer(err)), zap.Error(err))
		})
	}
}

func dialClient(ctx context.Context, dial DialFunc, addr, clientID string) (*client, error) {
	nc, err := dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &client{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
}

func (c *client) close() { c.nc.Close() }

// errShortResponse is a response frame that does not parse.
var errShortResponse = errors.New("malformed response")

// roundTrip sends req and decodes the reply into resp (whose version is
// set to req's), giving up at deadline.
func (c *client) roundTrip(req kmsg.Request, resp kmsg.Response, deadline time.Time) error {
	c.corr++
	c.wbuf = c.fmt.AppendRequest(c.wbuf[:0], req, c.corr)
	c.nc.SetDeadline(deadline)
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 1<<30 {
		return fmt.Errorf("%w: frame of %d bytes", errShortResponse, n)
	}
	if cap(c.rbuf) < n {
		c.rbuf = make([]byte, n)
	}
	buf := c.rbuf[:n]
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return err
	}
	if corr := int32(binary.BigEndian.Uint32(buf)); corr != c.corr {
		return fmt.Errorf("%w: correlation id %d, want %d", errShortResponse, corr, c.corr)
	}
	body := buf[4:]
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && resp.Key() != kmsg.ApiVersions.Int16() {
		r := kbin.Reader{Src: body}
		for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
		if !r.Ok() {
			return fmt.Errorf("%w: header tags", errShortResponse)
		}
		body = r.Src
	}
	if u, ok := resp.(kmsg.UnsafeReadFrom); ok {
		return u.UnsafeReadFrom(body)
	}
	return resp.ReadFrom(body)
}
