package controller

import (
	"io"
	"net"
	"sync"
)

// The controller port also speaks the Kafka protocol, for Kafka's tools
// with --bootstrap-controller (kafka-metadata-quorum): a connection whose
// first byte is 0 (the high byte of a request's size) is handed, with
// that byte, to the Kafka server through Node.KafkaListener (broker/node
// serves it as the controller listener: DescribeCluster answers the
// controllers there, DescribeQuorum, AddRaftVoter and RemoveRaftVoter
// work as on a broker listener). Until a Kafka server takes the listener
// such connections are closed. On an SSL controller listener the TLS
// handshake is the mux's; the Kafka side sees the decrypted connection.
const protoKafka byte = 0

type kafkaPort struct {
	mu sync.Mutex
	ch chan net.Conn // nil until KafkaListener
}

// routeKafka hands c (whose first byte b was read) to the Kafka listener.
func (m *mux) routeKafka(c net.Conn, b byte) {
	m.kafka.mu.Lock()
	ch := m.kafka.ch
	m.kafka.mu.Unlock()
	if ch == nil {
		c.Close()
		return
	}
	pc := &prefixConn{Conn: c, first: []byte{b}}
	select {
	case ch <- pc:
	case <-m.done:
		c.Close()
	}
}

// KafkaListener returns the controller port's Kafka-protocol connections
// as a listener (its address is the controller port's). Call it once.
func (n *Node) KafkaListener() net.Listener {
	k := &n.mux.kafka
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ch == nil {
		k.ch = make(chan net.Conn)
	}
	return &kafkaListener{m: n.mux, ch: k.ch, done: make(chan struct{})}
}

type kafkaListener struct {
	m    *mux
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

func (l *kafkaListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

func (l *kafkaListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *kafkaListener) Addr() net.Addr { return l.m.ln.Addr() }

// prefixConn replays bytes already read from a connection.
type prefixConn struct {
	net.Conn
	first []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

var _ io.Reader = (*prefixConn)(nil)
