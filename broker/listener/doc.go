// Package listener parses and validates Kafka's listener settings for one
// broker, as Kafka's KafkaConfig and EndpointUtils do, with errors that
// name the setting:
//
//	listeners                       NAME://host:port,... (host "" = all
//	                                interfaces; port 0 picks one). Names
//	                                are upper-cased; two listeners may not
//	                                share a name, nor a port (other than 0)
//	                                unless one is on an IPv4 and the other
//	                                on an IPv6 address.
//	advertised.listeners            the host:port clients are told, per
//	                                listener (default: listeners); names
//	                                must be a subset of listeners; ports
//	                                may repeat (a load balancer); 0.0.0.0 is
//	                                refused.
//	listener.security.protocol.map  NAME:PROTOCOL,...; default maps
//	                                PLAINTEXT, SSL, SASL_PLAINTEXT and
//	                                SASL_SSL to themselves. Every listener
//	                                needs a protocol.
//	inter.broker.listener.name      the listener other brokers use; or
//	security.inter.broker.protocol  (default PLAINTEXT), not both; it must
//	                                be an advertised listener.
//	controller.listener.names       the controller (Raft) listener; only
//	                                with a controller quorum (Kafka's
//	                                combined mode), one name, in listeners,
//	                                not advertised to clients. Without
//	                                controller.listener.names set the
//	                                protocol map is not set either, they
//	                                default to PLAINTEXT as in Kafka.
//
// What weir does with them (broker/node): every broker listener is served
// by broker/kafka, SSL ones with broker/tlsconf; clients are told the
// brokers' endpoints of the listener they connected on. SASL protocols
// parse but are refused at start (issue 16 item 2), and so are a non-
// PLAINTEXT inter-broker or controller listener in a cluster (item 4).
package listener
