// Package connectors is weir's Connect-style runtime: Source and Sink
// interfaces, tasks, offset storage, retries and dead-letter topics. Each
// technology (file tail, MySQL binlog, Elasticsearch) has a folder of its own.
package connectors
