package connectors

import (
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
)

// Runtime runs connectors against one Kafka cluster (weir's embedded
// broker or an external one): it owns the client settings, the offsets
// topic and the metric families shared by its tasks.
type Runtime struct {
	// Client is how every Kafka client of the runtime connects: seed
	// brokers, TLS, SASL, client id (and, in tests, Extra dialers).
	Client kafkaclient.Options
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

// client returns the options of the runtime's Kafka clients.
func (rt *Runtime) client() kafkaclient.Options {
	return rt.Client
}
