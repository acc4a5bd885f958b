package acl

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// AuditLoggerName is the name of the audit logger (Kafka's
// kafka.authorizer.logger): route or filter it by this name.
const AuditLoggerName = "kafka.authorizer.logger"

// auditEvery bounds the audit log: per principal, host, operation and
// resource, the first denial is logged at once, then at most one line
// per auditEvery carrying the count of the denials in between.
const auditEvery = 10 * time.Second

// auditMaxKeys bounds the rate limiter's memory; when exceeded the
// table is cleared (a denial then logs again at once).
const auditMaxKeys = 10000

type audit struct {
	log *zap.Logger
	now func() time.Time

	mu   sync.Mutex
	seen map[auditKey]*auditState
}

type auditKey struct {
	principal, host string
	op              Operation
	t               ResourceType
	name            string
}

type auditState struct {
	last       time.Time
	suppressed int64
}

func newAudit(l *zap.Logger) *audit {
	if l == nil {
		l = zap.NewNop()
	}
	return &audit{log: l.Named(AuditLoggerName), now: time.Now, seen: map[auditKey]*auditState{}}
}

func fields(r Request, op Operation, t ResourceType, name string, rule *Binding) []zap.Field {
	fs := []zap.Field{
		zap.String("principal", r.Principal),
		zap.String("host", r.Host()),
		zap.String("operation", op.String()),
		zap.String("resource_type", t.String()),
		zap.String("resource_name", name),
		zap.String("pattern_type", PatternLiteral.String()),
		zap.String("request", r.API),
	}
	if rule != nil {
		fs = append(fs, zap.String("rule", rule.String()))
	}
	return fs
}

// allowed logs an allowance at debug level.
func (a *audit) allowed(r Request, op Operation, t ResourceType, name string, rule *Binding, super bool) {
	if ce := a.log.Check(zapcore.DebugLevel, "authorized"); ce != nil {
		fs := fields(r, op, t, name, rule)
		if super {
			fs = append(fs, zap.Bool("super_user", true))
		}
		ce.Write(fs...)
	}
}

// denied logs a denial at info level, rate-limited per key.
func (a *audit) denied(r Request, op Operation, t ResourceType, name string, rule *Binding) {
	k := auditKey{r.Principal, r.Host(), op, t, name}
	now := a.now()
	a.mu.Lock()
	st := a.seen[k]
	if st != nil && now.Sub(st.last) < auditEvery {
		st.suppressed++
		a.mu.Unlock()
		return
	}
	var suppressed int64
	if st == nil {
		if len(a.seen) >= auditMaxKeys {
			clear(a.seen)
		}
		st = &auditState{}
		a.seen[k] = st
	}
	suppressed, st.suppressed, st.last = st.suppressed, 0, now
	a.mu.Unlock()
	fs := fields(r, op, t, name, rule)
	if suppressed > 0 {
		fs = append(fs, zap.Int64("denials_not_logged_since_last", suppressed))
	}
	if rule == nil {
		fs = append(fs, zap.String("reason", "no ACL allows it"))
	}
	a.log.Info("authorization denied", fs...)
}
