package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A request cut short by its context (kadm reports it as a shard error
// that does not wrap ctx's error) says what was being waited for, and
// that ctx ended.
func TestCutShort(t *testing.T) {
	t.Parallel()
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	waited := errors.New("t/1 has a transaction open below its end offset 4 (last stable offset 2)")
	shard := errors.New("request ListOffsets has 1 separate shard errors, first: context canceled")
	for _, c := range []struct {
		name       string
		ctx        context.Context
		waited     error
		err        error
		want       []error
		wantCtxErr bool
	}{
		{"live", live, waited, shard, []error{shard}, false},
		{"waited for something", ended, waited, shard, []error{waited}, true},
		{"nothing waited for yet", ended, nil, shard, []error{shard}, true},
		{"already says so", ended, nil, fmt.Errorf("x: %w", context.Canceled), []error{context.Canceled}, true},
	} {
		got := cutShort(c.ctx, c.waited, c.err)
		for _, w := range c.want {
			if !errors.Is(got, w) {
				t.Errorf("%s: %v does not wrap %v", c.name, got, w)
			}
		}
		if errors.Is(got, context.Canceled) != c.wantCtxErr {
			t.Errorf("%s: %v wraps context.Canceled: %v, want %v", c.name, got, !c.wantCtxErr, c.wantCtxErr)
		}
	}
}
