// Package script is the data-driven script runner of the state machines
// (broker/group, broker/txn, broker/replica): testdata files of commands,
// each followed by "----" and the output it must produce, in
// cockroachdb/datadriven's format; -rewrite regenerates the expected
// output. Args parses a command's key=value arguments; Writes stands in
// for the log a coordinator appends to (fail-writes, hold-writes,
// release-writes), shared by the group and transaction coordinator
// scripts. It is apart from package testkit because datadriven registers
// the -rewrite flag in every test binary that links it, which would
// collide with a package's own -rewrite flag (pipelines' golden files).
package script
