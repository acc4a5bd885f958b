package gate

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Gate sits between the producer and the broker: Pause holds every
// write (a broker that stops reading); Cut refuses new connections and
// closes the open ones (a broker that is gone); Resume undoes both. Its
// methods are safe for concurrent use.
type Gate struct {
	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	cut    bool
	conns  map[net.Conn]bool
}

// New returns an open gate.
func New() *Gate {
	g := &Gate{conns: map[net.Conn]bool{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Pause holds every write on the gate's connections until Resume.
func (g *Gate) Pause() { g.mu.Lock(); g.paused = true; g.mu.Unlock() }

// Cut closes the gate's connections and refuses new ones until Resume.
func (g *Gate) Cut() {
	g.mu.Lock()
	g.cut = true
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
}

// Resume lets writes and new connections through again.
func (g *Gate) Resume() {
	g.mu.Lock()
	g.paused, g.cut = false, false
	g.cond.Broadcast()
	g.mu.Unlock()
}

// Opts returns the client options that put g between a kgo client and
// its brokers: g.Dial as the dialer, and metadata and retry waits short
// enough that the client is back within a fraction of a second of
// Resume (kgo waits out MetadataMinAge, 5 s, and a retry backoff of up
// to 2.5 s by default).
func (g *Gate) Opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.Dialer(g.Dial),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
}

// Dial is a kgo.Dialer: it dials host unless the gate is cut and returns
// a connection whose writes the gate holds while paused.
func (g *Gate) Dial(ctx context.Context, network, host string) (net.Conn, error) {
	g.mu.Lock()
	cut := g.cut
	g.mu.Unlock()
	if cut {
		return nil, fmt.Errorf("dial %s: connection refused (test gate)", host)
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.conns[c] = true
	g.mu.Unlock()
	return gatedConn{c, g}, nil
}

type gatedConn struct {
	net.Conn
	g *Gate
}

func (c gatedConn) Write(b []byte) (int, error) {
	c.g.mu.Lock()
	for c.g.paused {
		c.g.cond.Wait()
	}
	c.g.mu.Unlock()
	return c.Conn.Write(b)
}
