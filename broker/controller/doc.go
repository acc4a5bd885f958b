// Package controller is weir's metadata quorum: the cluster metadata of
// broker/metadata put behind a hashicorp/raft log (bbolt storage through
// raft-boltdb/v2), run by every broker started with --controller-voters.
// A broker without voters does not use this package: its
// metadata.FileStore is a one-node quorum.
//
// Every node applies every committed entry to its own metadata.Image (the
// Raft FSM), so each broker answers Metadata from its current view and
// follows changes through metadata.Store.Watch ("brokers follow the
// replicated metadata log"). The Raft leader is the controller: it alone
// decides records.
//
// File map:
//
//	node.go       Node: Raft setup, metadata.Store over the quorum (writes go
//	              to the leader and return once applied locally), the
//	              broker's heartbeat loop, controlled shutdown
//	leader.go     the controller loop on the leader: commands, heartbeats
//	              and liveness ticks taken in batches, planned against the
//	              image, proposed as one Raft entry per batch
//	planner.go    pure election/fencing rules (no I/O): FenceBroker,
//	              UnfenceBroker, RegisterBroker, PreferredLeaders,
//	              ShuttingDownLeaders
//	commands.go   the commands brokers send (create/delete topic, create
//	              partitions, alter config, AlterPartition, create/delete
//	              ACLs, elect_leaders: Kafka's ElectLeaders, decided by
//	              metadata.BuildElectLeaders and answered per partition)
//	              and their plans
//	fsm.go        the Raft FSM: image, applied index, watchers, snapshots
//	transport.go  the controller port: one listener carrying Raft ('R') and
//	              the controller RPC ('C', net/rpc with JSON)
//	tls.go        the controller port over TLS (Config.TLS, the SSL
//	              controller listener's broker/tlsconf.Server): every
//	              connection handshakes before its protocol byte; peers
//	              are verified as ssl.client.auth says (required: a node
//	              without a certificate of the trust store cannot join),
//	              voters are dialed with this node's key store; refusals
//	              are logged per host with the certificate's subject,
//	              rate-limited. Config.Authorize then decides on the
//	              principal (node: super.users when an authorizer is on,
//	              as KRaft requires; else the trust store alone decides)
//	errors.go     sentinels, and how errors cross the RPC
//	quorum.go     the quorum as Kafka 4.x has it (KIP-853): DescribeQuorum
//	              from the leader's view of every replica (reported with
//	              heartbeats), AddVoter/RemoveVoter on Raft's membership
//	              changes (observers are Raft nonvoters; a node not in
//	              the voter list joins as one), UnregisterBroker
//	kafkaport.go  the controller port's Kafka-protocol connections (first
//	              byte 0) as a listener broker/node serves: Kafka's tools
//	              with --bootstrap-controller
//	metaprops.go  meta.properties in the Raft directory: the node's
//	              directory id, as kafka-metadata-quorum add-controller
//	              reads it
//
// Brokers: each broker heartbeats its registration (node id, advertised
// Kafka address, rack) to the leader every HeartbeatInterval. The leader
// registers new or moved brokers, unfences returning ones and fences a
// broker whose heartbeats stop for SessionTimeout; fencing elects new
// leaders from the rest of the ISR (leader epoch + 1) and removes the
// broker from every ISR but a last one. A broker's heartbeat also carries
// the state of its log directory (broker/logdir): while it cannot write
// (full, failed), its leaderships go to writable ISR members and it leaves
// the ISRs (StorageMoves), and nothing is elected to it while another
// replica can take the partition. Partition leaders shrink and
// expand their ISR with AlterPartition, checked against the leader and
// partition epochs so a deposed leader cannot change anything.
//
// Leader balance: every Config.PreferredLeaderInterval the leader gives
// each partition back to its preferred replica when that replica is
// writable and in the ISR (PreferredLeaders; broker/node sets the
// interval from Kafka's auto.leader.rebalance.enable and
// leader.imbalance.check.interval.seconds). ElectLeaders (kafka-leader-
// election) asks for preferred or unclean elections at once
// (metadata.BuildElectLeaders, one entry).
//
// Lock order: Node.leadMu is taken alone; fsm.mu is held while watchers
// run (they must not call back into the Node's write methods).
package controller
