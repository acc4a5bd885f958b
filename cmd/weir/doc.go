// Command weir is the one binary of the weir appliance: a Kafka-compatible
// broker, Connect-style sources and sinks, a Streams layer, a schema
// registry, and HCL-declared pipelines.
//
// Each subcommand lives in a file of its own (root.go, version.go,
// broker.go, topic.go, produce.go, consume.go, bench.go, connector.go, ...). A subcommand file
// registers itself with registerCommand in an init function, so adding a
// command never touches another command's file.
package main
