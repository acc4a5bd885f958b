// Package weircluster runs a weir cluster for process tests: n `weir
// broker` processes (each a voter of the KRaft quorum) on loopback with
// fixed ports, so that a broker killed with SIGKILL restarts where it
// was, on its data directory. It is importable by any test of the module
// (broker/brokertest's and eostest's process clusters are older copies of
// the same idea).
package weircluster
