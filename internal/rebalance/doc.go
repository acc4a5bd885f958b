// Package rebalance plans partition reassignments that even out a
// cluster (what Kafka leaves to Cruise Control): given every partition's
// replicas and size and the brokers to use, Plan returns new replica
// lists, moving as little as it can:
//
//  1. replicas on brokers not in the set (a broker being drained) move to
//     the brokers of the set with the fewest replicas, then bytes;
//  2. replica counts are evened (at most one apart), each move taking
//     from the broker with the most replicas the partition whose size
//     best evens the two brokers' bytes;
//  3. bytes are evened by swapping replicas between the heaviest and the
//     lightest broker while a swap narrows the gap;
//  4. preferred leaders (the first replica) are evened (at most one
//     apart) by moving a partition's replica on a broker with few
//     leaderships to the front.
//
// The plan is in Kafka's reassignment JSON (kafka-reassign-partitions'
// --reassignment-json-file), so either weir or Kafka's tool can run it.
// Pure functions: no I/O (cmd/weir's cluster rebalance reads the cluster
// and executes the plan).
package rebalance
