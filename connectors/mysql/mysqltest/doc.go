// Package mysqltest runs a real MariaDB server for the MySQL CDC
// connector's tests: Debian's mariadbd (package mariadb-server), started
// once per test process with its own data directory (initialised by
// mariadb-install-db), a free TCP port on 127.0.0.1, a socket in the data
// directory, and the binlog settings CDC needs (log_bin, ROW format, FULL
// row image, FULL row metadata, a server id). Grant tables are real: the
// admin and replication users have passwords, so wrong-credential tests
// are real too.
//
// A test binary calls Main from TestMain; Shared starts the default
// server on first use and Main stops it at the end. The default server has
// MariaDB's built-in defaults, as one started without a config file:
// character_set_server latin1, time_zone SYSTEM. SharedWith starts one
// more server per distinct Options (e.g. utf8mb4 defaults, a non-UTC
// time_zone, extra mariadbd options), also once per test binary. The server runs under a small
// shell watchdog that kills it when the test process's stdin pipe closes,
// so a crashed or killed test binary never leaves a mariadbd behind.
//
// StartPair (pair.go) starts a new primary and GTID replica (two more
// mariadbd processes, not shared: a failover test kills one) with
// replication set up; Server.Kill kills a server with SIGKILL.
//
// When mariadbd is missing the tests that need it are skipped, unless the
// environment variable CI is "true": then they fail.
package mysqltest
