// Package node assembles one weir broker process from its parts: the
// cluster metadata (a file in the data directory for a single node, or a
// voter of the Raft controller quorum), the partition logs (in the data
// directory or Config.LogDir) with the monitor of their directory
// (broker/logdir, whose state goes out with the heartbeats), the Kafka
// listener with its producer-id store, the admin HTTP listener (/metrics,
// /healthz, /readyz) and the schema registry.
//
// `weir broker`, the broker `weir run` embeds, and the in-process test
// broker (broker/brokertest/testbroker) all start through Start, so they
// are the same server wired the same way; only the addresses and which
// listeners are on differ. Start returns once every listener is bound (a
// bad address fails it); Shutdown stops the parts in reverse order, with a
// controlled shutdown (leaderships handed over) first in a cluster.
package node
