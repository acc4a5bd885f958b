// Package elasticsearch is weir's Elasticsearch sink: it bulk-indexes
// records from topics into Elasticsearch 7.x and 8.x and OpenSearch with
// go-elasticsearch/v8's esutil.BulkIndexer, and registers the
// "elasticsearch" kind in connectors.Default.
//
// # Records to bulk actions
//
//   - Value: Confluent-framed Avro (magic byte 0; decoded with the schema
//     registry at schema_registry_url, unions unwrapped, timestamps as RFC
//     3339, decimals as strings of their exact digits, bytes as base64)
//     or JSON passed through (re-compacted only when it spans lines).
//   - Index: a template (template.go): literal text, %{[field][sub]} or
//     %{field.sub} from the document, %{+2006.01.02} for the event time in
//     UTC (Go layout; yyyy MM dd HH mm ss also work), and
//     %{[@metadata][topic]}, [partition], [key]. The event time is
//     timestamp_field of the document (RFC 3339 or epoch ms) or else the
//     record timestamp. A missing field dead-letters the record.
//   - _id: the record key (id_from = key, default), a document field
//     (id_from = field), topic+partition+offset (id_from = offset, for
//     keyless records such as log lines) or none (server-assigned; re-deliveries then
//     duplicate). With an _id, re-delivery after a restart overwrites, so
//     at-least-once delivery leaves exactly one document.
//   - A tombstone (null value) deletes _id = key; deleting a missing
//     document counts as done.
//   - data_stream = true writes with the create op and adds @timestamp
//     (event time) when the document has none.
//   - version_type = external|external_gte sends version_field (or the
//     version_header, decimal) with every index and delete: the server
//     keeps the highest version, so replays and reordering never regress a
//     document or resurrect a deleted one. A 409 version conflict means the
//     server already holds that version or a newer one: done, not an error.
//     Likewise a 409 for create with an _id means the document exists.
//   - cdc = true (cdc.go) mirrors tables captured by connectors/mysql:
//     _id from the primary-key key (Avro or JSON; composite keys joined
//     with "|"), the envelope's after image as the document, op d and
//     tombstones as deletes, version_type external from the
//     weir.cdc.version header. A missing index is created with date
//     detection off and floating-point numbers mapped as double, so that
//     dynamic mapping refuses no column value (a zero date after a date,
//     a DOUBLE beyond float range). Deleted-document versions last only
//     index.gc_deletes (60s by default): see cdc.go.
//
// # Results, retries, dead letters (indexer.go)
//
// Every bulk item's result is read. Retryable items (status 429,
// es_rejected_execution_exception, circuit_breaking_exception, 5xx) are
// sent again inside Flush after an exponential backoff with full jitter
// (retry_initial doubling to retry_max), at most max_retries times, then
// dead-lettered with the last error. A whole bulk request refused with
// 429 es_rejected_execution_exception (the server's thread pool is full:
// Elasticsearch 8 coordinates bulks on its write pool, so under write
// load it refuses whole requests where 7.x refused items) is retried the
// same way, except that after max_retries its items are kept for the next
// Flush (ErrRetriable, below), not dead-lettered. Other rejections
// (mapping conflicts, 400s) are dead-lettered at once with the server's
// error (*ItemError: status, type, reason, caused_by). When the whole
// bulk request fails because the server is unreachable or overloaded (no
// answer, HTTP 502/503/504, a 429 not from its thread pool) nothing is
// dead-lettered: Flush returns an error wrapping connectors.ErrRetriable,
// keeps the items and sends them again on the next Flush, so the runtime
// backs off and never commits past them. A request refused as such (401,
// 403, 404, 405: credentials or URL) fails Flush with ErrRefused, not
// retriable and nothing dead-lettered: the task stops without committing.
// Flush returns nil only when every record written so far is stored or
// dead-lettered: the runtime's condition for committing offsets.
//
// Bulk workers run concurrently, so two actions on the same document are
// never in flight together: a second one waits for the first (keeps
// per-document order; costs a round trip per collision, which only hot
// keys pay). A retried action that a newer action on the same document
// has superseded is dropped.
//
// # Servers
//
// go-elasticsearch v8 refuses servers that do not send
// "X-Elastic-Product: Elasticsearch" (OpenSearch, Elasticsearch before
// 7.14). client.go's transport asks such a server GET / once and adds the
// header only when it is OpenSearch or Elasticsearch 7.x; anything else is
// refused with ErrUnsupportedServer. The v8 compatibility header is never
// sent, so 7.x and OpenSearch accept the requests. Auth: basic, API key;
// TLS with a CA file, a client certificate (cert_file, key_file, an
// encrypted key's key_password: mutual TLS), server_name, or (tests only)
// without verification (internal/pemfile.Client); password, api_key and
// key_password are sensitive (never printed); gzip bodies
// with compress = true.
//
// The tests run on real Elasticsearch 7.17 and 8.15 and OpenSearch 2.19
// nodes (searchtest); compat_test.go is the matrix the 8.x and OpenSearch
// differences are checked on.
package elasticsearch
