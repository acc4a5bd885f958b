// Package gate is a test dialer for the push sources' tests (http,
// syslog, the runtime's push tests): it sits between the connector
// runtime's producer and the broker (g.Opts() in
// Runtime.Client.Extra) so a test can make the broker stop reading (Pause)
// or vanish (Cut) and come back (Resume).
package gate
