package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// A connection runs two goroutines:
//
//	reader: read frame -> parse header -> decode -> handle (inline, or on a
//	        goroutine for async APIs) -> push a slot onto queue
//	writer: pop slots in order -> wait until each is done -> write its frame
//	        (flushing when nothing else is ready, or before waiting)
//
// The queue holds the slots in request order, so responses go back in
// request order even when async handlers finish out of order. Its capacity
// bounds the requests in flight per connection (backpressure on the reader).

const (
	maxInFlight    = 128
	readBufSize    = 64 << 10
	writeBufSize   = 64 << 10
	keepReadBuf    = 4 << 20 // larger request buffers are not kept for reuse
	minRequestSize = 8       // key, version, correlation id
)

// slot is one request's place in the response order.
type slot struct {
	done  chan struct{} // closed when ready; nil when ready at enqueue
	api   *api
	start time.Time
	// frame is the encoded response (size prefix included); nil with
	// spliced nil means no response (acks=0).
	frame   []byte
	spliced splicer
	err     error // the request failed: close the connection
	// closeAfter closes the connection once frame is written (a failed
	// SASL authentication).
	closeAfter bool
	// deferred is a response that must wait before it is encoded (set
	// by run; dispatch completes it on its own goroutine).
	deferred deferred
}

// deferred is implemented by responses that are complete only after a
// wait, such as acks=all Produce responses waiting for replication. The
// handler has done its work in request order; wait runs on its own
// goroutine and the response is encoded after it returns. The response
// must not alias the request buffer.
type deferred interface {
	kmsg.Response
	wait()
}

// splicer is implemented by responses that write their own frame, such as
// Fetch responses whose record batches come straight from log files.
type splicer interface {
	// writeFrame writes the whole frame (size prefix, header hdr, body).
	writeFrame(w *connWriter, hdr []byte) error
	// release frees what the response holds (file sections); called once,
	// whether or not writeFrame ran.
	release()
}

type conn struct {
	s      *Server
	l      *boundListener
	nc     net.Conn
	remote string
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan *slot
	br     *bufio.Reader
	w      connWriter
	rbuf   []byte
	closed sync.Once
	// principal is the client's Kafka principal (User:ANONYMOUS, or
	// from its TLS certificate), set before the first request is read.
	principal string
	// sasl is the authentication state on a SASL listener (sasl.go).
	sasl *saslConn
	// writeDeadlineSet is when the write deadline was last pushed out.
	writeDeadlineSet time.Time

	// wmu guards pending, the slots handed to the writer and not yet
	// written. While it is 0 the writer is idle with nothing buffered,
	// and the reader writes a synchronous response itself (one goroutine
	// hand-off less per request on the latency path).
	wmu     sync.Mutex
	pending int

	// mutedUntil (UnixNano) is when a throttled connection is read
	// again (quotas.go).
	mutedUntil atomic.Int64
}

// connWriter is the buffered writing side of a connection, with access to
// the raw socket for sendfile.
type connWriter struct {
	bw  *bufio.Writer
	raw net.Conn
}

func newConn(s *Server, l *boundListener, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	return &conn{
		s:      s,
		l:      l,
		nc:     nc,
		remote: nc.RemoteAddr().String(),
		ctx:    ctx,
		cancel: cancel,
		queue:  make(chan *slot, maxInFlight),
		br:     bufio.NewReaderSize(nc, readBufSize),
		w:      connWriter{bw: bufio.NewWriterSize(nc, writeBufSize), raw: nc},
	}
}

// serve runs the connection until the peer closes it, an error, or
// shutdown. It returns after both goroutines have finished.
func (c *conn) serve() {
	c.s.metrics.connOpened()
	defer c.s.metrics.connClosed()
	if err := c.handshake(); err != nil {
		c.close()
		return
	}
	c.saslSetup()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	err := c.readLoop()
	close(c.queue)
	<-writerDone
	c.close()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, context.Canceled) {
		c.s.log.Debug("kafka connection closed", zap.String("remote", c.remote), zap.Error(err))
	}
}

func (c *conn) close() {
	c.closed.Do(func() {
		c.cancel()
		c.nc.Close()
	})
}

