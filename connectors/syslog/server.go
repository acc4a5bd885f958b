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

	"go.uber.org/zap"

	"weir/connectors"
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
	// Linger is the producer's linger (default 5ms).
	Linger time.Duration
	// MaxBufferedRecords and MaxBufferedBytes bound the messages handed
	// to the runtime and not yet acknowledged (defaults 100,000 and
	// 64 MiB). When the buffer is full TCP connections are not read
	// (senders see TCP backpressure) and UDP datagrams are dropped and
	// counted.
	MaxBufferedRecords int
	MaxBufferedBytes   int64
	// UDPReadBuffer is the UDP socket's receive buffer (SO_RCVBUF,
	// default 4 MiB; the kernel may grant less).
	UDPReadBuffer int
}

func (o *Options) defaults() error {
	if o.Topic == "" || o.Encoder == nil {
		return fmt.Errorf("%w: syslog endpoint needs a topic and an encoder", connectors.ErrConfig)
	}
	if o.TCPAddr == "" && o.UDPAddr == "" {
		return fmt.Errorf(`%w: syslog endpoint: set "tcp_address", "udp_address" or both`, connectors.ErrConfig)
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 64 << 10
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
	return nil
}

// Server receives syslog over TCP and UDP and hands one record per
// message to the connector runtime: a connectors.PushSource (see the
// package documentation).
type Server struct {
	o Options

	// set by Open
	p    *connectors.Pusher
	log  *zap.Logger
	m    *connectors.Metrics
	tcp  net.Listener
	udp  *net.UDPConn
	addr atomic.Pointer[[2]net.Addr] // TCP, UDP

	// ctx ends the loops at Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}

	udpDropped atomic.Int64
	udpTaken   atomic.Int64 // datagrams handed to the runtime or dropped
	closeOnce  sync.Once
}

// New checks o and returns a server that is not listening yet (Source
// runs it through the connector runtime).
func New(o Options) (*Server, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	return &Server{o: o, log: zap.NewNop(), conns: map[net.Conn]struct{}{}}, nil
}

// Source is the connector source that runs s: a push source whose
// records the runtime produces.
func (s *Server) Source() *Source {
	return connectors.NewPushed(s, connectors.PushOptions{
		MaxRecords: s.o.MaxBufferedRecords, MaxBytes: s.o.MaxBufferedBytes, Linger: s.o.Linger})
}

// Source is the "syslog" kind's connectors.Source: a Server pushing
// through the runtime (Server() is the endpoint it runs).
type Source = connectors.Pushed[*Server]

// Open implements connectors.PushSource: it registers the schema and
// starts the listeners.
func (s *Server) Open(ctx context.Context, sc connectors.SourceContext, p *connectors.Pusher) error {
	s.p, s.log, s.m = p, sc.Logger(), sc.Metrics()
	if err := s.o.Encoder.Init(ctx, s.o.Topic); err != nil {
		return err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
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
	var a [2]net.Addr
	if s.tcp != nil {
		a[0] = s.tcp.Addr()
	}
	if s.udp != nil {
		a[1] = s.udp.LocalAddr()
	}
	s.addr.Store(&a)
	s.log.Info("syslog listening", zap.String("tcp", addrString(s.TCPAddr())), zap.String("udp", addrString(s.UDPAddr())), zap.String("topic", s.o.Topic))
	return nil
}

// addrString is a's text, "off" for a listener that is off (nil).
func addrString(a net.Addr) string {
	if a == nil {
		return "off"
	}
	return a.String()
}

// TCPAddr is the TCP listen address (nil before Open or when TCP is off).
func (s *Server) TCPAddr() net.Addr {
	if a := s.addr.Load(); a != nil {
		return a[0]
	}
	return nil
}

// UDPAddr is the UDP listen address (nil before Open or when UDP is off).
func (s *Server) UDPAddr() net.Addr {
	if a := s.addr.Load(); a != nil {
		return a[1]
	}
	return nil
}

// UDPDropped is the number of UDP datagrams dropped on a full buffer.
func (s *Server) UDPDropped() int64 { return s.udpDropped.Load() }

// UDPTaken is the number of UDP datagrams read and either handed to the
// runtime (queued for it: its records_in counts them once it takes them
// from the queue, which it does not while it waits on the broker) or
// dropped (UDPDropped).
func (s *Server) UDPTaken() int64 { return s.udpTaken.Load() }

// Close implements connectors.PushSource: it stops the listeners and
// connections and waits for their goroutines; the runtime then waits
// until the broker acknowledged every message already read.
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
		s.wg.Wait()
	})
	return nil
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
	// Messages already buffered whole are pushed as one batch (at most
	// a quarter of the bound, so backpressure stays fine-grained); a
	// message is never held waiting for more input.
	most := min(64, max(1, s.o.MaxBufferedRecords/4))
	batch := make([]connectors.SourceRecord, 0, most)
	for {
		b, cut, err := fr.next()
		if err != nil {
			if len(batch) > 0 {
				_ = s.p.Push(s.ctx, batch, nil)
			}
			if !errors.Is(err, io.EOF) && s.ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				s.m.Error(stageRead)
				s.log.Info("syslog connection closed with an error", zap.String("peer", peer), zap.Error(err))
			}
			return
		}
		batch = append(batch, s.record(b, cut, peer, "tcp"))
		if len(batch) < most && fr.ready() {
			continue
		}
		// Push blocks while the buffer is full: this connection is not
		// read meanwhile, so the sender sees TCP backpressure.
		if err := s.p.Push(s.ctx, batch, nil); err != nil {
			return // stopping: Close is closing the connection
		}
		batch = batch[:0]
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
		one := [1]connectors.SourceRecord{s.record(b, cut, addr.String(), "udp")}
		if err := s.p.TryPush(one[:], nil); errors.Is(err, connectors.ErrPushFull) {
			s.udpDropped.Add(1)
			s.m.Event(EventUDPDropped)
		}
		s.udpTaken.Add(1)
		if d := s.udpDropped.Load(); d > warned && time.Since(lastWarn) > time.Second {
			s.log.Warn("dropping UDP messages: buffer full", zap.Int64("dropped_total", d))
			warned, lastWarn = d, time.Now()
		}
	}
}

// record parses b and builds its record (b is not kept).
func (s *Server) record(b []byte, cut bool, peer, transport string) connectors.SourceRecord {
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
	return connectors.SourceRecord{Topic: s.o.Topic, Value: v, Timestamp: now}
}
