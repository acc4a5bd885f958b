package txn

import (
	"testing"
	"time"
)

// A dynamic producer.id.expiration.ms is read at each use.
func TestExpirationFunc(t *testing.T) {
	cur := time.Hour
	p := &Partition{opts: Options{Expiration: time.Minute, ExpirationFunc: func() time.Duration { return cur }}.withDefaults()}
	if got := p.expiration(); got != time.Hour {
		t.Fatalf("expiration %v, want 1h", got)
	}
	cur = 2 * time.Second
	if got := p.expiration(); got != 2*time.Second {
		t.Fatalf("after the change: %v", got)
	}
	cur = 0
	if got := p.expiration(); got != DefaultExpiration {
		t.Fatalf("unset: %v", got)
	}
	if got := (&Partition{opts: Options{Expiration: time.Minute}.withDefaults()}).expiration(); got != time.Minute {
		t.Fatalf("static: %v", got)
	}
}
