// Package pipelines owns weir's HCL language: parsing, validation with
// file:line:col diagnostics, building the pipeline graph, and running and
// reloading it.
//
// # External clusters and secrets
//
// A broker block with brokers = [...] runs against an external cluster;
// its client_config is a map of Kafka client properties
// (internal/kafkaclient.ParseProperties: security.protocol, sasl.*,
// ssl.*, client.id, and the registry's schema.registry.ssl.* and
// basic.auth.user.info) from which RunOptions.Client and Registry are
// built; a property weir does not read, bootstrap.servers or
// schema.registry.url there is an error naming it. The kafka sink gets
// the run's brokers and client_config when it names no brokers; the Avro
// connectors (file and syslog sources, mysql, elasticsearch, the file and
// stdout sinks) get the registry URL with client_config's registry
// properties as their schema_registry_config (kafkaclient.OpenRegistry)
// when they name no registry.
//
// The embedded broker's registry takes registry_config: the settings of
// `weir broker --registry-config` (Confluent Schema Registry's names:
// listeners=https://..., ssl.*, authentication.method=BASIC,
// authentication.users.file, ...; listeners replaces registry_addr). Its
// clients then need client_config too, with the registry properties only
// (schema.registry.ssl.truststore.location, basic.auth.user.info). Secrets
// come from env("NAME") (an error naming the attribute and file:line when
// unset; env("NAME", "default") for optional ones) and file("path")
// (relative to the pipeline files; one trailing line break dropped, unlike
// Terraform's file()). They never print: Broker.ClientConfig is redacted,
// the settings are kafkaclient.Secret values, connector fields marked
// Sensitive are redacted by Spec.Redact and kept out of decode errors.
//
// # Exactly-once sources
//
// exactly_once = true on a source block (MetaSettings; a bool, checked
// at its file:line:col) runs the source with
// connectors.SourceOptions.ExactlyOnce: records and positions in one
// transaction per commit interval, transactional id weir-source-<name>.
// It is part of the source's hash, so changing it restarts the source.
//
// # Stream blocks
//
// A stream block reads its from topics, runs its transform steps (inline
// step blocks and transforms = [...]) over each record, and writes to its
// to topic (or a route's). Stateless streams run as sink tasks of the
// connectors runtime (tasks.go). Two declarative operators extend them:
//
//	select_key = <expression of record>
//
// re-keys each record (Kafka Streams' selectKey, ksqlDB's PARTITION BY):
// a string becomes the key as is, numbers, bools and timestamps as text,
// objects and lists as JSON, null as no key; a failing expression sends
// the record to the dead-letter topic weir-dlq-<stream>. The stream stays
// stateless.
//
//	group_by = <expression of record>   # optional: default the record key
//	window "tumbling" { size = "1m"  grace = "10s"  emit = "final" }
//	window "hopping"  { size = "5m"  advance = "1m"  grace = ...  emit = ... }
//	window "session"  { gap = "30m"  grace = ...  emit = ... }
//	count { field = "count" }            # field optional
//	aggregate {
//	  initial = <constant>               # the aggregate of a new group
//	  add     = <expression of record, agg, key>
//	  merge   = <expression of agg, other, key>   # session windows only
//	  field   = "value"                  # output field of a scalar aggregate
//	}
//
// make the stream aggregate, as groupBy/windowedBy/count|aggregate do in
// Kafka Streams (GROUP BY ... WINDOW TUMBLING|HOPPING|SESSION in ksqlDB).
// One aggregation per stream, count or aggregate; the window is optional.
// Steps run on input records before the grouping and must be written
// above the aggregation; route steps are errors. Windows use event time:
// the input records' timestamps, or, when a parse_timestamp step of the
// stream sets the record time (set_record_time, the default), the time it
// parsed; a record it gave no time goes to the dead-letter topic
// weir-dlq-<stream>. Durations are Go
// durations plus "d"; grace defaults to 0; emit "final" writes one result
// per window when stream time passes its end plus grace, "updates" (the
// default) every change. A record for a window already closed is late:
// dropped and counted (Status.Late, weir_streams_late_dropped_total).
//
// Results are keyed by the group key and their value is an object in the
// to topic's format: the group key under the name of group_by's last
// attribute (record.service → "service"; else "key"), window_start and
// window_end for windowed streams, then the count (field "count"), the
// fields of an object aggregate, or a scalar aggregate (field "value").
// add or merge failing on a record leaves the aggregate unchanged, counts
// a transform error and sends the record to the dead-letter topic
// weir-dlq-<stream> with the error (as read by the aggregating task: with
// group_by or several from topics, the repartition record, whose value is
// in weir's internal state encoding; else the input record); a null group
// key drops the record.
//
// An aggregating stream runs as a streams application (streamapp.go):
// its group is the application id, its stores (count or aggregate) live
// in RunOptions.StateDir (default <broker data_dir>/streams) backed by
// changelog topics <group>-<store>-changelog, group_by and several from
// topics go through <group>-<store>-repartition, and the state survives
// restarts and moves between instances (at-least-once, see package
// streams). Changing a stream's grouping or aggregation under the same
// group mixes old state with new: give it a new group.
//
//	exactly_once = true
//
// on a stream block (and the kafka sink's exactly_once setting) makes its
// output exactly-once for read_committed readers (eos.go): an
// aggregating stream runs with streams.Config.ExactlyOnce (Kafka
// Streams' exactly_once_v2: results, changelog and repartition records
// and the consumed offsets in one transaction per commit interval); a
// stateless stream and a kafka sink run their sink task with
// connectors.SinkOptions.ExactlyOnce (the records written, dead letters
// included, and the offsets consumed in one transaction per flush).
// Inputs are read read_committed. A kafka sink with exactly_once must
// write to the cluster it reads (its brokers left to weir run); a
// record the destination refuses for good then stops the sink instead
// of going to the dead-letter topic alone. Not a bool: an error at the
// value's file:line:col.
//
// # Source blocks and their nested blocks
//
// A connector kind may declare nested, labelled blocks
// (connectors.Block), such as the table blocks of a mysql source. When
// such a block names a topic the source writes (Block.Topic), sinks and
// streams refer to it as source.<name>.<type>["<label>"].topic (all of
// them: source.<name>.topics; the source's own topic: source.<name>.topic),
// the graph gets the edge source → topic, and a topic block nested in it
// (partitions, replication_factor, config) declares that topic. A
// reference to a label the source has no block for is an error at the
// reference (srcblocks.go).
//
// # Transform steps
//
// Each transform step block type is a StepKind, declared in its own file
// (step_<kind>.go) and registered from init, as connector kinds are: its
// Spec lists the block's attributes (type, required, default, doc),
// which give the block's schema, the defaults StepArgs returns and the
// reference weir kinds prints; its New builds the step, reading the
// attributes through StepArgs in the order it wants their diagnostics.
// A kind that declares on_error (OnError) gets it decoded for it. A new
// step kind is one file: a type implementing Step, and its registration
// (TestRegisteredStepKind declares one outside the package).
//
// # Test blocks
//
// test "<name>" blocks (testblocks.go) are unit tests of transforms, as
// Vector's and Logstash's pipeline tests: target = source.<name>,
// stream.<name>, transform.<name> or a list of transforms
// (chained in order), input blocks (value as
// a string or an object, key, headers, timestamp, topic) and either
// output blocks (value exact, fields subset, key, topic, timestamp,
// headers, condition expressions over record, dead_letter and error),
// matched in order with the records that come out, or no_output = true.
// They are read only with Options.Tests (weir test, weir validate);
// weir run skips them. RunTests (testrun.go) runs them without a broker
// through the runner's own pieces: a transformer with the declared
// topics' encoders (Avro schemas under local ids), a transformSource
// over the inputs for a source, a streamSink writing into a collector
// (its transactional producer and sink context) for a stream; a
// source's inputs are its events (a string: the message field, as the
// file source hands its lines), a stream's are encoded as its from
// topic stores values. An aggregating stream's topology (the one
// runStatefulStream runs) runs on a streams.TestDriver (testagg.go):
// one partition per topic, in-memory stores, a commit after each input;
// its results come out in order, then its dead letters. testcheck.go reports each difference at the
// file:line:col of the expectation that failed.
//
// # Files
//
//	load.go, blocks.go, vars.go  parsing, topics, broker, variables, locals
//	components.go                sources, streams, sinks, transform chains
//	srcblocks.go                 nested connector blocks, source.<name> references
//	aggregate.go                 a stream's group_by, window, count, aggregate
//	expr/                        the expression language (package expr)
//	steps.go                     Event, Chain: running transform steps
//	stepkinds.go                 StepKind registry, StepArgs: decoding step blocks
//	step_<kind>.go               one transform step kind each (parse_json, ...)
//	codec/                       record values (Avro, JSON) and stream state (package codec)
//	graph.go, diag.go            the graph; diagnostics output
//	runner.go, tasks.go          Runner: topics, sources, sinks, stateless streams
//	streamapp.go                 aggregating streams on package streams
//	eos.go                       exactly_once of streams and kafka sinks
//	testblocks.go, testrun.go,   test blocks: decoding, running, checking
//	testagg.go, testcheck.go
//	observed.go, observe/        watching a run: counters, rates, taps, restart (package observe)
package pipelines
