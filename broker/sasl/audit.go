package sasl

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// AuditLoggerName is the name of the audit logger under the broker's
// logger: operators route "…auth.audit" lines by it.
const AuditLoggerName = "auth.audit"

// Audit logs failed authentications at warn level, at most Burst lines per
// client host per Interval; the lines dropped are counted into the next
// line logged for that host ("suppressed").
type Audit struct {
	log      *zap.Logger
	interval time.Duration
	burst    int
	now      func() time.Time

	mu    sync.Mutex
	hosts map[string]*auditHost
}

type auditHost struct {
	start      time.Time
	n          int
	suppressed int
}

// maxAuditHosts bounds the per-host state; when it is full, hosts whose
// window has passed are forgotten.
const maxAuditHosts = 10000

// NewAudit returns an audit log on lg's child AuditLoggerName, allowing
// burst lines per host per interval (0s: 5 per 10s).
func NewAudit(lg *zap.Logger, interval time.Duration, burst int) *Audit {
	if lg == nil {
		lg = zap.NewNop()
	}
	if interval <= 0 {
		interval = 10 * time.Second
	}
	if burst <= 0 {
		burst = 5
	}
	return &Audit{log: lg.Named(AuditLoggerName), interval: interval, burst: burst, now: time.Now, hosts: map[string]*auditHost{}}
}

// Failed logs f unless its host is over its rate.
func (a *Audit) Failed(f Failure) {
	a.mu.Lock()
	now := a.now()
	h := a.hosts[f.Host]
	if h == nil {
		if len(a.hosts) >= maxAuditHosts {
			for k, o := range a.hosts {
				if now.Sub(o.start) >= a.interval {
					delete(a.hosts, k)
				}
			}
		}
		h = &auditHost{start: now}
		a.hosts[f.Host] = h
	}
	if now.Sub(h.start) >= a.interval {
		h.start, h.n = now, 0
	}
	h.n++
	if h.n > a.burst {
		h.suppressed++
		a.mu.Unlock()
		return
	}
	suppressed := h.suppressed
	h.suppressed = 0
	a.mu.Unlock()
	fields := f.fields()
	if suppressed > 0 {
		fields = append(fields, zap.Int("suppressed", suppressed))
	}
	a.log.Warn("authentication failed", fields...)
}
