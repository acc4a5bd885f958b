package deadletter

import (
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Topic is the default dead-letter topic of the pipeline component name
// (a source, a sink, a transform or a stream).
func Topic(name string) string { return "weir-dlq-" + name }

// Header names: Kafka Connect's (ErrantRecordReporter / DeadLetterQueueReporter).
const (
	HeaderTopic     = "__connect.errors.topic"
	HeaderPartition = "__connect.errors.partition"
	HeaderOffset    = "__connect.errors.offset"
	HeaderConnector = "__connect.errors.connector.name"
	HeaderMessage   = "__connect.errors.exception.message"
	HeaderClass     = "__connect.errors.exception.class.name"
	// HeaderSourcePartition and HeaderSourcePosition name the source
	// position of a record a source could not write.
	HeaderSourcePartition = "__weir.errors.source.partition"
	HeaderSourcePosition  = "__weir.errors.source.position"
	// HeaderTruncated is "true" when the dead letter holds only the
	// first bytes of a value too large to be written whole.
	HeaderTruncated = "__weir.errors.truncated"
)

// Record builds the dead-letter copy of a record that failed with err in
// the component named connector: the record's key, value, headers and
// timestamp, then the connector, error message and error class headers,
// then extra (for example Consumed's or the source position's).
func Record(topic, connector string, key, value []byte, headers []kgo.RecordHeader, ts time.Time, err error, extra ...kgo.RecordHeader) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, len(headers)+len(extra)+3)
	hs = append(hs, headers...)
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderConnector, Value: []byte(connector)},
		kgo.RecordHeader{Key: HeaderMessage, Value: []byte(err.Error())},
		kgo.RecordHeader{Key: HeaderClass, Value: []byte(fmt.Sprintf("%T", err))},
	)
	hs = append(hs, extra...)
	return &kgo.Record{Topic: topic, Key: key, Value: value, Headers: hs, Timestamp: ts}
}

// Consumed returns the headers that say where a consumed record was read:
// its topic, partition and offset.
func Consumed(r *kgo.Record) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: HeaderTopic, Value: []byte(r.Topic)},
		{Key: HeaderPartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
		{Key: HeaderOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
	}
}
