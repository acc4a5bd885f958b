// Package httpsec secures weir's HTTP listeners, the admin listener
// (broker/admin) and the schema registry (broker/node/registry.go): TLS
// through broker/tlsconf (PEM stores, encrypted keys, client certificates,
// reload on file change) and HTTP basic authentication as Confluent
// Schema Registry does it.
//
// Configuration, one story for both listeners: the address says the
// scheme (host:port or http://host:port is plain HTTP, https://host:port
// is TLS); TLS settings have Kafka's ssl.* names; authentication settings
// have Confluent's (rest-utils) names:
//
//	authentication.method      NONE (default) or BASIC
//	authentication.realm       realm of WWW-Authenticate (default weir)
//	authentication.roles       roles allowed in; * (default): any user
//	auth.restricted.roles      read-only roles (Confluent Control
//	                           Center's name): a user whose allowed roles
//	                           are all restricted may read, not write
//	authentication.skip.paths  paths open without credentials (exact, or
//	                           /prefix/*), e.g. /metrics,/healthz,/readyz
//	authentication.users.file  the users file (weir's name: Confluent
//	                           points its JAAS PropertyFileLoginModule's
//	                           file= option at the same file)
//
// The schema registry takes them as Confluent's schema-registry.properties
// does (`weir broker --registry-config NAME=VALUE`): listeners=https://
// host:port, ssl.keystore.location, ssl.key.password,
// ssl.truststore.location, ssl.client.authentication=NONE|REQUESTED|
// REQUIRED (or the older ssl.client.auth=true|false), ssl.enabled.
// protocols, ssl.cipher.suites and the authentication.* settings; names
// weir does not honour are refused. The admin listener is the broker's
// listener named ADMIN: `--admin-addr https://host:port`, TLS from the
// broker's ssl.* overridden by listener.name.admin.ssl.*, authentication
// from listener.name.admin.authentication.* (and
// listener.name.admin.auth.restricted.roles) in the broker's --config.
//
// Users file: Jetty's PropertyUserStore format, one user a line,
// `user: password[,role...]` ('=' or white space also separate the name;
// '#' and '!' start comments). Passwords are plain, Jetty's MD5:<hex MD5
// of the password> or BCRYPT:<bcrypt hash> (weir's; `htpasswd -nbB u p`
// prints one after the colon). Jetty's CRYPT: and OBF: forms are refused
// with a clear error. Plain and MD5 passwords are compared in constant
// time (an unknown user costs a comparison too); a matching bcrypt
// password is remembered (its SHA-256) so a client pays bcrypt once. The
// file is re-read when it changes (checked at most once a second on use);
// one that does not load is logged and the users in use kept.
//
// Answers, as Confluent's: no or bad credentials get 401 with
// WWW-Authenticate: Basic realm="..." and {"error_code":40101,"message":
// "Unauthorized"}; a user with no role of authentication.roles, or a
// read-only user asking to write, gets 403 with {"error_code":40301,...}.
// What writes is the caller's (registry.IsWrite: every method but GET and
// HEAD, less the lookup and compatibility POSTs; the admin listener: any
// method but GET, HEAD and OPTIONS).
//
// Failed authentications are logged (warning "HTTP authentication
// failed") with the listener, the user as claimed, the client's host, the
// method, the path and the reason, at most 5 a second (bursts of 20; the
// next line counts those dropped); passwords are never logged or put in
// errors. Plain HTTP sent to a TLS listener gets net/http's 400 and the
// connection is closed; a handshake that never finishes is cut after the
// server's ReadHeaderTimeout.
package httpsec
