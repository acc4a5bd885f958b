// Package ingest is weir's producer front: partitioners, batching, and the
// push endpoints (HTTP, syslog, stdin) that turn input into records.
package ingest
