// Package streams is weir's topology DSL over topics: stateless operators,
// stateful aggregations with changelog-backed stores, and windows, scaled
// out through consumer groups. It speaks only the Kafka protocol (franz-go),
// so an App runs against weir's broker or an Apache Kafka cluster alike.
//
// # Building a topology
//
//	b := streams.NewBuilder()
//	logs := streams.From(b, "logs", streams.String(), streams.JSON[Log]())
//	errs := logs.Filter(func(_ string, l Log) bool { return l.Level == "error" })
//	perSvc := streams.GroupBy(errs, func(_ string, l Log) string { return l.Service }, streams.String(), streams.JSON[Log]())
//	w := streams.TimeWindows{Size: time.Minute, Grace: 10 * time.Second, EmitFinal: true}
//	streams.CountWindowed(streams.WindowedBy(perSvc, w), "errors-per-minute").
//		To("error-counts", streams.WindowedKey(streams.String()), streams.Int64())
//	tp, err := b.Build()
//
// Stateless: Filter, FilterNot, Peek, Branch, Merge, To (methods) and Map,
// MapValues, FlatMap, FlatMapValues, SelectKey (functions, as Go methods
// cannot add type parameters). Stateful: GroupByKey / GroupBy, then Count,
// Reduce, Aggregate (a Table whose updates are emitted when the store's
// cache flushes), or windowed with WindowedBy (tumbling, hopping) and
// SessionWindowedBy. A grouping after a key change, or over a merge of
// several input topics, goes through a repartition topic
// <app>-<store>-repartition keyed by the new key. Serdes: Bytes, String,
// Int64 (Kafka's Long), JSON, and Avro through the schema registry
// (schemas.Serde). The operator specs are plain Go values (TimeWindows,
// SessionWindows, functions), meant to be built by the HCL `stream` block
// later; that block belongs to the pipelines package.
//
// # Running
//
// New(tp, Config) + Run(ctx) runs one instance. Instances with the same
// ApplicationID form a consumer group (cooperative-sticky by default); a
// task is one input topic-partition with the stores its operators own, so
// adding an instance moves tasks, and the new owner restores their stores
// from the changelogs (or, when the task comes back to an instance that
// closed it cleanly, from the local Pebble store plus the changelog tail).
// TestDriver runs a topology on in-memory topics without a broker.
//
// # Guarantees
//
// At-least-once for outputs: offsets are committed only after every
// record written so far (outputs, changelog entries and markers, dead
// letters) is acknowledged. Aggregations that read their input topic
// directly are exact across crashes (see changelog.go: restore stops at
// the last marker, replay starts there). Through a repartition topic, a
// record written by an upstream task that crashed before committing is
// written again on replay, so such aggregates may count it twice (at most
// one commit interval of records per crash) until transactions arrive.
// Records that fail to decode go to the dead-letter topic (default
// <app>-dlq) with Kafka Connect's error headers; the stream goes on.
//
// # Files
//
//	builder.go    Builder, Stream, stateless operators, sources and sinks
//	group.go      grouping, repartition topics, Count/Reduce/Aggregate, Table
//	windows.go    TimeWindows, Windowed keys, windowed aggregation, close heap
//	session.go    session windows
//	topology.go   Build: validation, store ownership, partition counts
//	task.go       a task: instantiated operators, processing, flush + markers
//	changelog.go  changelog layout, markers, restore, local checkpoints
//	app.go        App: franz-go group client, rebalance callbacks, commit loop
//	driver.go     TestDriver
//	metrics.go    per-task Prometheus metrics
//	serde.go      Serde and the built-in formats
//	internal/store  write cache over Pebble (or memory)
package streams
