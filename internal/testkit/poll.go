package testkit

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// The first poll waits firstInterval, each later one twice as long as
// the one before, up to maxInterval: a condition met at once costs
// little, a slow one is not asked hundreds of times. A long wait (a
// broker restarting, a worker taking over, a search index catching up)
// is asked less often still: once it has lasted a second the interval is
// a tenth of the time waited so far, up to maxLongInterval, so a
// condition met after a wait of d is seen at most d/10 (and at most
// maxLongInterval) late. Conditions read whole topics, search indexes
// or run `weir status` processes; at ten polls a second, a two-minute
// wait cost more CPU than what it waited for.
const (
	firstInterval   = 5 * time.Millisecond
	maxInterval     = 100 * time.Millisecond
	maxLongInterval = time.Second
)

// nextInterval is the wait after a poll that waited interval, waited
// in all.
func nextInterval(interval, waited time.Duration) time.Duration {
	return max(min(2*interval, maxInterval), min(waited/10, maxLongInterval))
}

// CheckFor polls cond until it returns nil, failing t with cond's last
// error once timeout has passed (or at once when cond returns an error
// made by Stop). Any other error from cond means "not yet".
func CheckFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatal(err)
	}
}

// Poll is CheckFor for code without a testing.TB (test peers' start-up):
// it returns nil once cond does, or an error wrapping cond's last error
// once timeout has passed or cond returned an error made by Stop.
func Poll(timeout time.Duration, cond func() error) error {
	start := time.Now()
	deadline := start.Add(timeout)
	interval := firstInterval
	for {
		err := cond()
		if err == nil {
			return nil
		}
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		now := time.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("condition not met within %v: %w", timeout, err)
		}
		// The last poll is at the deadline, not up to an interval before.
		time.Sleep(min(interval, deadline.Sub(now)))
		interval = nextInterval(interval, time.Since(start))
	}
}

// Stop marks err as final: Poll returns it (and CheckFor fails with it)
// at once instead of polling on. Stop(nil) is nil.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return stopError{err}
}

type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }
