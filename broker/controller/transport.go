package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"
)

// The controller port carries two protocols, told apart by the first byte
// a dialer writes:
//
//	'R'  Raft (hashicorp/raft NetworkTransport framing)
//	'C'  controller RPC: net/rpc with the JSON codec, service "Controller"
//	     (Heartbeat, Command, Join), served by the Raft leader
//	0    the Kafka protocol (a request's size starts with a zero byte),
//	     for Kafka's tools with --bootstrap-controller (kafkaport.go)
const (
	protoRaft byte = 'R'
	protoRPC  byte = 'C'
)

// DialFunc opens a connection to a controller or Kafka address. Tests
// inject one that drops, delays or cuts traffic.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

func defaultDial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// mux accepts connections on the controller listener and routes them by
// their first byte.
type mux struct {
	ln     net.Listener
	tls    *peerTLS // nil: plaintext
	ctx    context.Context
	cancel context.CancelFunc
	log    *zap.Logger
	raftCh chan net.Conn
	kafka  kafkaPort
	rpc    *rpc.Server
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newMux(ln net.Listener, srv *rpc.Server, ptls *peerTLS, lg *zap.Logger) *mux {
	m := &mux{ln: ln, tls: ptls, log: lg, raftCh: make(chan net.Conn), rpc: srv, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

func (m *mux) acceptLoop() {
	defer m.wg.Done()
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			m.log.Warn("controller accept failed", zap.Error(err))
			time.Sleep(20 * time.Millisecond)
			continue
		}
		m.wg.Add(1)
		go m.route(c)
	}
}

func (m *mux) track(c net.Conn, add bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if add {
		select {
		case <-m.done:
			return false
		default:
		}
		m.conns[c] = struct{}{}
	} else {
		delete(m.conns, c)
	}
	return true
}

func (m *mux) route(c net.Conn) {
	defer m.wg.Done()
	if m.tls != nil {
		var ok bool
		if c, ok = m.tls.accept(m.ctx, c); !ok {
			return
		}
	}
	var b [1]byte
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, b[:]); err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	switch b[0] {
	case protoRaft:
		select {
		case m.raftCh <- c:
		case <-m.done:
			c.Close()
		}
	case protoRPC:
		if !m.track(c, true) {
			c.Close()
			return
		}
		m.rpc.ServeCodec(jsonrpc.NewServerCodec(c))
		m.track(c, false)
	case protoKafka:
		m.routeKafka(c, b[0])
	default:
		m.log.Debug("controller connection with unknown protocol byte", zap.Uint8("byte", b[0]), zap.String("remote", c.RemoteAddr().String()))
		c.Close()
	}
}

// close stops accepting and closes the RPC connections; Raft closes its
// own.
func (m *mux) close() {
	m.once.Do(func() {
		close(m.done)
		m.cancel()
		m.ln.Close()
		m.mu.Lock()
		for c := range m.conns {
			c.Close()
		}
		m.mu.Unlock()
	})
	m.wg.Wait()
}

// raftLayer is the raft.StreamLayer over the mux.
type raftLayer struct {
	m    *mux
	dial DialFunc
}

func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raftCh:
		return c, nil
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

func (l *raftLayer) Close() error { l.m.close(); return nil }

func (l *raftLayer) Addr() net.Addr { return l.m.ln.Addr() }

func (l *raftLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := l.dial(ctx, string(addr))
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{protoRaft}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// rpcClient is a cached connection to one controller address.
type rpcClient struct {
	dial DialFunc

	mu   sync.Mutex
	addr string
	c    *rpc.Client
}

// call invokes method on the controller at addr, (re)connecting as
// needed. A transport failure drops the cached connection.
func (rc *rpcClient) call(ctx context.Context, addr, method string, args, reply any) error {
	rc.mu.Lock()
	if rc.c != nil && rc.addr != addr {
		rc.c.Close()
		rc.c = nil
	}
	c := rc.c
	rc.mu.Unlock()
	if c == nil {
		nc, err := rc.dial(ctx, addr)
		if err != nil {
			return fmt.Errorf("%w: dialing controller %s: %v", ErrNoController, addr, err)
		}
		if _, err := nc.Write([]byte{protoRPC}); err != nil {
			nc.Close()
			return fmt.Errorf("%w: controller %s: %v", ErrNoController, addr, err)
		}
		c = rpc.NewClientWithCodec(jsonrpc.NewClientCodec(nc))
		rc.mu.Lock()
		if rc.c != nil {
			rc.c.Close()
		}
		rc.c, rc.addr = c, addr
		rc.mu.Unlock()
	}
	call := c.Go("Controller."+method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		if call.Error == nil {
			return nil
		}
		var se rpc.ServerError
		if errors.As(call.Error, &se) {
			return fmt.Errorf("controller %s: %s", addr, string(se))
		}
		rc.drop(c)
		return fmt.Errorf("%w: controller %s: %v", ErrNoController, addr, call.Error)
	case <-ctx.Done():
		rc.drop(c)
		return ctx.Err()
	}
}

func (rc *rpcClient) drop(c *rpc.Client) {
	rc.mu.Lock()
	if rc.c == c {
		rc.c = nil
	}
	rc.mu.Unlock()
	c.Close()
}

func (rc *rpcClient) close() {
	rc.mu.Lock()
	if rc.c != nil {
		rc.c.Close()
		rc.c = nil
	}
	rc.mu.Unlock()
}
