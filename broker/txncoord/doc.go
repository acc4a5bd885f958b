// Package txncoord is weir's transaction coordinator (KIP-98, as Kafka's
// TransactionCoordinator / TransactionStateManager / TransactionMetadata /
// TransactionMarkerChannelManager): InitProducerId for a transactional id,
// AddPartitionsToTxn (and its verifyOnly form), AddOffsetsToTxn (through
// AddPartitions with the group's __consumer_offsets partition), EndTxn,
// DescribeTransactions and ListTransactions, the abort of transactions
// open past their timeout and the expiry of idle transactional ids. It is
// built as broker/group is.
//
// It owns:
//
//	machine.go   Machine: every transactional id's state (producer id,
//	             epoch, state, partitions, timeout, timestamps), driven
//	             by requests and an injected clock, with no I/O. It
//	             returns what to persist (Writes) and which markers to
//	             write (Markers); tests drive it deterministically.
//	admin.go     DescribeTransactions / ListTransactions answers.
//	records.go   the __transaction_state records: Kafka's layout (kmsg
//	             TxnMetadataKey v0 / TxnMetadataValue v0), partitionFor.
//	config.go    Kafka's settings (transaction.max.timeout.ms,
//	             transactional.id.expiration.ms, the two cleanup
//	             intervals, transaction.state.log.*).
//	coordinator.go Coordinator: the Machine behind a mutex, a timer
//	             goroutine, one writer goroutine per state partition, one
//	             marker sender per ending transaction (retrying until every
//	             marker is written, then Complete*), partition loading,
//	             over the small Storage and MarkerWriter interfaces the
//	             Kafka server implements.
//
// States and transitions (Kafka's names; a transition is applied only
// once its record is written, and while a write is in flight the id
// answers CONCURRENT_TRANSACTIONS):
//
//	Empty ──AddPartitions──▶ Ongoing ──EndTxn──▶ PrepareCommit ──markers──▶ CompleteCommit
//	  ▲                        │   └──EndTxn(abort), timeout, fence──▶ PrepareAbort ──markers──▶ CompleteAbort
//	  └──InitProducerId (epoch+1) from Empty / Complete*; from Ongoing it
//	     first fences (epoch+1 in memory) and aborts, answering
//	     CONCURRENT_TRANSACTIONS; the retry bumps again.
//
// An epoch at 32766 or more is exhausted: the next InitProducerId gets a
// new producer id with epoch 0. KIP-360 (a producer giving its id and
// epoch) is honoured as Kafka does: the current or the just-bumped epoch
// get a bump (or the same answer again), older ones PRODUCER_FENCED.
//
// Transactions version: weir implements transactions version 1 (Kafka
// 3.x/4.x clients without KIP-890 part 2): it does not finalize the
// transaction.version feature, EndTxn is served up to v4 and
// AddPartitionsToTxn's client form up to v3, so clients add partitions
// explicitly and keep their epoch across transactions. The KIP-890 part 1
// defence (a partition leader verifying a transactional produce with
// AddPartitionsToTxn verifyOnly) is implemented.
//
// State lives in the compacted topic __transaction_state, partition
// abs(javaHashCode(transactionalID)) % transaction.state.log.num.partitions;
// the coordinator of an id is the leader of that partition, and its
// coordinator epoch (in every marker) is the partition's leader epoch.
// Loading a partition replays its records; transactions found in
// PrepareCommit/PrepareAbort get their markers again.
//
// Lock order: Coordinator.mu is the only lock around the Machine; reply
// callbacks run under it and must not block (they send to buffered
// channels). The MarkerWriter is called without it.
package txncoord
