package syslog

import (
	"strings"
	"testing"
)

// TestFrameReady: ready reports a whole next message in the buffer (an
// octet-counted frame with all its bytes, or a line with its LF) and
// nothing else, so a batch never waits for more input.
func TestFrameReady(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in    string
		reads int // messages read before asking
		want  bool
	}{
		{"5 hello5 world", 1, true},
		{"5 hello5 wor", 1, false},
		{"a\nb\n", 1, true},
		{"a\nb", 1, false},
		{"a\n", 1, false},
		{"12 abc\n", 0, false}, // a count of 12 with 4 bytes: not whole yet
		{"5 hello0 x\n", 1, true},
	}
	for _, c := range cases {
		fr := newFrameReader(strings.NewReader(c.in), 1024)
		if c.reads == 0 {
			fr.r.Peek(1) // fill the buffer
		}
		for i := 0; i < c.reads; i++ {
			if _, _, err := fr.next(); err != nil {
				t.Fatalf("%q: %v", c.in, err)
			}
		}
		if got := fr.ready(); got != c.want {
			t.Errorf("%q after %d: ready %v, want %v", c.in, c.reads, got, c.want)
		}
	}
}
