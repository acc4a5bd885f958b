// Package admin owns weir's admin HTTP listener (default :9644).
//
// It serves:
//
//	/metrics  Prometheus text format from the registry the caller passes in,
//	          plus the Go runtime and process collectors registered here;
//	/healthz  200 "ok" while the process is alive and serving HTTP;
//	/readyz   200 "ready" when the caller's readiness func returns nil,
//	          503 with the func's error text otherwise;
//	/debug/pprof/  Go's net/http/pprof profiles (cpu, heap, goroutine,
//	          mutex, block, trace) for profiling a running broker.
//
// Later components (schema registry REST, admin REST, the web console) mount
// their own handlers with Server.Handle before or after Start.
//
// Security (Config.Security, built by broker/httpsec from --admin-addr
// https://... and the broker's listener.name.admin.* settings): the
// listener serves TLS and every path, the profiler included, sits behind
// basic auth unless authentication.skip.paths opens it (/metrics for a
// Prometheus without credentials, the health checks for probes).
//
// Lifecycle: New binds the listener (so Addr is known at once and ":0"
// works), Start serves in a goroutine, Shutdown stops accepting, waits for
// in-flight requests until ctx ends, then closes remaining connections.
package admin
