// Package quota is Kafka's client quotas and connection limits for the
// broker: what is measured, against which quota, and for how long a
// client over it is throttled. broker/kafka calls it from thin hooks (its
// quotas.go); the quotas themselves live in the replicated metadata
// (metadata.ClientQuota records, written by AlterClientQuotas).
//
// Files:
//
//	rate.go      Rate: Kafka's Rate over a SampledStat (quota.window.num
//	             windows of quota.window.size.seconds; the rate spans at
//	             least num-1 full windows) and QuotaUtils.throttleTime
//	entity.go    quota names (producer_byte_rate, consumer_byte_rate,
//	             request_percentage, controller_mutation_rate), entities
//	             (user, client-id, both, each a name or <default>),
//	             validation with Kafka's messages, Resolve: Kafka's order
//	             of precedence
//	manager.go   Manager: per-client rates of one quota, Record/Unrecord,
//	             the throttle time, MaxValueInWindow (a Fetch's byte cap)
//	describe.go  DescribeClientQuotas filters (Kafka's matching rules)
//	conns.go     ConnLimiter: max.connections.per.ip (+ overrides) and
//	             max.connections, as Kafka's ConnectionQuotas
//
// Precedence (KIP-55; ClientQuotaManager): for a request of user U
// (the principal's name: User:ANONYMOUS is the user ANONYMOUS) and client
// id C, the first entity that sets the quota applies:
//
//	user U + client-id C, user U + <default> client-id, user U,
//	<default> user + client-id C, <default> user + <default> client-id,
//	<default> user, client-id C, <default> client-id
//
// The rate is kept per matched entity with the request's own names: a
// <default> client-id quota gives every client id its own rate; a user
// quota is shared by all the user's client ids. An empty client id
// matches no entity with a client-id part.
//
// What is measured (as Kafka): producer_byte_rate the size of Produce
// requests (bytes on the wire: compressed batches count compressed);
// consumer_byte_rate the record bytes of Fetch responses (consumers only;
// follower fetches are never throttled); request_percentage the time
// handlers take, as a percentage of one thread (100 = one thread all the
// time; synchronous handlers: a Fetch's long-poll wait is not handler
// time, its bytes count in consumer_byte_rate), throttles bounded by one
// window. A client over a quota
// is throttled by (rate - quota) / quota × window: its response carries
// throttle_time_ms and the broker does not read its connection for that
// long (KIP-219; every version weir serves is answered at once, as Kafka
// answers the KIP-219 versions Kafka 4.x clients use). A throttled Fetch is answered empty and its bytes not
// counted; a Fetch's max bytes is capped at quota × (num-1) × window
// size. A record batch larger than that is still returned whole (KIP-74)
// and so throttled every time, as in Kafka: keep batches well under it.
//
// controller_mutation_rate is accepted and stored (kafka-configs sets it)
// but not enforced: weir applies no partition-mutation throttling. ip
// entities (connection_creation_rate) are refused with INVALID_REQUEST.
//
// Connections (ConnectionQuotas): a connection from an address that has
// max.connections.per.ip open (max.connections.per.ip.overrides, hosts
// resolved at startup, per address) is closed at once and logged, rate
// limited; at max.connections the listener waits for a connection to
// close before serving a new one, the inter-broker listener excepted.
// Kafka's per-listener limits (listener.name.X.max.connections) and
// max.connection.creation.rate are not implemented.
package quota