// readLoop reads and dispatches requests until an error.
func (c *conn) readLoop() error {
	var sizeBuf [4]byte
	for {
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
		if err := c.waitMuted(); err != nil {
			return err
		}
		if c.authenticating() {
			c.nc.SetReadDeadline(c.sasl.deadline)
		} else if d := c.s.cfg.IdleTimeout; d > 0 {
			c.nc.SetReadDeadline(time.Now().Add(d))
		}
		if _, err := io.ReadFull(c.br, sizeBuf[:]); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && c.authenticating() {
				return c.saslFail("no SASL authentication before the handshake timeout")
			}
			if errors.Is(err, os.ErrDeadlineExceeded) && c.ctx.Err() == nil {
				return fmt.Errorf("idle for %s (connections.max.idle.ms)", c.s.cfg.IdleTimeout)
			}
			return err
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if c.authenticating() && (size < 0 || size > c.sasl.srv.MaxReceiveSize()) {
			c.s.metrics.rejectedFrames.Inc()
			return c.saslFail(fmt.Sprintf("Failing SASL authentication due to invalid receive size %d (sasl.server.max.receive.size %d)", uint32(size), c.sasl.srv.MaxReceiveSize()))
		}
		if c.sasl != nil && c.sasl.raw && c.sasl.state == saslAuthenticate {
			if err := c.readRawToken(size); err != nil {
				return err
			}
			continue
		}
		if size < minRequestSize || size > c.s.cfg.MaxRequestBytes {
			c.s.metrics.rejectedFrames.Inc()
			return fmt.Errorf("%w: request size %d outside [%d, %d] (socket.request.max.bytes)", errFrame, size, minRequestSize, c.s.cfg.MaxRequestBytes)
		}
		buf := c.rbuf
		if int(size) > cap(buf) {
			buf = make([]byte, size)
			if size <= keepReadBuf {
				c.rbuf = buf
			}
		}
		buf = buf[:size]
		if _, err := io.ReadFull(c.br, buf); err != nil {
			return fmt.Errorf("%w: reading %d-byte request: %w", errFrame, size, err)
		}
		if err := c.dispatch(buf, time.Now()); err != nil {
			return err
		}
	}
}

// dispatch parses, decodes and runs one request, queueing its slot.
func (c *conn) dispatch(buf []byte, received time.Time) error {
	h, body, err := parseHeader(buf)
	if err != nil {
		c.s.metrics.rejectedFrames.Inc()
		return err
	}
	var a *api
	if h.key >= 0 && int(h.key) < len(apis) {
		a = apis[h.key]
	}
	if a == nil {
		c.s.metrics.rejectedFrames.Inc()
		return fmt.Errorf("%w: unsupported API key %d", errFrame, h.key)
	}
	if err := c.saslGate(h.key); err != nil {
		return err
	}
	if h.version < a.min || h.version > a.max {
		if h.key == kmsg.ApiVersions.Int16() {
			// KIP-511: answer an unknown ApiVersions version with
			// UNSUPPORTED_VERSION and a v0 body listing what we serve.
			sl := &slot{api: a, start: received, frame: encodeFrame(&h, unsupportedAPIVersions())}
			if done, err := c.writeDirect(sl); done || err != nil {
				return err
			}
			return c.enqueue(sl)
		}
		c.s.metrics.rejectedFrames.Inc()
		return fmt.Errorf("%w: %s (key %d) version %d not in %d..%d", errFrame, kmsg.NameForKey(h.key), h.key, h.version, a.min, a.max)
	}
	kreq := kmsg.RequestForKey(h.key)
	kreq.SetVersion(h.version)
	h.flexible = kreq.IsFlexible()
	if h.flexible {
		if body, err = skipHeaderTags(body); err != nil {
			c.s.metrics.rejectedFrames.Inc()
			return err
		}
	}
	if u, ok := kreq.(kmsg.UnsafeReadFrom); ok {
		err = u.UnsafeReadFrom(body)
	} else {
		err = kreq.ReadFrom(body)
	}
	if err != nil {
		c.s.metrics.rejectedFrames.Inc()
		return fmt.Errorf("%w: decoding %s v%d: %v", errFrame, kmsg.NameForKey(h.key), h.version, err)
	}
	r := &Request{Ctx: c.ctx, Key: h.key, Version: h.version, ClientID: h.clientID, Kmsg: kreq, Received: received, Remote: c.remote,
		Listener: c.l.cfg.Name, Principal: c.principal, Size: int32(len(buf)), c: c}
	if !a.async {
		sl := &slot{api: a, start: received}
		c.run(sl, &h, r)
		if sl.deferred != nil {
			return c.complete(sl, h)
		}
		if done, err := c.writeDirect(sl); done || err != nil {
			return err
		}
		if err := c.enqueue(sl); err != nil {
			return err
		}
		return sl.err
	}
	// The async handler owns buf (the request aliases it).
	c.rbuf = nil
	h.clientID = string([]byte(h.clientID))
	r.ClientID = h.clientID
	sl := &slot{api: a, start: received}
	return c.startSlot(sl, func() {
		c.run(sl, &h, r)
		if sl.deferred != nil {
			sl.deferred.wait()
			sl.frame = encodeFrame(&h, sl.deferred)
		}
	})
}

// complete queues a deferred response's slot and finishes it on its own
// goroutine (the header is copied: its client id aliases the read buffer).
func (c *conn) complete(sl *slot, h header) error {
	h.clientID = ""
	return c.startSlot(sl, func() {
		sl.deferred.wait()
		sl.frame = encodeFrame(&h, sl.deferred)
	})
}

// startSlot queues sl in the connection's response order and has fill
// make its frame on a goroutine of its own (counted in the server's
// inflight requests); the writer waits for sl.done, closed after fill.
func (c *conn) startSlot(sl *slot, fill func()) error {
	sl.done = make(chan struct{})
	c.wmu.Lock()
	c.pending++
	c.wmu.Unlock()
	if err := c.enqueue(sl); err != nil {
		return err
	}
	c.s.inflight.Add(1)
	go func() {
		defer c.s.inflight.Done()
		defer close(sl.done)
		fill()
	}()
	return nil
}

