// Package brokertest runs weir clusters in-process for tests:
//
//	c := brokertest.NewCluster(t, brokertest.Brokers(3))
//	c.CreateTopic("orders", 6, 3, map[string]string{"min.insync.replicas": "2"})
//	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
//	leader, _ := c.LeaderOf("orders", 0)
//	c.Kill(leader)                        // abrupt stop (links cut first)
//	c.WaitFor(10*time.Second, func() error { ... })  // poll, never sleep
//	c.Restart(leader)                     // same data directory and ports
//	c.Network().Drop(2, 1, brokertest.Kafka)  // black-hole 2's fetches from 1
//
// Every broker is a real kafka.Server with a real data directory, a voter
// of the Raft controller quorum (broker/controller) on 127.0.0.1, and a
// replica manager. All broker-to-broker connections (Raft, controller
// RPCs, follower fetches) are dialed through the cluster's Network, which
// cuts, black-holes or delays any directed link; clients connect directly.
// Timeouts are short (session 1.5s, replica lag 1s) so failures resolve in
// test time. Under go test -short, NewCluster skips its test: clusters
// are not unit tests, and the full suite (./scripts/test) runs them.
//
// Disk faults: LogDir puts a broker's partition logs on a small real file
// system (broker/brokertest/smallfs) to fill it; Broker.Storage reads its
// log directory's state (broker/logdir) and ReportStorageError hands it
// an error a test file system cannot produce (EIO). LogTee sends the
// brokers' log lines to a zap core, so tests count warnings.
package brokertest
