// Package httpin is weir's HTTP ingest endpoint: applications POST log
// events and get an answer only after the broker stored them. It is
// registered as the connector kind "http" (pipelines declare it as
// `source "http" "name" { ... }`).
//
//	POST /topics/{topic}   events to topic (the configured topic, or any
//	                       listed in "topics"; ["*"] opens every topic)
//	POST {path}            events to the configured topic (default /ingest)
//	GET  /healthz          200 while the broker answers a ping, else 503
//
// Bodies (body.go): Content-Type application/x-ndjson (one JSON object per
// line) or application/json (an array of objects, or one object),
// optionally Content-Encoding: gzip. Every event becomes one record whose
// value is the event's JSON text as sent (a schemaless JSON topic, which
// sinks pass through; events are not rewritten into Avro, so nothing of
// an arbitrary JSON document is lost or reshaped), whose key is the
// key_field's value if configured, and whose timestamp is the receive
// time.
//
// Answers (JSON bodies): 200 {"accepted":N} once the broker acknowledged
// every event of the request (acks=all, idempotent producer). A request
// is checked whole before anything is produced: 400 names the NDJSON
// line or the JSON byte offset and the parse error; 413 for a body or
// event over its limit (the body limit applies after decompression too);
// 415 for other media types; 401 without the bearer token or basic-auth
// credentials when configured. Backpressure: events admitted but not
// acknowledged are bounded (max_buffered_records/bytes); a request that
// does not fit gets 429 — or 503 when connecting to the broker fails —
// with Retry-After, and none of its events is produced, so a retry
// duplicates nothing. A request whose events the broker does not
// acknowledge within ack_timeout gets 503: some of its events may be
// stored, and a retry may duplicate them (at least once, never lost).
//
// Delivery goes through the endpoint's own franz-go producer built with
// ingest/client (weir's partitioner), not the runtime's Poll path; see
// Source in spec.go for why. Metrics are the connector runtime's families
// (metrics.go lists what this package reports).
package httpin
