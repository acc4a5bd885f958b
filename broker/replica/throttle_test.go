package replica

import (
	"math"
	"testing"
	"time"

	"weir/broker/quota"
)

func TestThrottled(t *testing.T) {
	for _, c := range []struct {
		value string
		p, b  int32
		want  bool
	}{
		{"", 0, 1, false},
		{"*", 7, 3, true},
		{" * ", 7, 3, true},
		{"0:1,1:2", 0, 1, true},
		{"0:1,1:2", 1, 2, true},
		{"0:1,1:2", 1, 1, false},
		{"0:1, 1:2", 1, 2, true},
		{"0:1,junk,1:x", 0, 1, true},
		{"0:1,junk,1:x", 1, 1, false},
	} {
		if got := Throttled(c.value, c.p, c.b); got != c.want {
			t.Errorf("Throttled(%q, %d, %d) = %v, want %v", c.value, c.p, c.b, got, c.want)
		}
	}
}

// TestThrottleRate: with a limit of 1000 B/s over 11 × 1 s windows, the
// rate is measured over at least 10 s, so 10 000 bytes at once are within
// it and one more byte exceeds it; it falls back under as time passes.
// Unlimited (MaxInt64, negative, nil) never throttles.
func TestThrottleRate(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	limit := int64(1000)
	th := NewThrottle(quota.DefaultWindow, func() int64 { return limit }, clock)
	th.Record(10000)
	if th.Exceeded() {
		t.Fatalf("10000 B in a 10 s window at 1000 B/s exceeded (rate %v)", th.Rate())
	}
	th.Record(1)
	if !th.Exceeded() {
		t.Fatalf("10001 B not exceeded (rate %v)", th.Rate())
	}
	now = now.Add(1500 * time.Millisecond)
	if th.Exceeded() {
		t.Fatalf("still exceeded 1.5 s later (rate %v)", th.Rate())
	}
	limit = math.MaxInt64
	th.Record(1 << 40)
	if th.Exceeded() || th.Limited() {
		t.Fatal("an unlimited throttle throttled")
	}
	limit = -1
	if th.Exceeded() {
		t.Fatal("a negative limit throttled")
	}
	var none *Throttle
	none.Record(5)
	if none.Exceeded() || NewThrottle(quota.Window{}, nil, nil).Exceeded() {
		t.Fatal("a nil throttle throttled")
	}
}

// A Manager's parsed throttled-replica lists answer as Throttled does
// and follow a topic config change (a new value is parsed again, an
// emptied one drops the entry), per topic and config name.
func TestThrottledListsFollowConfigChanges(t *testing.T) {
	var l throttledLists
	for _, c := range []struct {
		topic, name, value string
		p, b               int32
		want               bool
	}{
		{"a", LeaderThrottledReplicas, "0:1,1:2", 0, 1, true},
		{"a", LeaderThrottledReplicas, "0:1,1:2", 1, 1, false},
		{"a", FollowerThrottledReplicas, "*", 1, 1, true},
		{"b", LeaderThrottledReplicas, "1:1", 1, 1, true},
		{"a", LeaderThrottledReplicas, "1:1", 1, 1, true}, // changed
		{"a", LeaderThrottledReplicas, "1:1", 0, 1, false},
		{"a", FollowerThrottledReplicas, "", 1, 1, false}, // removed
		{"b", LeaderThrottledReplicas, "1:1", 1, 1, true},
	} {
		if got := l.throttled(c.topic, c.name, c.value, c.p, c.b); got != c.want || got != Throttled(c.value, c.p, c.b) {
			t.Errorf("%s %s=%q: partition %d broker %d throttled %v, want %v", c.topic, c.name, c.value, c.p, c.b, got, c.want)
		}
	}
	if len(l.m) != 2 {
		t.Errorf("%d lists held, want 2 (a's leader list and b's): %v", len(l.m), l.m)
	}
}

// BenchmarkThrottledLookup is the per-fetch check of a throttled
// partition: the parsed list held by the Manager (kept) against parsing
// the config value each time (parse).
func BenchmarkThrottledLookup(b *testing.B) {
	value := "0:1,0:2,1:2,1:3,2:3,2:1,3:1,3:2,4:2,4:3,5:3,5:1"
	b.Run("kept", func(b *testing.B) {
		var l throttledLists
		for i := 0; b.Loop(); i++ {
			l.throttled("t", LeaderThrottledReplicas, value, int32(i%6), 1)
		}
	})
	b.Run("parse", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			Throttled(value, int32(i%6), 1)
		}
	})
}
