package http

import nethttp "net/http"

// The HTTP endpoint's telemetry, declared in one place. It reports
// through the connector runtime's metric families (connectors/metrics.go,
// label connector="<name>"), so dashboards treat it like any source:
//
//	weir_connector_records_in_total     events of admitted requests, produced by the runtime
//	weir_connector_bytes_in_total       key+value bytes of those events
//	weir_connector_records_out_total    events acknowledged by the broker
//	weir_connector_bytes_out_total      key+value bytes of those
//	weir_connector_lag_records          events produced and not yet acknowledged
//	weir_connector_paused               (not used: a request that does not fit is refused, not held)
//	weir_connector_errors_total{stage}  produce (an event the broker refused; the runtime counts it)
//	weir_connector_dead_letters_total   events the broker refused, stored in the dead-letter topic
//	weir_connector_events_total{event}  rejected requests, by the names below
//
// Log events (zap): "http ingest listening" (address, topic, path),
// "events not acknowledged by the broker" (topic, failed, dead_lettered,
// error).
const (
	EventUnauthorized = "http_unauthorized"  // 401
	EventMalformed    = "http_malformed"     // 400: bad body, bad topic name, bad gzip
	EventForbidden    = "http_topic_refused" // 403: topic not open to the endpoint
	EventTooLarge     = "http_too_large"     // 413: body or event over the limit
	EventMediaType    = "http_media_type"    // 415: Content-Type or Content-Encoding not supported
	EventOverload     = "http_overload"      // 429: admission budget full
	EventUnavailable  = "http_unavailable"   // 503: broker unreachable or events not acknowledged
)

func rejectEvent(code int) string {
	switch code {
	case nethttp.StatusUnauthorized:
		return EventUnauthorized
	case nethttp.StatusBadRequest:
		return EventMalformed
	case nethttp.StatusForbidden:
		return EventForbidden
	case nethttp.StatusRequestEntityTooLarge:
		return EventTooLarge
	case nethttp.StatusUnsupportedMediaType:
		return EventMediaType
	case nethttp.StatusTooManyRequests:
		return EventOverload
	case nethttp.StatusServiceUnavailable:
		return EventUnavailable
	}
	return ""
}
