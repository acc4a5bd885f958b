package repeatlog

import (
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultInterval is how often a condition that keeps recurring is
// reported with its count.
const DefaultInterval = 10 * time.Second

// Limiter logs each condition once per state, then counts repeats.
type Limiter struct {
	log      *zap.Logger
	level    zapcore.Level
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	keys map[string]*condition
}

type condition struct {
	state  string
	msg    string
	fields []zap.Field
	since  time.Time // last line logged for this condition
	n      int       // repeats since then, not logged yet
}

// New returns a Limiter logging to lg at level, reporting counts every
// interval (0: DefaultInterval); now is the clock (nil: time.Now).
func New(lg *zap.Logger, level zapcore.Level, interval time.Duration, now func() time.Time) *Limiter {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if now == nil {
		now = time.Now
	}
	if lg == nil {
		lg = zap.NewNop()
	}
	return &Limiter{log: lg, level: level, interval: interval, now: now, keys: map[string]*condition{}}
}

// Log reports that condition key is in state, described by msg and
// fields. The first report of a state is logged as it is; repeats of the
// same state are counted and logged with their count once per interval.
// A different state for key first logs the count of the old one (if any
// repeats were not logged), then the new one.
func (l *Limiter) Log(key, state, msg string, fields ...zap.Field) {
	now := l.now()
	l.mu.Lock()
	c := l.keys[key]
	var out []func()
	switch {
	case c != nil && c.state == state:
		c.n++
		if now.Sub(c.since) < l.interval {
			l.mu.Unlock()
			return
		}
		out = append(out, c.flush(l, now))
		c.msg, c.fields = msg, fields
	default:
		if c != nil && c.n > 0 {
			out = append(out, c.flush(l, now))
		}
		l.keys[key] = &condition{state: state, msg: msg, fields: fields, since: now}
		out = append(out, func() { l.write(msg, fields) })
	}
	l.mu.Unlock()
	for _, fn := range out {
		fn()
	}
}

// End reports that condition key is over: repeats not logged yet are
// logged with their count; the next Log for key starts afresh.
func (l *Limiter) End(key string) {
	now := l.now()
	l.mu.Lock()
	c := l.keys[key]
	delete(l.keys, key)
	var fn func()
	if c != nil && c.n > 0 {
		fn = c.flush(l, now)
	}
	l.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// Flush logs the counts of every condition with repeats not logged yet
// (at shutdown).
func (l *Limiter) Flush() {
	now := l.now()
	l.mu.Lock()
	var out []func()
	for _, c := range l.keys {
		if c.n > 0 {
			out = append(out, c.flush(l, now))
		}
	}
	l.mu.Unlock()
	for _, fn := range out {
		fn()
	}
}

// flush returns the logging of c's count and resets it (mu held; the
// write runs after mu is released).
func (c *condition) flush(l *Limiter, now time.Time) func() {
	n, d, msg, fields := c.n, now.Sub(c.since), c.msg, c.fields
	c.n, c.since = 0, now
	return func() {
		l.write(fmt.Sprintf("%s (repeated %d times in %s)", msg, n, d.Round(time.Millisecond)),
			append(fields[:len(fields):len(fields)], zap.Int("repeated", n), zap.Duration("over", d)))
	}
}

func (l *Limiter) write(msg string, fields []zap.Field) {
	if ce := l.log.Check(l.level, msg); ce != nil {
		ce.Write(fields...)
	}
}
