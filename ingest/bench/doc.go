// Package bench owns weir's load generators, the engine behind
// `weir bench produce|consume` and reusable from Go benchmarks and tests:
// Produce and Consume run a kgo client against any Kafka-compatible
// brokers and return a result with records/s, MB/s and a latency Histogram.
//
// They mirror Kafka's kafka-producer-perf-test and
// kafka-consumer-perf-test: a progress line every ReportInterval
// ("N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max
// latency") and a final summary with p50/p99/p99.9/max. Produce latency is
// the time from handing a record to kgo (Produce) to its promise callback,
// so it includes client-side batching and buffering, as Java's does.
// MB means MiB (2^20 bytes), as in Kafka's tools.
//
// Each config's Security (TLS and SASL, from `weir bench --command-config`,
// as Kafka's perf tools take --command-config / --producer.config) applies
// to every client a run makes; RoundTrip's raw modes speak PLAINTEXT on a
// raw connection and refuse it.
package bench
