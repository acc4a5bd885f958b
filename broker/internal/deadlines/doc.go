// Package deadlines is what the coordinators' shells (broker/group,
// broker/txncoord) share around their state machines: a Loop, the one
// goroutine that runs a machine's timers (at its next deadline, or at
// once when kicked, until stopped), and Await, a wait for a reply on a
// channel bounded by a context.
package deadlines
