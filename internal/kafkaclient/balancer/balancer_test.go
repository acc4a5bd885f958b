package balancer

import (
	"errors"
	"strings"
	"testing"
)

func TestFor(t *testing.T) {
	for name, proto := range map[string]string{
		"range": "range", "roundrobin": "roundrobin", "cooperative-sticky": "cooperative-sticky",
		" Range ": "range", "ROUNDROBIN": "roundrobin",
	} {
		b, err := For(name)
		if err != nil {
			t.Fatalf("For(%q): %v", name, err)
		}
		if got := b.ProtocolName(); got != proto {
			t.Errorf("For(%q).ProtocolName() = %q, want %q", name, got, proto)
		}
	}
	if b, _ := For("cooperative-sticky"); !b.IsCooperative() {
		t.Error("cooperative-sticky is not cooperative")
	}
	for _, bad := range []string{"", "sticky", "round-robin", "rangee"} {
		_, err := For(bad)
		if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), `"`+bad+`"`) || !strings.Contains(err.Error(), "cooperative-sticky") {
			t.Errorf("For(%q) error = %v, want ErrUnknown naming the value and the choices", bad, err)
		}
	}
	if _, err := Opt("range", "nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Opt with a bad name: %v", err)
	}
	if o, err := Opt(); err != nil || o == nil {
		t.Errorf("Opt() = %v, %v", o, err)
	}
}
