package syslog

// The syslog endpoint's telemetry, declared in one place. It reports
// through the connector runtime's metric families (connectors/metrics.go,
// label connector="<name>"), so dashboards treat it like any source:
//
//	weir_connector_records_in_total          messages read from TCP or UDP, produced by the runtime
//	weir_connector_bytes_in_total            encoded value bytes of those messages
//	weir_connector_records_out_total         messages acknowledged by the broker
//	weir_connector_bytes_out_total           encoded value bytes of those
//	weir_connector_lag_records               messages produced, not yet acknowledged
//	weir_connector_paused                    1 while a TCP connection is not read because the buffer is full
//	weir_connector_errors_total{stage}       produce (the broker refused a message; the runtime logs it), accept, read, udp_read
//	weir_connector_dead_letters_total        messages the broker refused, stored in the dead-letter topic
//	weir_connector_events_total{event}       see the event names below
//
// Log events (zap): "syslog listening" (addresses), "syslog connection
// closed with an error" (peer, error), the runtime's "broker refused a
// record; sending it to the dead-letter topic", "dropping UDP messages:
// buffer full" (at most once a second, with the count).
const (
	// EventParseError counts messages kept unparsed (parse_error set).
	EventParseError = "parse_error"
	// EventTruncated counts messages cut to max_message_bytes.
	EventTruncated = "message_truncated"
	// EventUDPDropped counts UDP datagrams dropped because the producer
	// buffer was full (UDP cannot push back on senders).
	EventUDPDropped = "udp_dropped"
	// EventConnOpened counts accepted TCP connections.
	EventConnOpened = "tcp_connection_opened"
)

// Error stages.
const (
	stageAccept  = "accept"
	stageRead    = "read"
	stageUDPRead = "udp_read"
)
