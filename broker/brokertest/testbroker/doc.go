// Package testbroker starts a real weir broker (broker/kafka over
// broker/log and broker/metadata) in-process on 127.0.0.1:0 for tests of
// packages that talk to a broker over the Kafka protocol: connectors and
// ingest endpoints. (broker/brokertest, the multi-node cluster harness, is
// reserved for the replication work; this is the single-node minimum.)
package testbroker
