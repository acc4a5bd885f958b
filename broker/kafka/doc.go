// Package kafka is weir's Kafka wire-protocol server: a TCP listener that
// speaks the Kafka protocol to unmodified clients (kcat/librdkafka,
// franz-go, the Java client, ...), built on franz-go's kmsg for every
// request and response encoding.
//
// File map:
//
//	server.go         Config (Kafka broker defaults), Server, Start/Shutdown
//	listeners.go      named listeners (PLAINTEXT, SSL), their advertised
//	                  endpoints in the broker registration, the TLS
//	                  handshake of a new connection and its principal
//	conn.go           one connection: read loop, ordered response writer,
//	                  deferred responses (acks=all produce waits)
//	dispatch.go       API registry, request header parsing, Handler contract
//	partitions.go     the partition table: topics of the metadata, the logs
//	                  and replicas of the partitions hosted here
//	replication.go    wiring of broker/replica: producer state, groups and
//	                  transactional ids follow partition leadership
//	txn_support.go    wiring of the transaction coordinator (broker/txncoord):
//	                  __transaction_state storage, marker writer (local or
//	                  WriteTxnMarkers over the inter-broker listener), the
//	                  inter-broker client, leadership following
//	txn_hooks.go      the seams between produce/markers, the transaction
//	                  coordinator and the group coordinator (verifyTxnProduce)
//	metrics.go        every Prometheus metric the server exports
//	authz.go          the authorization hooks the handlers call
//	                  (broker/acl answers; nil Config.Authorizer allows all)
//	quotas.go         client quotas and connection limits (broker/quota
//	                  measures): throttle_time_ms, connection muting
//	                  (KIP-219), max.connections.per.ip at accept
//	sasl.go           SASL listeners: the state of a connection before it
//	                  is authenticated, bare v0 tokens, re-authentication
//	                  and session expiry (KIP-368); mechanisms in broker/sasl
//	NN_<api>.go       one file per API key, registering its version range
//	                  in init(); ApiVersions (18) advertises exactly those
//
// Adding an API: create NN_<name>.go with
//
//	func init() { register(kmsg.CreateTopics.Int16(), 0, 7, handleCreateTopics) }
//	func handleCreateTopics(s *Server, r *Request) (kmsg.Response, error) { ... }
//
// Kafka errors are error codes in the response; a Go error from a handler
// closes that connection only. See Handler for buffer ownership.
//
// Listeners: the server accepts on every Config.Listeners entry (or one
// PLAINTEXT listener on Config.Addr). The broker registers every
// advertised endpoint (metadata.Broker.Endpoints, Host:Port being the
// inter-broker listener's); Metadata, DescribeCluster and FindCoordinator
// answer with each broker's endpoint on the listener the client
// connected on, and leave out brokers that lack it (Kafka's behaviour).
// On SSL listeners the TLS handshake runs first, bounded by
// HandshakeTimeout (default 10s): plaintext bytes, an untrusted, expired
// or (ssl.client.auth=required) missing client certificate, or a client
// that stalls close that connection only (weir_kafka_tls_handshake_failures_total,
// a rate-limited warning). Each connection carries its principal
// (Request.Principal: User:ANONYMOUS or mapped from the client
// certificate, or User:<name> from SASL: sasl.go) for the authorizer.
//
// Authorization (issue 16 item 3): with Config.Authorizer set
// (authorizer.class.name), each handler asks what Kafka's KafkaApis asks,
// with the same operations, resources and error codes
// (TOPIC_/GROUP_/CLUSTER_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and
// Metadata and ListGroups leave out what the client may not describe.
// Follower fetches need CLUSTER_ACTION: put the brokers' principal in
// super.users (User:ANONYMOUS when brokers talk PLAINTEXT) or grant it
// ClusterAction, as Kafka documents. ACL requests without an authorizer
// answer SECURITY_DISABLED. TLS to a PLAINTEXT port is a
// frame size far over socket.request.max.bytes: closed at once. Fetch
// over TLS cannot use sendfile: record bytes are copied through the TLS
// writer.
//
// Connections: requests are read and decoded in order; synchronous
// handlers run on the reading goroutine, async ones (Fetch long polls) on
// their own; a writer goroutine sends responses strictly in request order,
// batching writes and flushing when idle.
package kafka
