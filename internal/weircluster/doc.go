// Package weircluster runs a weir cluster for process tests: n `weir
// broker` processes (each a voter of the KRaft quorum) on loopback with
// fixed ports, so that a broker killed with SIGKILL restarts where it
// was, on its data directory. Options add arguments (to all nodes or
// some), data directories, and a TLS-only inter-broker and controller
// quorum; AddNode adds a broker outside the voters. It is the one
// process cluster of the module's tests (broker/brokertest, eostest,
// cmd/weir).
package weircluster
