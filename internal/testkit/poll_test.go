package testkit

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPollRetriesUntilMet(t *testing.T) {
	t.Parallel()
	n := 0
	err := Poll(5*time.Second, func() error {
		if n++; n < 4 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || n != 4 {
		t.Fatalf("err %v after %d calls, want nil after 4", err, n)
	}
}

// The failure names the timeout and wraps the condition's last error.
func TestPollTimesOutWithLastError(t *testing.T) {
	t.Parallel()
	last := errors.New("first")
	n := 0
	err := Poll(30*time.Millisecond, func() error {
		n++
		if n > 1 {
			last = errors.New("offset 3, want 5")
		}
		return last
	})
	if !errors.Is(err, last) || !strings.Contains(err.Error(), "within 30ms") || !strings.Contains(err.Error(), "offset 3, want 5") {
		t.Fatalf("err %v: want the last error and the timeout", err)
	}
}

// Stop ends polling at once with the error it wraps.
func TestPollStop(t *testing.T) {
	t.Parallel()
	exited := errors.New("peer exited")
	n := 0
	start := time.Now()
	err := Poll(time.Minute, func() error {
		n++
		return Stop(exited)
	})
	if err != exited || n != 1 || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %d calls: want the stop error after 1", err, n)
	}
	if Stop(nil) != nil {
		t.Fatal("Stop(nil) is not nil")
	}
}

// A long wait is polled less often: a tenth of the time waited, up to a
// second, never less often than the short waits' 100 ms.
func TestPollIntervalGrowsOnLongWaits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ interval, waited, want time.Duration }{
		{5 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond},
		{80 * time.Millisecond, 200 * time.Millisecond, 100 * time.Millisecond},
		{100 * time.Millisecond, 900 * time.Millisecond, 100 * time.Millisecond},
		{100 * time.Millisecond, 5 * time.Second, 500 * time.Millisecond},
		{500 * time.Millisecond, 2 * time.Minute, time.Second},
	} {
		if got := nextInterval(c.interval, c.waited); got != c.want {
			t.Errorf("nextInterval(%v, %v) = %v, want %v", c.interval, c.waited, got, c.want)
		}
	}
}

// The last poll comes at the deadline, not an interval before it.
func TestPollAsksAtTheDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 1500 * time.Millisecond
	start := time.Now()
	var last time.Time
	err := Poll(timeout, func() error {
		last = time.Now()
		return errors.New("never")
	})
	if err == nil || last.Sub(start) < timeout {
		t.Fatalf("err %v, last poll %v after the start: want an error and a poll at %v or later", err, last.Sub(start), timeout)
	}
}
