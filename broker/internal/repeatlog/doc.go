// Package repeatlog keeps repeated warnings readable: a condition that
// recurs many times a second under a fault (an ISR change the controller
// keeps refusing, a disk that stays full) is logged once when it starts or
// changes, then counted, with the count logged at most once per interval
// ("... (repeated 123 times in 10s)") and when the condition ends or
// changes.
//
// A Limiter tracks conditions by key (a partition name, a log directory)
// and state (what is wrong with it now: an error text, a set of epochs);
// a new state for a key is a new condition. It is safe for concurrent use.
package repeatlog
