// Package conformance is the suite every source and sink kind passes,
// like Benthos's integration definitions: a kind's package supplies a
// small definition (SourceDef or SinkDef: the config of a connector
// against its peer, how to make the peer produce input or read what the
// sink wrote, a record it cannot handle) and calls TestSource or TestSink
// from a test. The suite runs the kind as `weir run` does (Spec.Decode,
// Kind.NewSource/NewSink, Runtime.RunSource/RunSink) against an
// in-process broker and checks, each in a subtest:
//
//   - open_close: records flow; a stop (context cancelled) returns nil
//     after Open and Close were each called once.
//   - restart: a connector stopped and started again under the same name
//     delivers everything (input written while it was down too: not for
//     push sources, whose peers cannot write then) without loss and
//     without duplicates after a clean stop.
//   - dead_letter: a record that can never be handled goes to the
//     connector's dead-letter topic with the Connect error headers, and
//     the records after it are delivered. For a source that is a record
//     the broker refuses (larger than the destination topic's
//     max.message.bytes); for a sink, the definition's bad record.
//   - bad_config: every required setting left out, an unknown setting, a
//     value of the wrong type or outside its choices, and the kind's own
//     bad configs each fail (at decode, construction or Open) with an
//     error naming the setting.
//
// Heavy peers (MariaDB, Elasticsearch) are the package's shared ones
// (started once per package); the broker is started once per suite run.
package conformance
