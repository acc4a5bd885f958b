package deadlines

import (
	"context"
	"time"
)

// idle is how long the Loop sleeps when there is no deadline.
const idle = time.Hour

// Loop runs step, a state machine's timers, in its own goroutine: at
// once, then at the time step returns (its next deadline; the zero time:
// none), and whenever Kick is called, until Stop.
type Loop struct {
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// New returns a Loop that is not running yet (Kick may be called
// already: the first run of step comes anyway).
func New() *Loop {
	return &Loop{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// Start runs the loop; now is the clock the deadlines are on. Call it
// once.
func (l *Loop) Start(now func() time.Time, step func() (next time.Time)) {
	go l.run(now, step)
}

func (l *Loop) run(now func() time.Time, step func() time.Time) {
	defer close(l.done)
	t := time.NewTimer(idle)
	defer t.Stop()
	for {
		next := step()
		wait := idle
		if !next.IsZero() {
			wait = max(next.Sub(now()), 0)
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
		select {
		case <-l.kick:
		case <-t.C:
		case <-l.stop:
			return
		}
	}
}

// Kick makes the loop run step soon; it never blocks.
func (l *Loop) Kick() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Stop ends a started loop and waits until step is no longer running.
// Call it once.
func (l *Loop) Stop() {
	close(l.stop)
	<-l.done
}

// Await waits for a value on ch or for ctx to end.
func Await[T any](ctx context.Context, ch chan T) (T, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
