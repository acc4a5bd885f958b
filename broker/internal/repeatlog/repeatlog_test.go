package repeatlog

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLimiter(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	ck := &clock{t: time.Unix(1000, 0)}
	l := New(zap.New(core), zapcore.WarnLevel, 10*time.Second, ck.now)
	refused := errors.New("broker 3 is not live")

	// 1,000 repeats in 5s: one line.
	for i := 0; i < 1000; i++ {
		l.Log("t-0", refused.Error(), "ISR change refused", zap.Error(refused))
		ck.t = ck.t.Add(5 * time.Millisecond)
	}
	if got := logs.Len(); got != 1 {
		t.Fatalf("%d lines after 1,000 repeats in 5s, want 1: %v", got, messages(logs))
	}
	// Another partition is its own condition.
	l.Log("t-1", refused.Error(), "ISR change refused", zap.Error(refused))
	// Past the interval, the next repeat logs the count.
	ck.t = ck.t.Add(6 * time.Second)
	l.Log("t-0", refused.Error(), "ISR change refused", zap.Error(refused))
	want := []string{
		"ISR change refused",
		"ISR change refused",
		"ISR change refused (repeated 1000 times in 11s)",
	}
	if got := messages(logs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	last := logs.All()[2]
	if last.Level != zapcore.WarnLevel || last.ContextMap()["repeated"] != int64(1000) || last.ContextMap()["error"] != refused.Error() {
		t.Fatalf("count line %v %v", last.Level, last.ContextMap())
	}
	// A new state logs the old one's count, then itself.
	ck.t = ck.t.Add(time.Second)
	l.Log("t-0", refused.Error(), "ISR change refused", zap.Error(refused))
	l.Log("t-0", "stale partition epoch", "ISR change refused", zap.String("error", "stale"))
	// End logs what was not logged yet; a later Log starts afresh.
	l.Log("t-0", "stale partition epoch", "ISR change refused", zap.String("error", "stale"))
	l.End("t-0")
	l.End("t-0")
	l.Log("t-0", "stale partition epoch", "ISR change refused", zap.String("error", "stale"))
	want = append(want,
		"ISR change refused (repeated 1 times in 1s)",
		"ISR change refused",
		"ISR change refused (repeated 1 times in 0s)",
		"ISR change refused",
	)
	if got := messages(logs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	// Flush reports the rest; nothing when nothing is pending.
	l.Log("t-1", refused.Error(), "ISR change refused", zap.Error(refused))
	l.Flush()
	l.Flush()
	if got := messages(logs); len(got) != len(want)+1 || got[len(got)-1] != "ISR change refused (repeated 1 times in 7s)" {
		t.Fatalf("after Flush: %q", got)
	}
	// Below the logger's level nothing is written.
	core2, logs2 := observer.New(zapcore.ErrorLevel)
	New(zap.New(core2), zapcore.WarnLevel, 0, nil).Log("k", "s", "m")
	if logs2.Len() != 0 {
		t.Fatal("warn written to an error-level logger")
	}
}

func messages(o *observer.ObservedLogs) []string {
	var out []string
	for _, e := range o.All() {
		out = append(out, e.Message)
	}
	return out
}
