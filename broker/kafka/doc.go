// Package kafka is weir's Kafka wire-protocol server: a TCP listener that
// speaks the Kafka protocol to unmodified clients (kcat/librdkafka,
// franz-go, the Java client, ...), built on franz-go's kmsg for every
// request and response encoding.
//
// File map:
//
//	server.go         Config (Kafka broker defaults), Server, Start/Shutdown
//	conn.go           one connection: read loop, ordered response writer,
//	                  deferred responses (acks=all produce waits)
//	dispatch.go       API registry, request header parsing, Handler contract
//	partitions.go     the partition table: topics of the metadata, the logs
//	                  and replicas of the partitions hosted here
//	replication.go    wiring of broker/replica: producer state and groups
//	                  follow partition leadership
//	metrics.go        every Prometheus metric the server exports
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
// Connections: requests are read and decoded in order; synchronous
// handlers run on the reading goroutine, async ones (Fetch long polls) on
// their own; a writer goroutine sends responses strictly in request order,
// batching writes and flushing when idle.
package kafka
