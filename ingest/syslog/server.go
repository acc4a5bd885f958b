package syslog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/ingest/client"
)

// Options configure a Server. Zero values take the defaults.
type Options struct {
	// Topic receives every message. Required.
	Topic string
	// TCPAddr and UDPAddr are the listen addresses ("" disables one; at
	// least one is required). ":0" picks a free port.
	TCPAddr, UDPAddr string
	// MaxMessageBytes cuts longer messages (flagged truncated; default
	// 64 KiB; UDP datagrams are at most 65,507 bytes anyway).
	MaxMessageBytes int
	// Encoder encodes the record values. Required.
	Encoder Encoder
	// Brokers are the bootstrap brokers. Required.
	Brokers []string
	// Acks is the producer's acks (default all).
	Acks *client.Acks
	// Linger is the producer's linger (default 5ms).
	Linger time.Duration
	// MaxBufferedRecords and MaxBufferedBytes bound the messages handed
	// to the producer and not yet acknowledged (defaults 100,000 and
	// 64 MiB). When the buffer is full TCP connections are not read
	// (senders see TCP backpressure) and UDP datagrams are dropped and
	// counted.
	MaxBufferedRecords int
	MaxBufferedBytes   int64
	// UDPReadBuffer is the UDP socket's receive buffer (SO_RCVBUF,
	// default 4 MiB; the kernel may grant less).
	UDPReadBuffer int
	// ClientOpts are extra franz-go options (TLS, SASL, a dialer).
	ClientOpts []kgo.Opt
	// Logger and Metrics (nil: none, unregistered).
	Logger  *zap.Logger
	Metrics *connectors.Metrics
}

func (o *Options) defaults() error {
	if o.Topic == "" || o.Encoder == nil || len(o.Brokers) == 0 {
		return fmt.Errorf("%w: syslog endpoint needs a topic, an encoder and brokers", connectors.ErrConfig)
	}
	if o.TCPAddr == "" && o.UDPAddr == "" {
		return fmt.Errorf(`%w: syslog endpoint: set "tcp_address", "udp_address" or both`, connectors.ErrConfig)
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 64 << 10
	}
	if o.Acks == nil {
		all := client.Acks(-1)
		o.Acks = &all
	}
	if o.Linger <= 0 {
		o.Linger = 5 * time.Millisecond
	}
	if o.MaxBufferedRecords <= 0 {
		o.MaxBufferedRecords = 100_000
	}
	if o.MaxBufferedBytes <= 0 {
		o.MaxBufferedBytes = 64 << 20
	}
	if o.UDPReadBuffer <= 0 {
		o.UDPReadBuffer = 4 << 20
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = connectors.NewTestMetrics("syslog")
	}
	return nil
}

// Server receives syslog over TCP and UDP and produces one record per
// message. See the package documentation.
type Server struct {
	o   Options
	cl  *kgo.Client
	tcp net.Listener
	udp *net.UDPConn
	log *zap.Logger
	m   *connectors.Metrics

	// ctx ends the loops at Close; pctx, the context of every produced
	// record, ends only after Close's flush, so messages already read are
	// not failed by the shutdown itself.
	ctx     context.Context
	cancel  context.CancelFunc
	pctx    context.Context
	pcancel context.CancelFunc
	wg      sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	inflight   atomic.Int64
	udpDropped atomic.Int64
	closeOnce  sync.Once
	closeErr   error
}

// New checks o and returns a server that is not listening yet.
func New(o Options) (*Server, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	return &Server{o: o, log: o.Logger, m: o.Metrics, conns: map[net.Conn]struct{}{}}, nil
}

// Start registers the schema, connects the producer and starts the
// listeners. Call Close to stop.
func (s *Server) Start(ctx context.Context) error {
	if err := s.o.Encoder.Init(ctx, s.o.Topic); err != nil {
		return err
	}
	opts := append(client.ProducerOpts(s.o.Brokers, *s.o.Acks, kgo.NoCompression()),
		kgo.ProducerLinger(s.o.Linger),
		kgo.MaxBufferedRecords(s.o.MaxBufferedRecords),
		kgo.MaxBufferedBytes(int(s.o.MaxBufferedBytes)),
		kgo.ProducerBatchMaxBytes(1<<20),
	)
	cl, err := kgo.NewClient(append(opts, s.o.ClientOpts...)...)
	if err != nil {
		return fmt.Errorf("syslog endpoint: producer: %w", err)
	}
	s.cl = cl
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.pctx, s.pcancel = context.WithCancel(context.Background())
	if s.o.TCPAddr != "" {
		ln, err := net.Listen("tcp", s.o.TCPAddr)
		if err != nil {
			s.Close()
			return fmt.Errorf("syslog endpoint: tcp_address %q: %w", s.o.TCPAddr, err)
		}
		s.tcp = ln
		s.wg.Add(1)
		go s.acceptLoop()
	}
	if s.o.UDPAddr != "" {
		addr, err := net.ResolveUDPAddr("udp", s.o.UDPAddr)
		if err == nil {
			s.udp, err = net.ListenUDP("udp", addr)
		}
		if err != nil {
			s.Close()
			return fmt.Errorf("syslog endpoint: udp_address %q: %w", s.o.UDPAddr, err)
		}
		_ = s.udp.SetReadBuffer(s.o.UDPReadBuffer)
		s.wg.Add(1)
		go s.udpLoop()
	}
	s.log.Info("syslog listening", zap.Stringer("tcp", s.TCPAddr()), zap.Stringer("udp", s.UDPAddr()), zap.String("topic", s.o.Topic))
	return nil
}

