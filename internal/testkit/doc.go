// Package testkit holds the helpers every test package shares, and
// nothing that pulls in the broker or a connector, so any package can
// import it:
//
//   - CheckFor and Poll: wait for a condition by polling it with a
//     deadline. An error from the condition means "not yet" (a retriable
//     Kafka error, a peer still starting, a record not yet delivered);
//     the last one is in the failure. Stop marks an error that polling
//     cannot outwait. Tests never sleep for a fixed time instead.
//   - WaitingParallel: run more t.Parallel tests at once than there are
//     cores, for packages whose tests mostly wait on timeouts;
//     WaitingParallelShort: more still under -short only.
//   - Buffer: a bytes.Buffer safe for concurrent use, for output a test
//     reads while a child process or a goroutine writes it.
//   - StartProc: a child process (a `weir broker`, say) whose output is
//     appended to a log file, ready once it logs a given JSON line;
//     Kill is SIGKILL and waits for it to be gone.
//   - FreeAddr and WaitListening: a process whose address must be known
//     before it starts (restarted on the same one, or in other nodes'
//     configuration) gets a port picked free; its first start waits for
//     its listeners and, on ErrPortTaken (another process took the port
//     meanwhile), starts again on new ones.
//   - The data-driven script runner of the state machines is the
//     subpackage script (it links datadriven, whose -rewrite flag every
//     test binary that imports it gets).
//
// The conformance suite that every source and sink kind passes is in
// connectors/conformance.
package testkit
