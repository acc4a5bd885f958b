// Package serversource adapts an ingest endpoint that runs its own
// server and producer (the HTTP and syslog endpoints) to
// connectors.Source: Open builds and starts the server with the
// connector's logger and metrics, Close stops it, and Poll returns no
// records, because the server hands what it receives to its own producer
// rather than to the runtime.
package serversource
