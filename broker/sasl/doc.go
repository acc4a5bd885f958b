// Package sasl authenticates Kafka clients on SASL_PLAINTEXT and
// SASL_SSL listeners: the mechanisms PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
// and OAUTHBEARER as Apache Kafka's broker serves them, the listener's SASL
// settings under Kafka's names, and the audit log of failed
// authentications. The Kafka wire side (SaslHandshake, SaslAuthenticate,
// the state of a connection before it is authenticated, re-authentication)
// is in broker/kafka (sasl.go, 17_sasl_handshake.go, 36_sasl_authenticate.go);
// this package knows nothing of the wire.
//
// Files:
//
//	config.go     Config from Kafka's broker settings: sasl.enabled.mechanisms
//	              (also listener.name.<l>.sasl.enabled.mechanisms),
//	              connections.max.reauth.ms, sasl.server.max.receive.size,
//	              the PLAIN users (JAAS), the OAUTHBEARER settings
//	jaas.go       Kafka's sasl.jaas.config syntax (login module, flag, options)
//	server.go     Server: one listener's mechanisms; Exchange, one
//	              authentication in progress; Failure, what went wrong
//	plain.go      PLAIN (RFC 4616) against the JAAS users
//	scram.go      SCRAM-SHA-256/512 (RFC 5802, RFC 7677) with
//	              github.com/xdg-go/scram, against salted credentials
//	credential.go ScramCredential: salt, iterations, stored key, server key,
//	              computed from a salted password or a password; Kafka's
//	              limits on iterations
//	addscram.go   Kafka's --add-scram syntax (kafka-storage format):
//	              SCRAM-SHA-512=[name=admin,password=...]
//	oauth.go      OAUTHBEARER (RFC 7628): the client's initial response,
//	              JWT validation (RS256/384/512, ES256/384/512, PS*)
//	              against a JWKS file (go-jose), audience, issuer, clock
//	              skew, the principal from the sub claim
//	audit.go      failed authentications on the logger "auth.audit",
//	              rate-limited per client host
//
// Users. PLAIN users are the user_<name>="<password>" options of the
// PlainLoginModule in listener.name.<l>.plain.sasl.jaas.config (or
// sasl.jaas.config), the form a Kafka broker reads: they live in the
// broker's properties file. As in Kafka, SCRAM users are not PLAIN users:
// a SCRAM credential holds no password, only what RFC 5802 lets a server
// verify a proof with, so PLAIN cannot check a password against it. SCRAM
// credentials are in the replicated cluster metadata (record type
// user_scram_credential), managed with AlterUserScramCredentials and
// DescribeUserScramCredentials (kafka-configs --entity-type users) or
// given at first start with weir broker --add-scram. OAUTHBEARER users are
// whoever holds a valid token: the principal is its sub claim
// (sasl.oauthbearer.sub.claim.name).
//
// Principals are User:<name>; the Kafka layer puts them in Request.Principal
// for the authorizer and quotas.
//
// Secrets: no password, salted password, proof or token ever reaches a
// log line or an error text; failures carry the name as the client claimed
// it, the mechanism and a reason.
package sasl
