package acl

import (
	"fmt"
	"strings"
)

// ResourceType is Kafka's ResourceType (org.apache.kafka.common.resource),
// with its wire codes.
type ResourceType int8

// Resource types. Unknown and Any appear only in filters (Any) or as
// refused input (Unknown).
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

var resourceNames = [...]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}

func (t ResourceType) String() string {
	if t >= 0 && int(t) < len(resourceNames) {
		return resourceNames[t]
	}
	return fmt.Sprintf("ResourceType(%d)", int8(t))
}

// ClusterName is the name of the one cluster resource (Kafka's
// CLUSTER_NAME).
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal and host matching every one
// (in a LITERAL pattern for resource names; principals as "User:*").
const Wildcard = "*"

// WildcardPrincipal is the principal every principal matches.
const WildcardPrincipal = "User:*"

// PatternType is Kafka's PatternType.
type PatternType int8

// Pattern types: Literal and Prefixed are stored; Any and Match only
// filter (Match: every pattern that would apply to the named resource).
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

var patternNames = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}

func (p PatternType) String() string {
	if p >= 0 && int(p) < len(patternNames) {
		return patternNames[p]
	}
	return fmt.Sprintf("PatternType(%d)", int8(p))
}

// Operation is Kafka's AclOperation.
type Operation int8

// Operations with Kafka's codes. Any only filters; All in an ACL covers
// every operation.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

var opNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
	"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS", "TWO_PHASE_COMMIT"}

func (o Operation) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("AclOperation(%d)", int8(o))
}

// Permission is Kafka's AclPermissionType.
type Permission int8

// Permissions: Any only filters.
const (
	PermUnknown Permission = 0
	PermAny     Permission = 1
	PermDeny    Permission = 2
	PermAllow   Permission = 3
)

var permNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}

func (p Permission) String() string {
	if p >= 0 && int(p) < len(permNames) {
		return permNames[p]
	}
	return fmt.Sprintf("AclPermissionType(%d)", int8(p))
}

// Binding is one ACL: a resource pattern and an access control entry
// (Kafka's AclBinding).
type Binding struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName string       `json:"resource_name"`
	PatternType  PatternType  `json:"pattern_type"`
	Principal    string       `json:"principal"`
	Host         string       `json:"host"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

// String prints b as Kafka's AclBinding.toString does.
func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
}

// Validate checks a new ACL as Kafka's controller does
// (AclControlManager.validateNewAcl) plus the principal's Type:name
// form; the error says what is wrong (Kafka answers INVALID_REQUEST).
func (b Binding) Validate() error {
	switch {
	case b.ResourceType <= ResourceAny || b.ResourceType > ResourceUser:
		return fmt.Errorf("invalid resourceType %s", b.ResourceType)
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return fmt.Errorf("invalid patternType %s", b.PatternType)
	case b.Operation <= OpAny || b.Operation > OpTwoPhaseCommit:
		return fmt.Errorf("invalid operation %s", b.Operation)
	case b.Permission != PermAllow && b.Permission != PermDeny:
		return fmt.Errorf("invalid permissionType %s", b.Permission)
	case b.ResourceName == "":
		return fmt.Errorf("resource name should not be empty")
	case b.ResourceType == ResourceCluster && b.ResourceName != ClusterName:
		return fmt.Errorf("the only valid name for the CLUSTER resource is %s", ClusterName)
	}
	return ValidatePrincipal(b.Principal)
}

// ValidatePrincipal checks Kafka's principal form Type:name.
func ValidatePrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("invalid principal %q: want Type:name, e.g. User:alice", p)
	}
	return nil
}

// Filter selects ACLs (Kafka's AclBindingFilter). Empty strings in
// ResourceName, Principal and Host match every value (Kafka's null);
// ResourceAny, PatternAny, OpAny and PermAny match every value.
type Filter struct {
	ResourceType ResourceType `json:"resource_type"`
	ResourceName *string      `json:"resource_name,omitempty"`
	PatternType  PatternType  `json:"pattern_type"`
	Principal    *string      `json:"principal,omitempty"`
	Host         *string      `json:"host,omitempty"`
	Operation    Operation    `json:"operation"`
	Permission   Permission   `json:"permission"`
}

// Validate refuses filters with an UNKNOWN field (Kafka's validateFilter).
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == ResourceUnknown || f.ResourceType > ResourceUser || f.ResourceType < 0:
		return fmt.Errorf("unknown patternFilter: resourceType %s", f.ResourceType)
	case f.PatternType == PatternUnknown || f.PatternType > PatternPrefixed || f.PatternType < 0:
		return fmt.Errorf("unknown patternFilter: patternType %s", f.PatternType)
	case f.Operation == OpUnknown || f.Operation > OpTwoPhaseCommit || f.Operation < 0:
		return fmt.Errorf("unknown entryFilter: operation %s", f.Operation)
	case f.Permission == PermUnknown || f.Permission > PermAllow || f.Permission < 0:
		return fmt.Errorf("unknown entryFilter: permissionType %s", f.Permission)
	}
	return nil
}

// Matches reports whether b is selected by f (Kafka's
// AclBindingFilter.matches, ResourcePatternFilter.matches).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if !f.matchesPattern(b) {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermAny || f.Permission == b.Permission
}

func (f Filter) matchesPattern(b Binding) bool {
	switch f.PatternType {
	case PatternAny:
		return f.ResourceName == nil || *f.ResourceName == b.ResourceName
	case PatternMatch:
		if f.ResourceName == nil {
			return true
		}
		name := *f.ResourceName
		switch b.PatternType {
		case PatternLiteral:
			return b.ResourceName == name || b.ResourceName == Wildcard
		case PatternPrefixed:
			return strings.HasPrefix(name, b.ResourceName)
		}
		return false
	default:
		return f.PatternType == b.PatternType && (f.ResourceName == nil || *f.ResourceName == b.ResourceName)
	}
}
