package pipelines

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestExpectedWaitsRetriedQuietly: a component failing with a retriable
// Kafka error (UNKNOWN_TOPIC_OR_PARTITION while a new topic's metadata
// propagates) is restarted with its failures at debug until the wait
// lasts ExpectedWaitQuiet; then, and for any other error at once, they are
// errors. Its restarts during a quiet wait are not logged at info.
func TestExpectedWaitsRetriedQuietly(t *testing.T) {
	old := ExpectedWaitQuiet
	ExpectedWaitQuiet = 300 * time.Millisecond
	t.Cleanup(func() { ExpectedWaitQuiet = old })

	run := func(t *testing.T, errs func(i int) error, until int) *observer.ObservedLogs {
		core, logs := observer.New(zapcore.DebugLevel)
		r := &Runner{log: zap.New(core), opts: RunOptions{RestartBackoff: 20 * time.Millisecond}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tk := &task{comp: Component{Type: "sink", Name: "s"}, done: make(chan struct{})}
		i := 0
		go r.supervise(ctx, tk, func(ctx context.Context, _ *task) error {
			i++
			if i > until {
				cancel()
				<-ctx.Done()
				return nil
			}
			return errs(i)
		})
		<-tk.done
		return logs
	}
	count := func(logs *observer.ObservedLogs, msg string, lvl zapcore.Level) int {
		return logs.FilterMessage(msg).Filter(func(e observer.LoggedEntry) bool { return e.Level == lvl }).Len()
	}
	wrapped := func(int) error { return fmt.Errorf("sink s: %w", kerr.UnknownTopicOrPartition) }

	// A short wait (3 retries, well under 300 ms): nothing above debug
	// but the first start.
	logs := run(t, wrapped, 3)
	if n := count(logs, "pipeline component failed; restarting", zapcore.ErrorLevel); n != 0 {
		t.Fatalf("%d errors logged for a short expected wait", n)
	}
	if n := count(logs, "pipeline component failed; restarting", zapcore.DebugLevel); n != 3 {
		t.Fatalf("%d failures at debug, want 3", n)
	}
	if n := count(logs, "pipeline component starting", zapcore.InfoLevel); n != 1 {
		t.Fatalf("%d starts at info, want only the first", n)
	}

	// A wait that lasts (retries beyond 300 ms at 20..40 ms backoff, plus
	// 100 ms each): logged as errors from then on.
	slow := func(int) error { time.Sleep(100 * time.Millisecond); return wrapped(0) }
	logs = run(t, slow, 6)
	if n := count(logs, "pipeline component failed; restarting", zapcore.ErrorLevel); n == 0 {
		t.Fatal("an expected wait that lasted was never logged as an error")
	}
	if n := count(logs, "pipeline component failed; restarting", zapcore.DebugLevel); n == 0 {
		t.Fatal("the first failures of the wait were not quiet")
	}

	// Not a wait: an error at once.
	logs = run(t, func(int) error { return errors.New("disk full") }, 1)
	if n := count(logs, "pipeline component failed; restarting", zapcore.ErrorLevel); n != 1 {
		t.Fatalf("%d errors for a non-retriable failure, want 1", n)
	}
	// A non-retriable Kafka error is not a wait either; a formatted name is.
	if expectedWait(kerr.TopicAuthorizationFailed) || !expectedWait(errors.New("produce: LEADER_NOT_AVAILABLE: There is no leader for this topic-partition")) {
		t.Fatal("expectedWait misclassifies")
	}
}
