package kafka

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics are every metric the Kafka server exports, declared in one place.
//
//	weir_kafka_requests_total{api}                 requests answered (or dropped for acks=0)
//	weir_kafka_request_duration_seconds{api}       read-to-written latency
//	weir_kafka_connections                         open connections
//	weir_kafka_connections_accepted_total          connections accepted
//	weir_kafka_rejected_requests_total             frames that closed their connection
//	                                               (malformed, oversize, unknown key/version)
//	weir_kafka_topic_bytes_in_total{topic}         record-batch bytes appended
//	weir_kafka_topic_records_in_total{topic}       records appended
//	weir_kafka_topic_bytes_out_total{topic}        record-batch bytes served by Fetch
//	weir_kafka_topic_produce_errors_total{topic}   partitions of Produce requests answered with an error
//	weir_kafka_throttled_responses_total{quota}    responses throttled, by the quota that
//	                                               set their throttle_time_ms
//	weir_kafka_throttle_seconds_total{quota}       throttle time given (connections muted)
//	weir_kafka_connections_rejected_total          connections closed over max.connections.per.ip
//	weir_kafka_partitions                          partitions hosted
//	weir_kafka_log_size_bytes{topic}               bytes on disk (sampled at scrape)
type metrics struct {
	reqs           [maxAPIKey + 1]prometheus.Counter
	latency        [maxAPIKey + 1]prometheus.Observer
	conns          prometheus.Gauge
	accepted       prometheus.Counter
	rejectedFrames prometheus.Counter
	tlsFailures    *prometheus.CounterVec
	// client quotas and connection limits (quotas.go)
	throttled, throttleSeconds *prometheus.CounterVec
	connsRejected              prometheus.Counter

	bytesIn, recordsIn, bytesOut, produceErrors *prometheus.CounterVec
	partitions                                  prometheus.Gauge
	logSize                                     *prometheus.GaugeVec
	// refreshLogSizes updates logSize; run at scrape time.
	refreshLogSizes atomic.Pointer[func()]
}

// sampledCollector runs a refresh before collecting (gauges that are
// cheap to compute on demand but not worth keeping current).
type sampledCollector struct {
	prometheus.Collector
	refresh *atomic.Pointer[func()]
}

func (c sampledCollector) Collect(ch chan<- prometheus.Metric) {
	if f := c.refresh.Load(); f != nil {
		(*f)()
	}
	c.Collector.Collect(ch)
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "weir", Subsystem: "kafka", Name: "requests_total",
		Help: "Kafka requests handled, by API.",
	}, []string{"api"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "weir", Subsystem: "kafka", Name: "request_duration_seconds",
		Help:    "Time from reading a Kafka request to writing its response, by API.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2.5, 14), // 50µs .. ~7.5s
	}, []string{"api"})
	m := &metrics{
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "connections", Help: "Open Kafka client connections.",
		}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "connections_accepted_total", Help: "Kafka client connections accepted.",
		}),
		rejectedFrames: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "rejected_requests_total",
			Help: "Requests that closed their connection: malformed, oversize, unknown API key or version.",
		}),
		tlsFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "tls_handshake_failures_total",
			Help: "TLS handshakes that failed (not TLS, untrusted or expired client certificate, timeout...), by listener.",
		}, []string{"listener"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "throttled_responses_total",
			Help: "Responses throttled (throttle_time_ms set, connection muted), by quota: producer_byte_rate, consumer_byte_rate, request_percentage.",
		}, []string{"quota"}),
		throttleSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "throttle_seconds_total",
			Help: "Throttle time given to clients over a quota, by quota.",
		}, []string{"quota"}),
		connsRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "connections_rejected_total",
			Help: "Connections closed at once because their IP address had max.connections.per.ip open.",
		}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "topic_bytes_in_total", Help: "Record-batch bytes appended, by topic.",
		}, []string{"topic"}),
		recordsIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "topic_records_in_total", Help: "Records appended, by topic.",
		}, []string{"topic"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "topic_bytes_out_total", Help: "Record-batch bytes served to fetchers, by topic.",
		}, []string{"topic"}),
		produceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "topic_produce_errors_total", Help: "Produce partitions answered with an error, by topic.",
		}, []string{"topic"}),
		partitions: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "partitions", Help: "Partitions hosted by this broker.",
		}),
		logSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "weir", Subsystem: "kafka", Name: "log_size_bytes", Help: "Bytes on disk of a topic's partition logs on this broker.",
		}, []string{"topic"}),
	}
	for key := range m.reqs {
		name := kmsg.NameForKey(int16(key))
		if name == "Unknown" || name == "" {
			continue
		}
		m.reqs[key] = reqs.WithLabelValues(name)
		m.latency[key] = lat.WithLabelValues(name)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{reqs, lat, m.conns, m.accepted, m.rejectedFrames, m.tlsFailures, m.throttled, m.throttleSeconds, m.connsRejected, m.bytesIn, m.recordsIn, m.bytesOut, m.produceErrors, m.partitions, sampledCollector{m.logSize, &m.refreshLogSizes}} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(key int16, start time.Time) {
	if c := m.reqs[key]; c != nil {
		c.Inc()
		m.latency[key].Observe(time.Since(start).Seconds())
	}
}

func (m *metrics) connOpened() { m.conns.Inc(); m.accepted.Inc() }
func (m *metrics) connClosed() { m.conns.Dec() }
