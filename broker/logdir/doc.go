// Package logdir decides the state of each of the broker's log
// directories (Kafka's log.dirs) from the errors its writers and readers
// hit, and tells the broker's controller node (which reports it with its
// heartbeats, see broker/controller).
//
// Several directories (Dirs, one Monitor each). A partition lives in one
// directory: the one holding it at startup, else, when created, the
// writable one holding the fewest partitions (log.Manager, as Kafka's
// LogManager.nextLogDirs). An error is reported for the directory of the
// partition it happened in. What the controller learns, and the design
// (simplest that is correct; Kafka's KIP-858 gives every partition
// directory ids in the metadata and reports offline directory ids in
// BrokerHeartbeat): each heartbeat carries the broker-wide state
// (metadata.Broker.Storage: writable while any directory takes writes,
// else full while any is full, else failed) and, for each directory that
// cannot write, its path, state and the partitions it holds now
// (metadata.Broker.Dirs, recorded with the registration when it changes).
// The state of a broker's replica is its directory's state if listed
// there, else the broker-wide one (metadata.Image.ReplicaStorage), and
// every rule below is per replica: a failed or full directory moves and
// takes offline only its own partitions, the other directories' keep
// their leaders and ISRs. Placement lives on the broker alone, so the
// metadata needs no directory assignments; the partitions of a failed
// directory are known because the broker's log manager opened them (a
// directory that cannot even be listed at startup stops the broker, as
// it does with one directory). A single directory is the same as before:
// the broker-wide state and its one directory agree.
//
// Disk-full and I/O-error behaviour, request by request (Kafka's error
// names; "full" is ENOSPC or EDQUOT, "failed" EIO, EROFS or a partition
// log taken offline, log.ErrOffline: a failed write that could not be cut
// back, or a failed fsync, whose page-cache data must be taken as lost):
//
//	Produce (leader append)        KAFKA_STORAGE_ERROR for the partition; the
//	                               log is left as before the append. Once the
//	                               controller moved leadership:
//	                               NOT_LEADER_OR_FOLLOWER, clients refresh
//	                               metadata and write to the new leader.
//	Fetch, ListOffsets (read)      EIO: KAFKA_STORAGE_ERROR, directory failed.
//	                               A full disk reads normally.
//	Follower fetch append          not acknowledged (the follower's fetch
//	                               offset stays), the follower backs off and
//	                               retries; the directory is full or failed.
//	OffsetCommit, JoinGroup,       the __consumer_offsets append fails like a
//	SyncGroup, OffsetDelete        produce; as in Kafka (GroupMetadataManager)
//	                               KAFKA_STORAGE_ERROR becomes NOT_COORDINATOR:
//	                               the commit is not applied, the client looks
//	                               up the coordinator again, which is the new
//	                               leader of the offsets partition once it
//	                               moved.
//	CreateTopics, CreatePartitions succeed (metadata lives in the controller
//	                               quorum); a broker that cannot write is
//	                               not made leader nor put in the ISR of the
//	                               new partitions while another replica can
//	                               write; if none can, a full broker leads
//	                               and produce gets KAFKA_STORAGE_ERROR.
//	Producer state snapshots       a failed snapshot is a warning: the state
//	                               is rebuilt from the log when loaded.
//
// What happens to the cluster: at the first full or failed write the
// broker marks the directory and sends a heartbeat at once; the controller
// (controller.StorageMoves) gives every partition of that directory the
// broker leads to the first writable in-sync replica (leader epoch + 1)
// and takes the broker out of every such ISR it is not the last member
// of, so acks=all produces
// neither fail nor wait for replica.lag.time.max.ms. A partition no other
// replica can serve stays with a full broker (its records stay readable,
// produce gets KAFKA_STORAGE_ERROR) and goes offline with a failed one.
// Nothing is elected to, or added to the ISR of, a broker that cannot
// write; leaders check this before proposing (no refused proposals).
//
// When writes resume: a full directory is probed every second by writing
// and syncing 1 MiB (ProbeFile); when that succeeds the directory is
// writable again, the broker reports it, follows its partitions, catches
// up and is added back to each ISR by its leader; preferred leader
// election gives it its leaderships back. A failed directory stays failed
// until the broker restarts and recovers its logs: after EIO or a failed
// fsync, data in the page cache may not be on disk, so nothing in the
// directory is trusted until recovery has checked it.
//
// Kafka, in the same cases: any IOException, ENOSPC included, marks the
// log directory offline (LogDirFailureChannel.maybeAddOfflineLogDir);
// ReplicaManager.handleLogDirFailure stops its fetchers and its partitions
// and the broker reports the directory with its heartbeat (KRaft:
// BrokerHeartbeat offline log dirs); the controller moves leadership and
// shrinks the ISRs (ReplicationControlManager.handleDirectoriesOffline);
// clients get KAFKA_STORAGE_ERROR or NOT_LEADER_OR_FOLLOWER and refresh
// metadata. The directory stays offline until the broker restarts, so a
// disk that filled up for a minute costs a restart and a full re-sync,
// and a broker whose only directory failed shuts down. weir does better
// for a full disk: the broker stays up, keeps serving reads of what it
// alone holds, and rejoins by itself once space is freed.
//
// The metadata (controller Raft log) is not covered here: keep it off a
// disk that may fill up (weir broker --log-dir puts the partition logs
// elsewhere; Kafka's metadata.log.dir).
//
// DescribeLogDirs (broker/kafka) reports every directory with its
// partitions; a failed one answers KAFKA_STORAGE_ERROR.
package logdir
