package acl

import (
	"net"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"
)

// Authorizer answers the Kafka handlers' authorization questions from the
// current ACL set, super users and allow.everyone.if.no.acl.found, and
// writes the audit log. Safe for concurrent use; Update swaps the set.
type Authorizer struct {
	cfg   Config
	set   atomic.Pointer[Set]
	audit *audit
}

// New returns an authorizer with no ACLs. logger receives the audit log
// (named AuditLoggerName); nil logs nothing.
func New(cfg Config, logger *zap.Logger) *Authorizer {
	a := &Authorizer{cfg: cfg, audit: newAudit(logger)}
	a.set.Store(NewSet(nil))
	return a
}

// Update replaces the ACL set (after a metadata change).
func (a *Authorizer) Update(s *Set) { a.set.Store(s) }

// Set returns the current ACL set.
func (a *Authorizer) Set() *Set { return a.set.Load() }

// Request identifies who asks: the connection's principal, its remote
// address (host:port or host) and the API asking (for the audit log).
type Request struct {
	Principal string
	Remote    string
	API       string
}

// Host returns the client's IP address as Kafka compares it with an
// ACL's host.
func (r Request) Host() string {
	if h, _, err := net.SplitHostPort(r.Remote); err == nil {
		return h
	}
	return r.Remote
}

func (a *Authorizer) superUser(p string) bool { return slices.Contains(a.cfg.SuperUsers, p) }

// Authorize answers whether r may do op on the resource (t, name); a
// denial is logged (audit, rate-limited), an allowance at debug level.
func (a *Authorizer) Authorize(r Request, op Operation, t ResourceType, name string) bool {
	return a.authorize(r, op, t, name, true)
}

// Allowed is Authorize without logging a denial at info level: for
// filtering (topics of an all-topics Metadata, ListGroups) and
// authorized-operations fields, where Kafka sets logIfDenied=false.
func (a *Authorizer) Allowed(r Request, op Operation, t ResourceType, name string) bool {
	return a.authorize(r, op, t, name, false)
}

func (a *Authorizer) authorize(r Request, op Operation, t ResourceType, name string, logDenied bool) bool {
	if a.superUser(r.Principal) {
		a.audit.allowed(r, op, t, name, nil, true)
		return true
	}
	act := Action{Principal: r.Principal, Host: r.Host(), Operation: op, Type: t, Name: name}
	d := a.set.Load().Decide(act, a.cfg.AllowIfNoACLs)
	if d.Allowed {
		a.audit.allowed(r, op, t, name, d.Rule, false)
	} else if logDenied {
		a.audit.denied(r, op, t, name, d.Rule)
	}
	return d.Allowed
}

// AuthorizeByResourceType is Kafka's Authorizer.authorizeByResourceType:
// may r do op on at least one resource of type t (InitProducerId without
// a transactional id: WRITE on some topic)?
func (a *Authorizer) AuthorizeByResourceType(r Request, op Operation, t ResourceType) bool {
	if a.Allowed(r, op, t, "hardcode") {
		return true
	}
	return a.set.Load().AnyAllowed(r.Principal, r.Host(), op, t)
}

// AuthorizedOperations returns the 32-bit field of the operations r may
// do on (t, name) among Kafka's supported operations of t (bit = code).
func (a *Authorizer) AuthorizedOperations(r Request, t ResourceType, name string) int32 {
	var bits int32
	for _, op := range SupportedOperations(t) {
		if a.Allowed(r, op, t, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// AllOperations is the authorized-operations field without an authorizer:
// every supported operation of t.
func AllOperations(t ResourceType) int32 {
	var bits int32
	for _, op := range SupportedOperations(t) {
		bits |= 1 << op
	}
	return bits
}
