package console

import (
	"context"
	"sync"
	"time"
)

// Whole-cluster views (every partition's metadata, every group's lag)
// cost the broker and the console work in proportion to the cluster's
// partitions. A console polled every second by several viewers asks
// them at most once per max age: the views are shared values, and the
// pages show when theirs was taken ("as of").

// shared is a value loaded from the cluster and kept for a while;
// concurrent askers of a stale value wait for one load.
type shared[T any] struct {
	mu      sync.Mutex
	at      time.Time // when the kept value was taken; zero: none
	v       T
	err     error
	loading chan struct{} // closed when the load under way ends
}

// get returns the kept value if it was taken less than maxAge ago,
// else loads a new one (or waits for the load under way). A failed load
// is not kept: the next ask tries again.
func (s *shared[T]) get(ctx context.Context, maxAge time.Duration, load func(context.Context) (T, error)) (T, time.Time, error) {
	for {
		s.mu.Lock()
		if !s.at.IsZero() && time.Since(s.at) < maxAge {
			v, at := s.v, s.at
			s.mu.Unlock()
			return v, at, nil
		}
		if ch := s.loading; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
				s.mu.Lock()
				v, at, err := s.v, s.at, s.err
				s.mu.Unlock()
				if err == nil && !at.IsZero() {
					return v, at, nil
				}
				continue // the other load failed: try our own
			case <-ctx.Done():
				var zero T
				return zero, time.Time{}, ctx.Err()
			}
		}
		ch := make(chan struct{})
		s.loading = ch
		s.mu.Unlock()

		at := time.Now()
		v, err := load(ctx)
		s.mu.Lock()
		s.loading = nil
		s.err = err
		if err == nil {
			s.v, s.at = v, at
		}
		s.mu.Unlock()
		close(ch)
		return v, at, err
	}
}

// forget drops the kept value (after a change made through the console).
func (s *shared[T]) forget() {
	s.mu.Lock()
	s.at = time.Time{}
	var zero T
	s.v = zero
	s.mu.Unlock()
}

// AsOf says on a page when its whole-cluster data was taken and how
// often it is taken again (template "asof" in layout.html).
type AsOf struct {
	At    time.Time
	Every time.Duration
}

func asOf(at time.Time, every time.Duration) AsOf { return AsOf{At: at, Every: every} }

// forgetClusterViews drops the shared whole-cluster views: the next
// view sees a change just made through the console.
func (c *Console) forgetClusterViews() {
	c.metaCache.forget()
	c.lagCache.forget()
	c.topicsMu.Lock()
	c.topicsCache = nil
	c.topicsMu.Unlock()
	c.groupMu.Lock()
	c.groupCache = nil
	c.groupMu.Unlock()
}
