// Package observe is how a running `weir run` is watched from outside:
// live counters and rates per component and per edge of the pipeline
// graph, component state and last error, restarting one component, and
// a tap hub that hands out a rate-limited, decoded sample of the records
// flowing out of (or into) any source, transform step, stream or sink.
//
// It owns no counters: the numbers are the runner's (pipelines.Runner's
// Status, built from the connector runtime's Prometheus metrics and the
// streams' task metrics); a Meter keeps recent snapshots of them and
// computes rates as differences. An edge's figures are its own: the
// runtime counts per topic (weir_connector_topic_*, a stream's tasks per
// input topic: Counters.Topics), so a sink reading two topics shows each
// topic's rate, errors and dead letters on its edge (EdgeView). The runner implements Pipeline
// (pipelines.Runner.Observed) and the HTTP API (api.go) serves it on the
// admin listener of weir run:
//
//	GET  /api/v1/pipeline                    graph, status, counters, rates
//	GET  /api/v1/tap/{component}             NDJSON (default) or SSE stream
//	     ?direction=out|in &step=N|KIND &limit=N &rate=N (samples/s)
//	POST /api/v1/components/{name}/restart   stop and start one component
//
// # Taps
//
// A Hub holds one Point per component, direction and transform step.
// The hot path of a component checks Point.Active (one atomic load) per
// batch or record and does nothing more while nobody taps; a subscriber
// (Hub.Subscribe) makes its point active, and Publish then builds one
// Sample (the decoding is done only for records the subscriber's rate
// allows) and hands it over without blocking: a slow reader loses
// samples, never slows the pipeline.
//
// Component names are the graph's IDs (source.x, stream.x, sink.x); a
// bare name that only one component has is accepted, and COMPONENT/N or
// COMPONENT/KIND names the N-th (1-based) or only KIND transform step of
// a source or stream (Resolve).
package observe
