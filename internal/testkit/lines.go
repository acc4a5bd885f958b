package testkit

import "strings"

// LastLines is the last n lines of s (all of s when it has fewer), for a
// failed test's report of a peer's or a process's log.
func LastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
