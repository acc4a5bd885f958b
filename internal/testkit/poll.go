package testkit

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// The first poll waits firstInterval, each later one twice as long as
// the one before, up to maxInterval: a condition met at once costs
// little, a slow one is not asked hundreds of times.
const (
	firstInterval = 5 * time.Millisecond
	maxInterval   = 100 * time.Millisecond
)

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
	deadline := time.Now().Add(timeout)
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
		if time.Now().After(deadline) {
			return fmt.Errorf("condition not met within %v: %w", timeout, err)
		}
		time.Sleep(interval)
		interval = min(2*interval, maxInterval)
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
