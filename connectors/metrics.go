package connectors

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The connector runtime's telemetry, declared in one place. Every series
// carries the connector's name (label "connector"); the runtime counts
// records and bytes crossing the broker boundary, retries and errors,
// connectors add what only they see through the same Metrics.
//
//	weir_connector_records_in_total   records read from the outside (source) or from topics (sink)
//	weir_connector_bytes_in_total     key+value bytes of those records
//	weir_connector_records_out_total  records acknowledged by the broker (source) or the destination (sink)
//	weir_connector_bytes_out_total    key+value bytes of those records
//	weir_connector_errors_total       errors by stage (read, produce, write, flush, commit, config, ...)
//	weir_connector_retries_total      retried calls or items
//	weir_connector_dead_letters_total records sent to the dead-letter topic
//	weir_connector_lag_records        sink: records behind the partition ends; source: records in flight
//	weir_connector_paused             1 while the task waits on backpressure
//	weir_connector_commits_total      committed offsets or source positions
//	weir_connector_events_total       noteworthy events by name (file_rotated, file_truncated, line_truncated, ...)
//
// and per topic (label "topic"), the figures of each edge of a pipeline
// graph (a sink reading two topics, a source writing to several):
//
//	weir_connector_topic_records_in_total   records read from the topic (sinks, streams)
//	weir_connector_topic_records_out_total  records the broker acknowledged on the topic (sources, streams)
//	weir_connector_topic_errors_total       errors of the topic's records or partitions (fetch, produce, dead-letter writes)
//	weir_connector_topic_dead_letters_total records read from (sinks) or refused by (sources) the topic, sent to the dead-letter topic

// Metrics is one connector's view of the runtime's metric families.
// Methods are safe for concurrent use.
type Metrics struct {
	RecordsIn   prometheus.Counter
	BytesIn     prometheus.Counter
	RecordsOut  prometheus.Counter
	BytesOut    prometheus.Counter
	Retries     prometheus.Counter
	DeadLetters prometheus.Counter
	Commits     prometheus.Counter
	Lag         prometheus.Gauge
	Paused      prometheus.Gauge

	errors *prometheus.CounterVec
	events *prometheus.CounterVec
	name   string
	topics *topicVecs
	byTop  sync.Map // topic → *TopicMetrics
}

// TopicMetrics are one connector's counters of one topic.
type TopicMetrics struct {
	RecordsIn   prometheus.Counter
	RecordsOut  prometheus.Counter
	Errors      prometheus.Counter
	DeadLetters prometheus.Counter
}

type topicVecs struct {
	recordsIn, recordsOut, errors, deadLetters *prometheus.CounterVec
}

// Topic returns the counters of topic (cached: a map lookup).
func (m *Metrics) Topic(topic string) *TopicMetrics {
	if v, ok := m.byTop.Load(topic); ok {
		return v.(*TopicMetrics)
	}
	tv := m.topics
	v, _ := m.byTop.LoadOrStore(topic, &TopicMetrics{
		RecordsIn:   tv.recordsIn.WithLabelValues(m.name, topic),
		RecordsOut:  tv.recordsOut.WithLabelValues(m.name, topic),
		Errors:      tv.errors.WithLabelValues(m.name, topic),
		DeadLetters: tv.deadLetters.WithLabelValues(m.name, topic),
	})
	return v.(*TopicMetrics)
}

// Event counts one noteworthy event that is not an error (a rotated or
// truncated file, a cut line).
func (m *Metrics) Event(name string) {
	m.events.WithLabelValues(m.name, name).Inc()
}

// Error counts one error at stage (a short word: read, produce, write...).
func (m *Metrics) Error(stage string) {
	m.errors.WithLabelValues(m.name, stage).Inc()
}

// MetricSet holds the metric families shared by the connectors of one
// runtime. Register it once; For returns one connector's children.
type MetricSet struct {
	recordsIn, bytesIn, recordsOut, bytesOut *prometheus.CounterVec
	errors, retries, deadLetters, commits    *prometheus.CounterVec
	events                                   *prometheus.CounterVec
	lag, paused                              *prometheus.GaugeVec
	topics                                   topicVecs

	mu  sync.Mutex
	per map[string]*Metrics
}

// NewMetricSet creates the families and registers them with reg (nil:
// unregistered, for tests).
func NewMetricSet(reg prometheus.Registerer) *MetricSet {
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "weir", Subsystem: "connector", Name: name, Help: help,
		}, append([]string{"connector"}, labels...))
	}
	g := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "weir", Subsystem: "connector", Name: name, Help: help,
		}, []string{"connector"})
	}
	s := &MetricSet{
		recordsIn:   c("records_in_total", "Records read from the outside (sources) or from topics (sinks)."),
		bytesIn:     c("bytes_in_total", "Key and value bytes of the records read."),
		recordsOut:  c("records_out_total", "Records acknowledged by the broker (sources) or the destination (sinks)."),
		bytesOut:    c("bytes_out_total", "Key and value bytes of the records acknowledged."),
		errors:      c("errors_total", "Errors by stage.", "stage"),
		retries:     c("retries_total", "Retried calls or items."),
		deadLetters: c("dead_letters_total", "Records sent to the dead-letter topic."),
		commits:     c("commits_total", "Committed consumer offsets or source positions."),
		events:      c("events_total", "Noteworthy events that are not errors, by name.", "event"),
		lag:         g("lag_records", "Sinks: records behind the partition ends. Sources: records not yet acknowledged."),
		paused:      g("paused", "1 while the task waits on backpressure."),
		per:         map[string]*Metrics{},
		topics: topicVecs{
			recordsIn:   c("topic_records_in_total", "Records read from the topic (sinks, streams).", "topic"),
			recordsOut:  c("topic_records_out_total", "Records the broker acknowledged on the topic (sources, streams).", "topic"),
			errors:      c("topic_errors_total", "Errors of the topic's records or partitions (fetch, produce, dead-letter writes).", "topic"),
			deadLetters: c("topic_dead_letters_total", "Records read from (sinks, streams) or refused by (sources) the topic and sent to the dead-letter topic.", "topic"),
		},
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{s.recordsIn, s.bytesIn, s.recordsOut, s.bytesOut,
			s.errors, s.retries, s.deadLetters, s.commits, s.events, s.lag, s.paused,
			s.topics.recordsIn, s.topics.recordsOut, s.topics.errors, s.topics.deadLetters} {
			reg.MustRegister(col)
		}
	}
	return s
}

// For returns the metrics of the connector called name.
func (s *MetricSet) For(name string) *Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.per[name]; ok {
		return m
	}
	m := &Metrics{
		RecordsIn:   s.recordsIn.WithLabelValues(name),
		BytesIn:     s.bytesIn.WithLabelValues(name),
		RecordsOut:  s.recordsOut.WithLabelValues(name),
		BytesOut:    s.bytesOut.WithLabelValues(name),
		Retries:     s.retries.WithLabelValues(name),
		DeadLetters: s.deadLetters.WithLabelValues(name),
		Commits:     s.commits.WithLabelValues(name),
		Lag:         s.lag.WithLabelValues(name),
		Paused:      s.paused.WithLabelValues(name),
		errors:      s.errors,
		events:      s.events,
		name:        name,
		topics:      &s.topics,
	}
	s.per[name] = m
	return m
}

// NewTestMetrics returns unregistered metrics for name, for connector unit
// tests that drive a Source or Sink without a runtime.
func NewTestMetrics(name string) *Metrics { return NewMetricSet(nil).For(name) }

// ErrorCounter returns the counter behind Error(stage).
func (m *Metrics) ErrorCounter(stage string) prometheus.Counter {
	return m.errors.WithLabelValues(m.name, stage)
}

// EventCounter returns the counter behind Event(name).
func (m *Metrics) EventCounter(name string) prometheus.Counter {
	return m.events.WithLabelValues(m.name, name)
}
