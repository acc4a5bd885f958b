package console

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"weir/internal/testkit"
)

// TestSamplerRunsWhileWatched: the sampler starts with a page view,
// samples, and stops once no page was viewed for idleSamples intervals;
// the next view starts it again.
func TestSamplerRunsWhileWatched(t *testing.T) {
	t.Parallel()
	e := startEnv(t, envOptions{interval: 20 * time.Millisecond})
	running := func() bool {
		e.c.hist.mu.Lock()
		defer e.c.hist.mu.Unlock()
		return e.c.hist.running
	}
	if running() {
		t.Fatal("the sampler runs before any page view")
	}
	for round := 0; round < 2; round++ {
		if code, _ := get(t, e.base+"topics"); code != http.StatusOK {
			t.Fatalf("topics: %d", code)
		}
		if !running() {
			t.Fatal("no sampler after a page view")
		}
		testkit.CheckFor(t, 30*time.Second, func() error {
			if running() {
				return errors.New("still sampling")
			}
			return nil
		})
		e.c.hist.mu.Lock()
		last := e.c.hist.last
		e.c.hist.mu.Unlock()
		if last.IsZero() {
			t.Fatal("the sampler stopped without a sample")
		}
	}
}
