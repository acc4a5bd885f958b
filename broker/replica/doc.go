// Package replica is weir's partition replication: the leader side (each
// follower's log end offset, the ISR, the high watermark, acks=all
// waiting) and the follower side (fetching from the leader, truncating by
// leader epoch).
//
// File map:
//
//	state.go      LeaderState: the ISR/HW state machine, no I/O and no
//	              clock (tests: testdata/leader_*.txt scripts)
//	partition.go  Partition: one hosted partition's role (leader, follower,
//	              none), leader-only appends, acks=all waits, follower
//	              fetches at the leader
//	manager.go    Manager: applies leadership from the metadata (leader and
//	              follower transitions, ISR changes), ISR lag ticks, sends
//	              ISR proposals to the controller (AlterPartition)
//	fetcher.go    one fetcher per leader broker: OffsetForLeaderEpoch
//	              truncation, then Fetch with this broker's replica id,
//	              appending the leader's batches as they are
//	throttle.go   replication throttles (Kafka's ReplicationQuotaManager:
//	              leader/follower.replication.throttled.rate against the
//	              replicas the topics' *.replication.throttled.replicas
//	              list; out-of-sync replicas only)
//	client.go     a minimal one-request-at-a-time Kafka client (kmsg);
//	              over TLS (Config.TLS: the inter-broker listener's
//	              broker/tlsconf.Server) the fetcher dials the leader's
//	              inter-broker listener with this broker's key store as
//	              its client certificate; a refused handshake is a
//	              rate-limited warning
//
// Replication, as the seeds describe Kafka's:
//
//   - every partition has a leader and followers; followers fetch from the
//     leader with their log end offset as the fetch offset;
//   - the leader keeps the ISR: followers that were caught up within
//     replica.lag.time.max.ms; it asks the controller to shrink or expand
//     it, with its leader and partition epochs so a deposed leader cannot;
//     it proposes adding only brokers its metadata shows live and
//     writable (Kafka's isReplicaIsrEligible, KIP-841): a fenced broker,
//     or one whose disk is full, that still fetches stays out instead of
//     being proposed, and refused, at every fetch;
//   - the high watermark is the minimum log end offset over the ISR;
//     consumers read only below it; acks=all is answered once it passes
//     the batch, and refused up front when the ISR is smaller than
//     min.insync.replicas;
//   - a new leader takes an epoch (log.AssignEpoch); a follower that
//     starts following asks the leader where its own latest epoch ends
//     (OffsetForLeaderEpoch) and truncates exactly the divergent tail
//     (KIP-101, with KIP-279's repeated requests), rather than to its high
//     watermark, so no committed record is lost and no divergent record
//     survives.
//
// Errors of a follower's log writes go to Config.OnStorageError, so a
// full or failing disk takes the broker out of the ISRs at once instead
// of after replica.lag.time.max.ms (broker/logdir has the whole story).
//
// Warnings that recur under a fault (a refused ISR change, a follower
// append failing on a full disk) go through broker/internal/repeatlog:
// once per partition and state, then with counts every 10s.
//
// Lock order: Partition.leadMu -> Partition.mu -> log locks; the
// fetcher's fetchState.appendMu is taken without Partition.mu held.
// Leadership callbacks (Config.OnLeader/OnFollower) run with leadMu held:
// they must not wait for appends. Config.OnReplicaAppend runs on the
// fetcher's goroutine under fetchState.appendMu after each successful
// follower append (the broker applies the batches to the follower's
// producer state, broker/txn); Config.OnTruncate after a truncation or
// reset. Each follower fetch also passes the leader's last stable offset
// to the log (log.SetFirstUnstableOffset), which bounds compaction.
package replica
