// Package mvnpeer builds the Java launchers of test peers on demand: a
// Maven project (or one module of it) kept beside the Go package that
// starts the peer, built from Maven Central jars into target/classes and
// target/lib. connectors/elasticsearch/searchtest (search servers) and
// connectors/mysql/debeziumtest (Debezium) and broker/brokertest/kafkatools
// (Kafka's tools), broker/brokertest/eostest (Kafka's client and Streams)
// and internal/kafkapeer (Apache Kafka) start their JVMs with the
// classpath Build returns. scripts/test builds them all up front (the
// command mvnpeer/peers); Build covers a test run outside it and sources
// changed since. A build is also kept in a cache folder
// ($WEIR_MVNPEER_CACHE, else ~/.cache/weir/mvnpeer) under a hash of its
// pom.xml files and sources, so a fresh clone copies it instead of
// running Maven. Each cached build also gets a class-data archive
// (AppCDS, cds.go): the first JVM started on it with ShareArchive's
// dumping options writes it as it exits, and every later JVM maps it,
// which halves the CPU a peer's JVM spends starting.
package mvnpeer
