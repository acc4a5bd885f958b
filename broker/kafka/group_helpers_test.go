package kafka

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/group"
)

// testGroupConfig is the coordinator configuration of the group tests:
// no initial rebalance delay, short sessions allowed, few offsets
// partitions (loading 50 empty partitions is quick, but tests should
// not depend on the default).
func testGroupConfig() group.Config {
	cfg := group.DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	cfg.MinSessionTimeout = 100 * time.Millisecond
	cfg.OffsetsTopicPartitions = 5
	return cfg
}

// startGroupBroker starts an in-process broker with cfg for its groups.
func startGroupBroker(t testing.TB, cfg group.Config, opts ...brokerOpt) *testBroker {
	t.Helper()
	b := startBroker(t, opts...)
	if err := b.srv.SetGroupConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return b
}

// killableDialer dials normally until kill, which closes every
// connection it made and makes later dials fail: the client goes silent
// as if its process froze.
type killableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	killed bool
}

func (d *killableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.killed {
		return nil, net.ErrClosed
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *killableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.killed = true
	for _, c := range d.conns {
		c.Close()
	}
}

// request sends one kmsg request through a client and fails the test on
// a transport error.
func request[R kmsg.Response](t testing.TB, cl *kgo.Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}
