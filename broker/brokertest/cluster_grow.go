package brokertest

import (
	"net"
	"time"
)

// AddBroker starts one more broker (the next node id) that is not in the
// cluster's voter list: it joins the controller quorum as an observer
// (follows the metadata without voting) and registers as a broker. It
// returns once the broker serves, caught up with the quorum. Make it a
// voter with AddVoter (controller.Node) or Kafka's kafka-metadata-quorum
// add-controller. TLS clusters are not supported.
func (c *Cluster) AddBroker() *Broker {
	c.t.Helper()
	if c.o.tls {
		c.t.Fatal("brokertest: AddBroker on a TLS cluster")
	}
	var l [3]net.Listener
	for i := 0; i < 2; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			c.t.Fatal(err)
		}
		l[i] = ln
	}
	id := int32(len(c.brokers) + 1)
	b := &Broker{ID: id, c: c, dataDir: c.t.TempDir(), kafkaAddr: l[1].Addr().String(), ctrlAddr: l[0].Addr().String()}
	b.started = true // the quorum runs: wait to catch up before serving
	c.net.register(b.ctrlAddr, id, Controller)
	c.net.register(b.kafkaAddr, id, Kafka)
	c.brokers = append(c.brokers, b)
	if err := b.startWithin(l, 30*time.Second); err != nil {
		c.t.Fatalf("starting broker %d: %v", id, err)
	}
	c.WaitFor(30*time.Second, func() error { return c.allLive() })
	return b
}
