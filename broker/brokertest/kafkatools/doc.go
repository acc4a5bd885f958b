// Package kafkatools runs Apache Kafka 4.4's command-line tools
// (kafka-configs, kafka-acls, kafka-topics, ...) as test peers: the tool
// classes from Maven Central jars (java/pom.xml, built on demand through
// internal/mvnpeer; scripts/test builds it up front), run in a JVM with
// Kafka's own arguments against a weir broker.
//
//	out, err := kafkatools.Run(ctx, kafkatools.ConfigCommand,
//		"--bootstrap-server", addr, "--describe", "--entity-type", "clients")
package kafkatools
