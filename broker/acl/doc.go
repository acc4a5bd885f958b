// Package acl is weir's authorizer: Kafka's ACL model (Binding: resource
// type, name and pattern; principal, host, operation, permission) and
// the decisions of Kafka's StandardAuthorizer, for the Kafka handlers.
//
// Files:
//
//	types.go       resource types, pattern types, operations, permissions
//	               with Kafka's codes and names; Binding (an ACL) and its
//	               validation as Kafka's controller does it; Filter (ANY,
//	               MATCH) for DescribeAcls and DeleteAcls
//	matcher.go     Set: the ACLs indexed by resource type, literal name and
//	               prefix length; Decide is a pure function of the set (DENY
//	               wins, then ALLOW; READ/WRITE/DELETE/ALTER imply DESCRIBE,
//	               ALTER_CONFIGS implies DESCRIBE_CONFIGS, for ALLOW only;
//	               a resource no ACL names falls to
//	               allow.everyone.if.no.acl.found); AnyAllowed
//	               (authorizeByResourceType); SupportedOperations
//	config.go      authorizer.class.name (StandardAuthorizer or the legacy
//	               AclAuthorizer name switch ACLs on; another class is an
//	               error), super.users, allow.everyone.if.no.acl.found
//	authorizer.go  Authorizer: super users, the current Set (swapped when the
//	               metadata's ACLs change), authorized-operations bit fields
//	audit.go       the audit log on the logger named kafka.authorizer.logger:
//	               each denial at info with principal, host, operation,
//	               resource type, name and pattern, the request and the rule;
//	               rate-limited per principal/host/operation/resource (once,
//	               then at most once per 10 s with the count in between);
//	               allowances at debug only
//
// A decision costs a map lookup for the literal name, one for the "*"
// wildcard and one per distinct prefix length of the type's prefixed ACLs,
// whatever the number of ACLs. The ACLs themselves are stored in the
// replicated metadata (broker/metadata acls.go: create_acls and
// delete_acls records), so every broker has the same set and it survives
// restarts.
package acl
