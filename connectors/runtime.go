package connectors

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// Runtime runs connectors against one Kafka cluster (weir's embedded
// broker or an external one): it owns the client settings, the offsets
// topic and the metric families shared by its tasks.
type Runtime struct {
	// Brokers are the bootstrap brokers (host:port).
	Brokers []string
	// ClientOpts are extra franz-go options for every client the runtime
	// builds (TLS, SASL, client id).
	ClientOpts []kgo.Opt
	// Logger receives task logs (nil: none).
	Logger *zap.Logger
	// Metrics holds the metric families (nil: unregistered ones).
	Metrics *MetricSet
	// OffsetsTopic stores source positions ("": DefaultOffsetsTopic).
	OffsetsTopic string
}

func (rt *Runtime) logger(name string) *zap.Logger {
	lg := rt.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	return lg.With(zap.String("connector", name))
}

func (rt *Runtime) metrics(name string) *Metrics {
	if rt.Metrics == nil {
		rt.Metrics = NewMetricSet(nil)
	}
	return rt.Metrics.For(name)
}

func (rt *Runtime) offsetsTopic() string {
	if rt.OffsetsTopic == "" {
		return DefaultOffsetsTopic
	}
	return rt.OffsetsTopic
}

func (rt *Runtime) baseOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(rt.Brokers...)}, rt.ClientOpts...)
}

// DeadLetterTopic is the default dead-letter topic of connector name.
func DeadLetterTopic(name string) string { return "weir-dlq-" + name }

// Dead-letter headers: Kafka Connect's names, so tools written for
// Connect's dead-letter queues read weir's.
const (
	HeaderErrTopic     = "__connect.errors.topic"
	HeaderErrPartition = "__connect.errors.partition"
	HeaderErrOffset    = "__connect.errors.offset"
	HeaderErrConnector = "__connect.errors.connector.name"
	HeaderErrMessage   = "__connect.errors.exception.message"
	HeaderErrClass     = "__connect.errors.exception.class.name"
	// HeaderErrSourcePartition and HeaderErrSourcePosition name the
	// source position of a record a source could not write.
	HeaderErrSourcePartition = "__weir.errors.source.partition"
	HeaderErrSourcePosition  = "__weir.errors.source.position"
)

// deadLetter builds the dead-letter copy of a record that failed with err.
func deadLetter(topic, connector string, key, value []byte, headers []kgo.RecordHeader, ts time.Time, err error, extra ...kgo.RecordHeader) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, len(headers)+len(extra)+3)
	hs = append(hs, headers...)
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderErrConnector, Value: []byte(connector)},
		kgo.RecordHeader{Key: HeaderErrMessage, Value: []byte(err.Error())},
		kgo.RecordHeader{Key: HeaderErrClass, Value: []byte(fmt.Sprintf("%T", err))},
	)
	hs = append(hs, extra...)
	return &kgo.Record{Topic: topic, Key: key, Value: value, Headers: hs, Timestamp: ts}
}
