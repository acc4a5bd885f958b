// Package gate is a test dialer for the ingest endpoints' tests: it sits
// between an endpoint's producer and the broker (kgo.Dialer(g.Dial)) so
// a test can make the broker stop reading (Pause) or vanish (Cut) and
// come back (Resume).
package gate
