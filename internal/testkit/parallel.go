package testkit

import (
	"flag"
	"strconv"
	"testing"
)

// WaitingParallel raises the number of t.Parallel tests that run at once
// (-test.parallel, GOMAXPROCS by default) to n, unless the command line
// set it. It is for packages whose tests spend their time waiting on
// timeouts (sessions, elections, lag checks) rather than on the CPU, such
// as the in-process cluster tests: on 2 cores, two at a time leaves the
// machine mostly idle. Call it from TestMain before m.Run.
func WaitingParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); !set && f != nil {
		if cur, err := strconv.Atoi(f.Value.String()); err == nil && cur < n {
			f.Value.Set(strconv.Itoa(n))
		}
	}
}

// WaitingParallelShort is WaitingParallel(n) under -short only. What
// -short leaves of a package of cluster tests (in-process brokers and
// controllers, no child processes or JVMs) waits on sessions, elections
// and lag checks nearly all the time, so more of them can run at once
// than the package's whole suite should. Call it from TestMain before
// m.Run, after any WaitingParallel.
func WaitingParallelShort(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		WaitingParallel(n)
	}
}
