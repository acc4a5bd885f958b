// Package mvnpeer builds the Java launchers of test peers on demand: a
// Maven project (or one module of it) kept beside the Go package that
// starts the peer, built from Maven Central jars into target/classes and
// target/lib. connectors/elasticsearch/searchtest (search servers) and
// connectors/mysql/debeziumtest (Debezium) and broker/brokertest/kafkatools
// (Kafka's tools) start their JVMs with the classpath Build returns. scripts/test builds the same projects up front;
// Build covers a test run outside it and sources changed since.
package mvnpeer
