// Package http is weir's HTTP ingest endpoint: applications POST log
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
// Delivery: the Server is a connectors.PushSource. Each request's events
// are one batch pushed to the connector runtime (TryPush: a request that
// does not fit the max_buffered_records/bytes bound is refused whole),
// which produces them with its producer (weir's partitioner, acks=all,
// idempotent), dead-letters events the broker refuses for good, and
// applies a pipeline's transforms (an event a transform drops counts as
// accepted); the request is answered from the batch's fate. An event the
// broker refused is in the connector's dead-letter topic, and the request
// gets the status for the broker's error (413, 400 or 503). Events not
// acknowledged within ack_timeout stay with the runtime until the broker
// takes them (they count against the bound meanwhile). At shutdown the
// endpoint stops accepting requests and the runtime keeps producing until
// the requests in flight are answered. The "brokers" setting is accepted
// and not used: the runtime produces to its own brokers. Metrics are the
// connector runtime's families (metrics.go lists what this package
// reports).
package http
