// Package partition owns how weir's own producers (the CLI, `weir bench`,
// connectors, push endpoints) choose a record's partition, so that every
// producer places records exactly as Kafka's Java client would:
//
//  1. a partition set explicitly with Set is used as given (a record whose
//     partition does not exist fails, as with kgo.ManualPartitioner);
//  2. otherwise a non-nil key (even an empty one) goes to
//     toPositive(murmur2(key)) % numPartitions, Java's DefaultPartitioner
//     formula, so the same key lands on the same partition from any client;
//  3. otherwise records stick to one partition until its batch fills, then
//     move to another (kgo's sticky partitioning, KIP-480).
//
// Every client internal/kafkaclient.New builds has it; elsewhere (tests)
// build a producer with kgo.RecordPartitioner(partition.New()) or, shorter,
// the Option helper. The explicit-partition mark lives in Record.Context, so
// a record built without Set is never pinned to partition 0 by accident.
package partition
