// Package deadletter owns the layout of weir's dead-letter records: Kafka
// Connect's header names (so tools written for Connect's dead-letter queues
// read weir's), weir's own additions, and the default topic name. The
// connector runtime (source and sink tasks) and the streams layer both
// write dead letters through it, so neither imports the other for it.
package deadletter