// TCPAddr is the TCP listen address (nil when TCP is off).
func (s *Server) TCPAddr() net.Addr {
	if s.tcp == nil {
		return nil
	}
	return s.tcp.Addr()
}

// UDPAddr is the UDP listen address (nil when UDP is off).
func (s *Server) UDPAddr() net.Addr {
	if s.udp == nil {
		return nil
	}
	return s.udp.LocalAddr()
}

// UDPDropped is the number of UDP datagrams dropped on a full buffer.
func (s *Server) UDPDropped() int64 { return s.udpDropped.Load() }

// Close stops the listeners and connections, then waits (up to ctx or
// 30 s) until the broker acknowledged every message already read.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.cancel != nil {
			s.cancel()
		}
		if s.tcp != nil {
			s.tcp.Close()
		}
		if s.udp != nil {
			s.udp.Close()
		}
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		if s.cl != nil {
			// Connections blocked in Produce finish as the flush drains
			// the buffer; after the deadline pctx fails what is left.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := s.cl.Flush(ctx); err != nil {
				s.closeErr = fmt.Errorf("syslog endpoint: %d messages not acknowledged at shutdown: %w", s.inflight.Load(), err)
			}
			s.pcancel()
			s.wg.Wait()
			s.cl.Close()
		}
		s.wg.Wait()
	})
	return s.closeErr
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	var delay time.Duration
	for {
		c, err := s.tcp.Accept()
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.m.Error(stageAccept)
			delay = min(max(delay*2, 5*time.Millisecond), time.Second)
			s.log.Warn("syslog accept failed; retrying", zap.Error(err), zap.Duration("in", delay))
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.m.Event(EventConnOpened)
		s.wg.Add(1)
		go s.serveConn(c)
	}
}

func (s *Server) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	peer := c.RemoteAddr().String()
	fr := newFrameReader(c, s.o.MaxMessageBytes)
	for {
		b, cut, err := fr.next()
		if err != nil {
			if !errors.Is(err, io.EOF) && s.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				s.m.Error(stageRead)
				s.log.Info("syslog connection closed with an error", zap.String("peer", peer), zap.Error(err))
			}
			return
		}
		r := s.record(b, cut, peer, "tcp")
		// Produce blocks while the buffer is full: this connection is not
		// read meanwhile, so the sender sees TCP backpressure.
		if s.cl.BufferedProduceRecords() >= int64(s.o.MaxBufferedRecords) {
			s.m.Paused.Set(1)
			s.cl.Produce(s.pctx, r, s.promise)
			s.m.Paused.Set(0)
		} else {
			s.cl.Produce(s.pctx, r, s.promise)
		}
	}
}

func (s *Server) udpLoop() {
	defer s.wg.Done()
	buf := make([]byte, 65536)
	var lastWarn time.Time
	var warned int64
	for {
		n, addr, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if s.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.m.Error(stageUDPRead)
			continue
		}
		b, cut := buf[:n], false
		if n > s.o.MaxMessageBytes {
			b, cut = b[:s.o.MaxMessageBytes], true
		}
		r := s.record(b, cut, addr.String(), "udp")
		s.cl.TryProduce(s.pctx, r, s.promise)
		if d := s.udpDropped.Load(); d > warned && time.Since(lastWarn) > time.Second {
			s.log.Warn("dropping UDP messages: producer buffer full", zap.Int64("dropped_total", d))
			warned, lastWarn = d, time.Now()
		}
	}
}

// record parses b and builds its record (b is not kept).
func (s *Server) record(b []byte, cut bool, peer, transport string) *kgo.Record {
	now := time.Now()
	ev := Event{Message: Parse(b, now), Received: now, Peer: peer, Transport: transport}
	ev.Truncated = cut
	if ev.ParseError != "" {
		s.m.Event(EventParseError)
	}
	if cut {
		s.m.Event(EventTruncated)
	}
	v := s.o.Encoder.Append(make([]byte, 0, len(b)+64+len(peer)), &ev)
	s.m.RecordsIn.Inc()
	s.m.BytesIn.Add(float64(len(v)))
	s.m.Lag.Set(float64(s.inflight.Add(1)))
	return &kgo.Record{Topic: s.o.Topic, Value: v, Timestamp: now}
}

func (s *Server) promise(r *kgo.Record, err error) {
	s.m.Lag.Set(float64(s.inflight.Add(-1)))
	switch {
	case err == nil:
		s.m.RecordsOut.Inc()
		s.m.BytesOut.Add(float64(len(r.Value)))
	case errors.Is(err, kgo.ErrMaxBuffered):
		s.udpDropped.Add(1)
		s.m.Event(EventUDPDropped)
	case errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed):
		// Shutting down past the flush deadline; counted by Close.
	default:
		s.m.Error(stageProduce)
		s.log.Warn("broker refused a syslog message", zap.String("topic", r.Topic), zap.Error(err))
	}
}
