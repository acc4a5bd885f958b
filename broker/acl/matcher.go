package acl

import "sort"

// Set is an immutable index of ACLs for authorization decisions: a pure
// function of the bindings it was built from. Bindings are grouped by
// resource type, then by literal name (the "*" wildcard among them) and
// by prefix; a decision looks up the literal name, the wildcard and each
// prefix length present, so it costs a few map lookups whatever the
// number of ACLs.
type Set struct {
	byType [ResourceUser + 1]typeIndex
	n      int
}

type typeIndex struct {
	literal  map[string][]Binding
	prefixed map[string][]Binding
	// prefixLens are the distinct lengths of the prefixed names, ascending.
	prefixLens []int
}

// NewSet indexes bindings. Bindings of an unknown type or pattern are
// ignored (Validate refuses them before they are stored).
func NewSet(bindings []Binding) *Set {
	s := &Set{}
	lens := map[ResourceType]map[int]bool{}
	for _, b := range bindings {
		if b.ResourceType <= ResourceAny || b.ResourceType > ResourceUser {
			continue
		}
		ti := &s.byType[b.ResourceType]
		switch b.PatternType {
		case PatternLiteral:
			if ti.literal == nil {
				ti.literal = map[string][]Binding{}
			}
			ti.literal[b.ResourceName] = append(ti.literal[b.ResourceName], b)
		case PatternPrefixed:
			if ti.prefixed == nil {
				ti.prefixed = map[string][]Binding{}
				lens[b.ResourceType] = map[int]bool{}
			}
			ti.prefixed[b.ResourceName] = append(ti.prefixed[b.ResourceName], b)
			lens[b.ResourceType][len(b.ResourceName)] = true
		default:
			continue
		}
		s.n++
	}
	for t, ls := range lens {
		ti := &s.byType[t]
		for l := range ls {
			ti.prefixLens = append(ti.prefixLens, l)
		}
		sort.Ints(ti.prefixLens)
	}
	return s
}

// Len returns the number of indexed ACLs.
func (s *Set) Len() int { return s.n }

// Action is one authorization question: may Principal, connected from
// Host, do Operation on the resource (Type, Name)? Name is a literal
// resource name.
type Action struct {
	Principal string
	Host      string
	Operation Operation
	Type      ResourceType
	Name      string
}

// Decision is the answer and the rule that gave it.
type Decision struct {
	Allowed bool
	// Rule is the ACL that decided, nil when no ACL matched (then
	// NoACLs tells whether the resource had any ACL at all).
	Rule *Binding
	// NoACLs: no ACL of any principal applies to the resource; the
	// authorizer's allow.everyone.if.no.acl.found decides.
	NoACLs bool
}

// Decide answers a for a principal that is not a super user, as Kafka's
// StandardAuthorizer does: a matching DENY wins; else a matching ALLOW
// allows; else, when some ACL names the resource, it is denied; when none
// does, the answer is noACLAllowed (allow.everyone.if.no.acl.found).
// ALLOW ACLs for READ, WRITE, DELETE or ALTER imply DESCRIBE, and
// ALTER_CONFIGS implies DESCRIBE_CONFIGS; DENY ACLs imply nothing.
func (s *Set) Decide(a Action, noACLAllowed bool) Decision {
	var m matching
	if a.Type > ResourceAny && a.Type <= ResourceUser {
		ti := &s.byType[a.Type]
		m.check(a, ti.literal[a.Name])
		if m.deny == nil && a.Name != Wildcard {
			m.check(a, ti.literal[Wildcard])
		}
		for _, l := range ti.prefixLens {
			if m.deny != nil || l > len(a.Name) {
				break
			}
			m.check(a, ti.prefixed[a.Name[:l]])
		}
	}
	switch {
	case m.deny != nil:
		return Decision{Rule: m.deny}
	case m.allow != nil:
		return Decision{Allowed: true, Rule: m.allow}
	case !m.resourceACLs:
		return Decision{Allowed: noACLAllowed, NoACLs: true}
	}
	return Decision{}
}

type matching struct {
	deny, allow  *Binding
	resourceACLs bool
}

func (m *matching) check(a Action, bs []Binding) {
	for i := range bs {
		b := &bs[i]
		m.resourceACLs = true
		switch entryResult(a, b) {
		case PermDeny:
			m.deny = b
			return
		case PermAllow:
			m.allow = b
		}
	}
}

// entryResult is Kafka's StandardAuthorizerData.findResult: PermUnknown
// when b's entry does not apply to a.
func entryResult(a Action, b *Binding) Permission {
	if b.Principal != a.Principal && b.Principal != WildcardPrincipal {
		return PermUnknown
	}
	if b.Host != Wildcard && b.Host != a.Host {
		return PermUnknown
	}
	if b.Operation != OpAll && b.Operation != a.Operation {
		if b.Permission != PermAllow || !implies(b.Operation, a.Operation) {
			return PermUnknown
		}
	}
	return b.Permission
}

// implies reports whether an ALLOW ACL for have grants want too.
func implies(have, want Operation) bool {
	switch want {
	case OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

// SupportedOperations are the operations Kafka reports as authorized
// operations of a resource type (AclEntry.supportedOperations).
func SupportedOperations(t ResourceType) []Operation {
	switch t {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs}
	case ResourceCluster:
		return []Operation{OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe}
	case ResourceTransactionalID:
		return []Operation{OpDescribe, OpWrite}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}

// AnyAllowed is the pattern part of Kafka's Authorizer.authorizeByResourceType
// (asked after Decide on the name "hardcode" did not allow): whether some
// ALLOW ACL lets the principal do op on some resource of type t that no
// DENY ACL takes back. ALL counts as op; implications do not apply.
func (s *Set) AnyAllowed(principal, host string, op Operation, t ResourceType) bool {
	if t <= ResourceAny || t > ResourceUser {
		return false
	}
	ti := &s.byType[t]
	applies := func(b *Binding) bool {
		return (b.Host == Wildcard || b.Host == host) &&
			(b.Principal == principal || b.Principal == WildcardPrincipal) &&
			(b.Operation == op || b.Operation == OpAll)
	}
	denyLit, denyPre := map[string]bool{}, map[string]bool{}
	var allowLit, allowPre []string
	wildAllow := false
	for name, bs := range ti.literal {
		for i := range bs {
			if !applies(&bs[i]) {
				continue
			}
			if bs[i].Permission == PermDeny {
				if name == Wildcard {
					return false
				}
				denyLit[name] = true
			} else if name == Wildcard {
				wildAllow = true
			} else {
				allowLit = append(allowLit, name)
			}
		}
	}
	for name, bs := range ti.prefixed {
		for i := range bs {
			if !applies(&bs[i]) {
				continue
			}
			if bs[i].Permission == PermDeny {
				denyPre[name] = true
			} else {
				allowPre = append(allowPre, name)
			}
		}
	}
	if wildAllow {
		return true
	}
	dominated := func(name string) bool {
		for l := 1; l <= len(name); l++ {
			if denyPre[name[:l]] {
				return true
			}
		}
		return false
	}
	for _, name := range allowLit {
		if !denyLit[name] && !dominated(name) {
			return true
		}
	}
	for _, name := range allowPre {
		if !dominated(name) {
			return true
		}
	}
	return false
}
