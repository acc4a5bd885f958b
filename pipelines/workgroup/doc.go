// Package workgroup is the worker group of `weir run`: processes started
// with the same pipeline files and the same group name share the work,
// coordinated over the Kafka group protocol only (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup), as Kafka Connect's distributed workers are with
// their own protocol type ("connect"). It therefore works the same against
// a weir cluster and Apache Kafka: the broker's group coordinator only
// sees a group of protocol type "weir-workers" whose metadata and
// assignments are opaque bytes.
//
// What the group places: the cluster-singleton components (a kind's spec
// says so: a mysql source must run on exactly one worker). Per-worker
// components run on every worker, and sinks and streams share their
// partitions through their own consumer groups as before.
//
// Protocol (one protocol, "cooperative-v1"):
//
//	JoinGroup metadata (JSON):  {"worker","pipelines","offered":{id:hash},"owned":[id]}
//	SyncGroup assignment (JSON): {"leader","run":[id],"workers":[{"worker","pipelines"}]}
//
// The leader computes the assignment (Assign, a pure function): a
// singleton stays with the worker that runs it while that worker offers
// it with the leader's settings hash; a free one goes to the least loaded
// worker offering it with the same hash; an imbalance of more than one is
// corrected by revoking from the busiest. As in Kafka's cooperative
// protocol, a singleton is never handed to a new worker in the same
// rebalance that takes it from its old one: the old worker stops it, then
// rejoins at once, and the next rebalance gives it out. Fencing does not
// rest on this alone: a singleton source runs transactional with a
// transactional id per component, so a new owner's InitProducerId bumps
// the producer epoch and a zombie's writes are refused. Every record a
// source writes in a worker group carries the header "weir.worker"
// (connectors.WorkerHeader) naming the worker that produced it, so that a
// singleton's hand-offs can be read from its topic.
//
// Membership: every member is static (group.instance.id
// "weir-worker-<worker>"), so a worker restarted after a crash takes its
// old place without a rebalance. The session timeout is short (6 s, the
// broker's group.min.session.timeout.ms default) so that a dead worker's
// singletons move within 10 s; a member that cannot heartbeat for two
// thirds of it stops its singletons on its own before the coordinator
// gives them away. Close sends LeaveGroup with the instance id (a static
// member's clean exit), so a SIGTERM hands off at once instead of after
// the session timeout.
//
// Workers whose pipeline files differ (another hash of the loaded
// configuration) are reported in every assignment and get no singleton
// whose settings differ from the leader's. A group name already used by
// a consumer group (another protocol type) is refused by the coordinator
// with INCONSISTENT_GROUP_PROTOCOL, which Run returns as an error naming
// the group. A consumer group with no member left would be taken over
// (Kafka lets an empty group change protocol type): Run first refuses a
// name under which offsets are committed (a worker group never commits
// any), naming the topics.
package workgroup
