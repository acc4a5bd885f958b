package topicconfig

// Authorizer settings (issue 16 item 3), read by broker/acl.
var authorizerDefs = []Def{
	{Name: "authorizer.class.name", Type: TypeString, Default: "", HasDefault: true, Honoured: true,
		Doc: "Authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer) switches ACLs on; empty: every request is allowed."},
	{Name: "super.users", Type: TypeString, Honoured: true, Doc: "Principals allowed everything, separated by ';' (User:admin;User:CN=broker)."},
	{Name: "allow.everyone.if.no.acl.found", Type: TypeBoolean, Default: "false", HasDefault: true, Honoured: true,
		Doc: "Whether a resource no ACL names is open to every principal."},
}
