// Package debeziumtest runs Debezium, the reference CDC tool, as a test
// peer for differential tests of weir's MySQL source: Debezium 3.5's
// MariaDB connector in its embedded engine (no Kafka), from Maven Central
// jars, started by a small Java launcher (java/, a Maven project).
//
// Start runs one JVM capturing the given databases of a MariaDB server
// (offsets and schema history in files of a temporary directory; the
// settings of /work/shared/design/dependencies.md: decimals as strings,
// binary as base64, bigint unsigned precise, adaptive_time_microseconds,
// YEAR not a date) and reads every change event it emits, one JSON line
// each, into Events. A JVM start costs seconds, so a test binary should
// start one engine per server and put the whole differential run (the
// snapshot and the changes streamed after it) through it.
//
// The launcher is compiled with Maven when target/ is missing or older
// than its sources (offline first, then online), under a file lock so
// parallel test binaries build it once; scripts/test builds it up front.
// The JVM exits when its stdin closes, so a killed test process never
// leaves it behind.
//
// When java or mvn is missing the tests that need Debezium are skipped,
// unless the environment variable CI is "true": then they fail.
package debeziumtest
