package brokertest

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Network carries every broker-to-broker connection of a Cluster (Raft,
// controller RPCs, follower fetches) and applies the faults a test sets
// per directed link (from the dialing broker to the dialed one):
//
//	Cut    existing connections are closed, new dials fail
//	Drop   bytes written are discarded and reads block (a black hole);
//	       peers notice only by their timeouts
//	Delay  every write waits d first
//
// Each takes the kinds of traffic it applies to (default: all): Kafka
// (follower fetches to the other broker's Kafka listener) and Controller
// (Raft and controller RPCs). Client connections (the test's Kafka
// clients) do not go through the Network.
type Network struct {
	mu    sync.Mutex
	addrs map[string]addrInfo
	links map[link]*policy
	conns map[*faultConn]struct{}
}

// Kind is a kind of broker-to-broker traffic.
type Kind int

// The kinds of traffic.
const (
	Kafka      Kind = 1 // follower fetches (the Kafka listener)
	Controller Kind = 2 // Raft and controller RPCs (the controller listener)
)

type addrInfo struct {
	id   int32
	kind Kind
}

type link struct {
	from, to int32
	kind     Kind
}

func kindsOf(kinds []Kind) []Kind {
	if len(kinds) == 0 {
		return []Kind{Kafka, Controller}
	}
	return kinds
}

type policy struct {
	cut, drop bool
	delay     time.Duration
	changed   chan struct{} // closed when the policy of this link changes
}

// ErrCut is returned by dials and I/O on a cut link.
var ErrCut = errors.New("brokertest: link cut")

func newNetwork() *Network {
	return &Network{addrs: map[string]addrInfo{}, links: map[link]*policy{}, conns: map[*faultConn]struct{}{}}
}

func (n *Network) register(addr string, id int32, kind Kind) {
	n.mu.Lock()
	n.addrs[addr] = addrInfo{id, kind}
	n.mu.Unlock()
}

func (n *Network) policyLocked(l link) *policy {
	p := n.links[l]
	if p == nil {
		p = &policy{changed: make(chan struct{})}
		n.links[l] = p
	}
	return p
}

// set changes the policy of the links from -> to of the given kinds and
// wakes (or closes) their connections.
func (n *Network) set(from, to int32, kinds []Kind, fn func(p *policy)) {
	var toClose []*faultConn
	n.mu.Lock()
	for _, k := range kindsOf(kinds) {
		l := link{from, to, k}
		p := n.policyLocked(l)
		fn(p)
		close(p.changed)
		p.changed = make(chan struct{})
		if p.cut {
			for c := range n.conns {
				if c.l == l {
					toClose = append(toClose, c)
				}
			}
		}
	}
	n.mu.Unlock()
	for _, c := range toClose {
		c.Close()
	}
}

// Cut cuts the links from -> to (connections broker from opens to broker
// to) of the given kinds (default all).
func (n *Network) Cut(from, to int32, kinds ...Kind) {
	n.set(from, to, kinds, func(p *policy) { p.cut = true })
}

// Drop black-holes the links from -> to of the given kinds.
func (n *Network) Drop(from, to int32, kinds ...Kind) {
	n.set(from, to, kinds, func(p *policy) { p.drop = true })
}

// Delay delays every write on the links from -> to of the given kinds by d.
func (n *Network) Delay(from, to int32, d time.Duration, kinds ...Kind) {
	n.set(from, to, kinds, func(p *policy) { p.delay = d })
}

// Heal clears every fault of the links from -> to of the given kinds.
func (n *Network) Heal(from, to int32, kinds ...Kind) {
	n.set(from, to, kinds, func(p *policy) { p.cut, p.drop, p.delay = false, false, 0 })
}

// dialer returns the DialFunc of broker from.
func (n *Network) dialer(from int32) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		n.mu.Lock()
		info, known := n.addrs[addr]
		l := link{from, info.id, info.kind}
		var cut bool
		if known {
			cut = n.policyLocked(l).cut
		}
		n.mu.Unlock()
		if cut {
			return nil, ErrCut
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil || !known {
			return c, err
		}
		fc := &faultConn{Conn: c, n: n, l: l, done: make(chan struct{})}
		n.mu.Lock()
		n.conns[fc] = struct{}{}
		n.mu.Unlock()
		return fc, nil
	}
}

// faultConn applies its link's policy on every read and write.
type faultConn struct {
	net.Conn
	n         *Network
	l         link
	done      chan struct{}
	closeOnce sync.Once
}

func (c *faultConn) state() (cut, drop bool, delay time.Duration, changed chan struct{}) {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	p := c.n.policyLocked(c.l)
	return p.cut, p.drop, p.delay, p.changed
}

func (c *faultConn) Write(b []byte) (int, error) {
	cut, drop, delay, _ := c.state()
	switch {
	case cut:
		c.Close()
		return 0, ErrCut
	case drop:
		return len(b), nil
	case delay > 0:
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.done:
			return 0, net.ErrClosed
		}
	}
	return c.Conn.Write(b)
}

// Read blocks while the link drops traffic, and discards what arrives
// while it does (also bytes a read already in progress receives after the
// drop began): after a heal the stream may be garbage, as after a real
// black hole, and the peer's protocol notices.
func (c *faultConn) Read(b []byte) (int, error) {
	for {
		cut, drop, _, changed := c.state()
		if cut {
			c.Close()
			return 0, ErrCut
		}
		if drop {
			select {
			case <-changed:
			case <-c.done:
				return 0, net.ErrClosed
			}
			continue
		}
		n, err := c.Conn.Read(b)
		if cut, drop, _, _ := c.state(); (cut || drop) && n > 0 {
			continue // arrived into the black hole
		}
		return n, err
	}
}

func (c *faultConn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	c.n.mu.Lock()
	delete(c.n.conns, c)
	c.n.mu.Unlock()
	return c.Conn.Close()
}
