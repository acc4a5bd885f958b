// Package searchtest runs real search servers for the Elasticsearch sink's
// tests: Elasticsearch 7.17, Elasticsearch 8.15 and OpenSearch 2.19 nodes
// started from Maven Central jars by a small Java launcher (java/, one
// Maven module per server), never a hand-written fake. It is importable by any test in the
// module (examples/ uses it too).
//
// A test binary calls Main from TestMain; Shared starts one server per
// flavor per test process on first use (127.0.0.1, ephemeral HTTP port,
// temporary data directory, 512 MiB heap) and Main stops it at the end.
// Dedicated starts a private server with extra settings (for example a
// tiny write queue, for real 429 rejections) stopped when its test ends.
//
// The launcher is compiled with Maven only when it is missing or older
// than its sources (offline first, then online), under a file lock so
// parallel test binaries build it once. The node exits when its stdin
// closes, so a killed test process never leaves a server behind.
//
// Elasticsearch 8 publishes only its core server, the netty4 transport and
// the test framework to Maven Central, not its modules or X-Pack: the
// Elasticsearch8 node runs with security off, without the _data_stream
// APIs (data streams are still created from index templates by the core
// server) and with GET / answered by the launcher's RootInfoPlugin, a
// stand-in for the unpublished rest-root module.
//
// When java or mvn is missing the tests that need a server are skipped,
// unless the environment variable CI is set: then they fail.
package searchtest
