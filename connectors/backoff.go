package connectors

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential backoff with full jitter: attempt n (from 0)
// waits a random duration in [d/2, d] where d = min(Max, Initial·Factor^n).
// The zero value uses 100ms, 30s and 2.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
	Factor  float64
	// Attempts bounds the number of retries Retry makes (0: unbounded,
	// until ctx is done).
	Attempts int
}

// DefaultBackoff is 100ms doubling to 30s, unbounded attempts.
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Max: 30 * time.Second, Factor: 2}

// Delay returns the wait before retry attempt n (0-based).
func (b Backoff) Delay(n int) time.Duration {
	ini, max, f := b.Initial, b.Max, b.Factor
	if ini <= 0 {
		ini = 100 * time.Millisecond
	}
	if max <= 0 {
		max = 30 * time.Second
	}
	if f < 1 {
		f = 2
	}
	d := float64(ini)
	for i := 0; i < n && d < float64(max); i++ {
		d *= f
	}
	if d > float64(max) {
		d = float64(max)
	}
	half := d / 2
	return time.Duration(half + rand.Float64()*half)
}

// Retry calls fn until it returns nil or an error not wrapping
// ErrRetriable, waiting b.Delay between calls and counting each retry in
// m.Retries (m may be nil). It returns ctx's error if ctx ends first, and
// the last error once b.Attempts retries are used up.
func Retry(ctx context.Context, b Backoff, m *Metrics, fn func(ctx context.Context) error) error {
	for n := 0; ; n++ {
		err := fn(ctx)
		if err == nil || !errors.Is(err, ErrRetriable) {
			return err
		}
		if b.Attempts > 0 && n >= b.Attempts {
			return err
		}
		if m != nil {
			m.Retries.Inc()
		}
		t := time.NewTimer(b.Delay(n))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), err)
		case <-t.C:
		}
	}
}
