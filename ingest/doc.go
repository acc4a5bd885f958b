// Package ingest holds the load generators behind weir bench (bench/).
// The push endpoints (HTTP, syslog) are connector kinds under
// connectors/, and the Kafka client options are internal/kafkaclient's.
package ingest