// run calls the handler and fills in sl.
func (c *conn) run(sl *slot, h *header, r *Request) {
	var began time.Time
	if !sl.api.async {
		began = c.s.quotaStart()
	}
	resp, err := sl.api.handle(c.s, r)
	if err == nil {
		c.throttle(r, resp, began)
	}
	sl.closeAfter = r.closeAfter
	if err != nil {
		sl.err = fmt.Errorf("%s v%d: %w", kmsg.NameForKey(h.key), h.version, err)
		if sp, ok := resp.(splicer); ok {
			sp.release()
		}
		return
	}
	if resp == nil {
		return
	}
	resp.SetVersion(h.version)
	if d, ok := resp.(deferred); ok {
		sl.deferred = d
		return
	}
	if sp, ok := resp.(splicer); ok {
		sl.spliced = sp
		sl.frame = appendResponseHeader(make([]byte, 0, 16), h)
		return
	}
	sl.frame = encodeFrame(h, resp)
}

// encodeFrame encodes a response frame: size, header, body.
func encodeFrame(h *header, resp kmsg.Response) []byte {
	b := make([]byte, 4, 256)
	b = appendResponseHeader(b, h)
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// writeDirect writes a ready response from the reading goroutine when the
// writer is idle (done=true); otherwise it counts sl as pending for the
// writer, and the caller enqueues it.
func (c *conn) writeDirect(sl *slot) (done bool, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.pending > 0 || sl.err != nil || sl.spliced != nil {
		c.pending++
		return false, nil
	}
	if sl.frame != nil {
		c.touchWriteDeadline()
		if _, err = c.w.bw.Write(sl.frame); err == nil {
			err = c.w.bw.Flush()
		}
	}
	c.s.metrics.observe(sl.api.key, sl.start)
	if err == nil && sl.closeAfter {
		err = errAuthFailed
	}
	if err != nil {
		c.fail(err)
	}
	return true, err
}

// writtenOne is the writer's count-down of pending.
func (c *conn) writtenOne() {
	c.wmu.Lock()
	c.pending--
	c.wmu.Unlock()
}

func (c *conn) enqueue(sl *slot) error {
	select {
	case c.queue <- sl:
		return nil
	case <-c.ctx.Done():
		if sl.spliced != nil {
			sl.spliced.release()
		}
		return c.ctx.Err()
	}
}

// writeLoop writes responses in request order. After a write error or a
// failed request it closes the connection and keeps draining the queue
// (releasing what slots hold) until the reader closes it.
func (c *conn) writeLoop() {
	dead := false
	for sl := range c.queue {
		if sl.done != nil {
			select {
			case <-sl.done:
			default:
				if !dead {
					if err := c.flush(); err != nil {
						dead = c.fail(err)
					}
				}
				<-sl.done
			}
		}
		if dead {
			if sl.spliced != nil {
				sl.spliced.release()
			}
			c.writtenOne()
			continue
		}
		if sl.err != nil {
			dead = c.fail(sl.err)
			c.writtenOne()
			continue
		}
		c.touchWriteDeadline()
		var err error
		switch {
		case sl.spliced != nil:
			err = sl.spliced.writeFrame(&c.w, sl.frame)
			sl.spliced.release()
		case sl.frame != nil:
			_, err = c.w.bw.Write(sl.frame)
		}
		c.s.metrics.observe(sl.api.key, sl.start)
		if err == nil && (len(c.queue) == 0 || sl.closeAfter) {
			err = c.flush()
		}
		if err == nil && sl.closeAfter {
			err = errAuthFailed
		}
		if err != nil {
			dead = c.fail(err)
		}
		c.writtenOne()
	}
	if !dead {
		c.flush()
	}
}

func (c *conn) flush() error {
	if c.w.bw.Buffered() == 0 {
		return nil
	}
	c.touchWriteDeadline()
	return c.w.bw.Flush()
}

// touchWriteDeadline keeps the write deadline at least half the idle
// timeout away: a peer that stops reading for connections.max.idle.ms
// gets its connection closed instead of blocking the writer forever.
func (c *conn) touchWriteDeadline() {
	d := c.s.cfg.IdleTimeout
	if d <= 0 {
		return
	}
	if now := time.Now(); now.Sub(c.writeDeadlineSet) > d/2 {
		c.writeDeadlineSet = now
		c.nc.SetWriteDeadline(now.Add(d))
	}
}

// fail closes the connection because of err; it returns true.
func (c *conn) fail(err error) bool {
	if !errors.Is(err, net.ErrClosed) {
		c.s.log.Debug("kafka connection failed", zap.String("remote", c.remote), zap.Error(err))
	}
	c.close()
	return true
}

// unsupportedAPIVersions is the v0 ApiVersions body for a version we do not
// serve.
func unsupportedAPIVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = apiVersionKeys()
	return resp
}
