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
// Event time is the input record's Kafka timestamp unless the source has
// an EventTime extractor (From's option; Kafka Streams'
// TimestampExtractor), which takes it from the decoded key and value;
// records it cannot give a time go to the dead-letter topic. Stream time,
// windows and the timestamps of records written downstream (repartition
// topics included) follow event time.
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
// Config.InstanceID makes an instance a static member (group.instance.id):
// restarted with the same id, even after a crash, it gets its tasks back
// without a rebalance or a wait for its old session (weir run's worker
// groups set it to weir-<worker>-<component>). TestDriver runs a topology on in-memory topics without a broker.
//
// # Guarantees
//
// Two processing guarantees, as Kafka Streams' processing.guarantee:
// at-least-once (the default, described first) and exactly-once
// (Config.ExactlyOnce, described after it).
//
// At-least-once for outputs: offsets are committed only after every
// record written so far (outputs, changelog entries and markers, dead
// letters) is acknowledged. A clean stop and a rebalance commit before
// tasks move, so they duplicate nothing. A crash (or tasks lost without a
// commit, when a session expires) leaves each task's records processed
// since its last successful commit (about one CommitInterval of processing
// plus the round in progress, at most MaxPollRecords) to be processed again by
// the task's next owner, which starts at the committed offset. Where that
// can and cannot show, precisely, until transactions arrive:
//
//   - Stores are exact. Restore stops at the changelog's last marker and
//     replayed input before the marker's offset is skipped (changelog.go),
//     so an aggregation reflects every record of the topic it reads
//     exactly once, whatever the crash point.
//   - Records written to topics are at-least-once: what a crashed task
//     wrote after its last commit is written again by the replay. On a
//     table's update stream (Count, Reduce, Aggregate, ToStream) these
//     are repeated updates of a key, and its last update is exact; on a
//     stateless output (To after Map, Filter...) and on the dead-letter
//     topic they are duplicate records.
//   - Through a repartition topic (GroupBy, a grouping after a key change
//     or over merged inputs), aggregations are exact too. The topic
//     itself is at-least-once: a crashed upstream task's writes after its
//     last commit are written again by its next owner. But every
//     repartition record carries its source position (the upstream
//     task's input partition and offset, and a sequence number among the
//     writes of that input record) in the header SourceHeader, and the
//     aggregating task keeps, per store and per source, the highest
//     position it applied, in its changelog markers with the entries, and
//     skips records at or below it (dedupe.go; counted in
//     SkippedDuplicates). Replays write the same records in the same
//     order, so every copy follows its original and is skipped. This
//     relies on the operators before the repartition being deterministic
//     (the same input gives the same records in the same order).
//
// kill_test.go checks both with instances in child processes killed by
// SIGKILL: exact counts over the input topic, and exact repartitioned
// counts while the repartition topic holds a copy of each record of the
// victim's uncommitted input, every copy skipped once.
//
// Exactly-once (Config.ExactlyOnce; eos.go has the details) is Kafka
// Streams' exactly_once_v2: one transactional producer per instance
// (franz-go's GroupTransactSession), and each commit interval's writes
// (outputs, repartition records, changelog entries and markers, dead
// letters) and every task's input offsets form one transaction. A
// read_committed consumer sees each output record once: what a crashed
// instance wrote after its last commit is aborted (by the coordinator
// after TransactionTimeout, 10s by default, during which read_committed
// readers of its partitions and the next owner of its tasks wait), and
// the next owner starts from the committed offsets with the committed
// state. Inputs, repartition topics and changelogs (at restore) are read
// read_committed. A zombie (an instance that lost its group membership
// and still runs) is fenced by the group generation its offset commit
// carries (KIP-447) and by the coordinator's abort of its timed-out
// transaction: nothing of that transaction becomes visible. It then
// aborts, rejoins and reopens its tasks, or, when the end of its
// transaction cannot complete within TransactionTimeout, Run returns the
// error (fail-stop: a restart begins with a new producer from the
// committed offsets; weir run restarts a failed stream). Rebalances run
// between transactions: the instance lets one in only right after a
// commit (a rebalance waits at most CommitInterval), so the restores a
// rebalance starts never hold a transaction open past its timeout, and
// tasks move with nothing uncommitted, as Kafka Streams commits before
// tasks move; the instance keeps its other tasks open. Tasks lost in the
// middle of a transaction (an expired session) abort it, and the
// instance reopens the tasks it keeps from their changelogs. The cost is
// per commit (BENCHMARKS.md): each commit interval ends with a
// transaction commit (TxnOffsetCommit,
// EndTxn, markers on every partition written) during which the instance
// processes nothing, and records are held back from read_committed
// readers until then, so CommitInterval is also the output latency.
// kill_eos_test.go runs the crash tests with it (and one with a zombie:
// SIGSTOP, then SIGCONT once its tasks moved) and reads the output
// read_committed: every result exactly once.
//
// Records that fail to decode, or to give an EventTime, go to the
// dead-letter topic (default <app>-dlq) with Kafka Connect's error
// headers; the stream goes on. So do records an operator fails on: the
// Try variants (TryFilter, TryMap, TryMapValues, TryFlatMap, TryAggregate,
// TryAggregateWindowed, TryAggregateSessions) take functions that return
// an error, and a failing aggregator leaves the aggregate as it was
// (try.go says which record is dead-lettered where).
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
//	dedupe.go     source positions of repartition records, duplicate skipping
//	try.go        operators that can fail: dead letters from operators
//	app.go        App: franz-go group client, rebalance callbacks, commit loop
//	eos.go        exactly-once: transact session, commit/abort, stable restores
//	driver.go     TestDriver
//	metrics.go    per-task Prometheus metrics
//	serde.go      Serde and the built-in formats
//	internal/store  write cache over Pebble (or memory)
package streams
