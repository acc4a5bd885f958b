package deadlines

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"weir/internal/testkit"
)

// The loop runs step at once, at the deadline step returns, at each
// Kick; Stop ends it.
func TestLoop(t *testing.T) {
	var runs atomic.Int32
	next := make(chan time.Time, 10)
	l := New()
	l.Kick() // before Start: harmless
	l.Start(time.Now, func() time.Time {
		runs.Add(1)
		select {
		case d := <-next:
			return d
		default:
			return time.Time{}
		}
	})
	testkit.CheckFor(t, 10*time.Second, func() error {
		if runs.Load() < 1 {
			return errors.New("step has not run")
		}
		return nil
	})
	before := runs.Load()
	next <- time.Now().Add(50 * time.Millisecond) // picked by the next run
	l.Kick()
	testkit.CheckFor(t, 10*time.Second, func() error {
		if runs.Load() < before+2 { // the kicked run, then the deadline's
			return errors.New("the deadline's run has not come")
		}
		return nil
	})
	l.Stop() // returns once the goroutine is gone: no run can follow
	after := runs.Load()
	l.Kick() // never blocks, even with no loop
	if runs.Load() != after {
		t.Fatalf("step ran after Stop")
	}
}

func TestAwait(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v, err := Await(context.Background(), ch); v != 7 || err != nil {
		t.Fatalf("Await = %d, %v", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Await(ctx, ch); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await on a canceled context: %v", err)
	}
}
