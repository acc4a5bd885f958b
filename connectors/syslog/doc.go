// Package syslog is weir's syslog endpoint: it receives RFC 5424 and
// RFC 3164 messages over TCP and UDP and produces one record per message
// into a topic, registered as the connector kind "syslog" (so pipelines
// declare it as `source "syslog" "name" { ... }`).
//
// Parsing (parse.go): RFC 5424 when "1 " (VERSION) follows the PRI, with
// structured data and its escapes; RFC 3164 otherwise, best effort as
// RFC 3164 asks of relays (TIMESTAMP "Mmm dd hh:mm:ss" with the year
// inferred, or RFC 3339; HOSTNAME; TAG[PID]:), parts it lacks left empty.
// A message that does not parse (no PRI, or broken RFC 5424) is never
// dropped: it is produced whole as the message with parse_error set.
// Invalid UTF-8 is replaced by U+FFFD.
//
// Framing (frame.go, RFC 6587): TCP frames by octet counting ("LEN SP
// MSG") or by LF (non-transparent), chosen per message; UDP is one
// message per datagram. Messages longer than max_message_bytes are cut
// and flagged truncated, the rest discarded without being buffered.
//
// Records (encode.go): Avro with EventSchema (SyslogEvent, registered as
// "<topic>-value") or JSON with the same field names, both from the one
// event description (connectors/internal/event); no key (sticky
// partitioning), timestamp = receive time.
//
// Delivery and backpressure (server.go): the Server is a
// connectors.PushSource; each message is pushed to the connector
// runtime, which produces it with its producer (weir's partitioner,
// acks=all, idempotent), dead-letters a message the broker refuses for
// good, and applies a pipeline's transforms. A TCP connection pushes
// each message before reading the next; when max_buffered_records or
// max_buffered_bytes messages are pushed and not yet acknowledged, Push
// blocks, the connection is not read, and the sender feels TCP
// backpressure — nothing is dropped. UDP cannot push back: a datagram
// that arrives while the buffer is full is dropped and counted
// (weir_connector_events_total{event="udp_dropped"}), and datagrams the
// kernel drops when the socket buffer overflows are counted only by the
// kernel (/proc/net/udp "drops"). Syslog has no acknowledgements, so
// messages read but not yet acknowledged when the process is killed are
// lost; at a stop the runtime produces them before it returns. The
// "brokers" setting is accepted and not used: the runtime produces to its
// own brokers. Metrics are the connector runtime's families (metrics.go
// lists what this package reports).
package syslog
