// Package tlsconf is the TLS side of a broker's SSL listeners, configured
// with Kafka's ssl.* settings (a setting of one listener overrides the
// broker-wide one with Kafka's prefix listener.name.<lower-case name>.):
//
//	ssl.keystore.type=PEM            (the default here; JKS and PKCS12 are
//	                                 refused: convert them with keytool or
//	                                 openssl)
//	ssl.keystore.location            a PEM file holding the private key and
//	                                 the certificate chain, leaf first; or
//	ssl.keystore.certificate.chain   the chain and the key inline (PEM).
//	ssl.keystore.key
//	ssl.key.password                 the password of an encrypted PKCS#8 key
//	                                 ("ENCRYPTED PRIVATE KEY": PBES2 with
//	                                 PBKDF2-HMAC-SHA1/256/384/512 and AES-CBC
//	                                 or 3DES, what openssl pkcs8 -topk8 -v2
//	                                 and Java's tools write; PBES1 and the
//	                                 legacy OpenSSL "Proc-Type" encryption
//	                                 are refused with a clear error).
//	ssl.truststore.type=PEM
//	ssl.truststore.location          CA certificates client certificates must
//	ssl.truststore.certificates      chain to (file or inline PEM).
//	ssl.client.auth                  none (default), requested (a client
//	                                 certificate is verified if sent) or
//	                                 required (mutual TLS).
//	ssl.enabled.protocols            TLSv1.2,TLSv1.3 (default); TLSv1 and
//	                                 TLSv1.1 are refused.
//	ssl.protocol                     TLSv1.3 (default) or TLSv1.2: the
//	                                 highest version offered.
//	ssl.cipher.suites                TLS 1.2 suites by IANA name (TLS 1.3's
//	                                 are fixed in Go); insecure ones refused.
//	ssl.principal.mapping.rules      Kafka's rules (below); default DEFAULT.
//	ssl.endpoint.identification.algorithm
//	                                 https (default): as a client of another
//	                                 broker, the server's certificate must
//	                                 name the host dialed; "" checks only
//	                                 the chain.
//
// Broker to broker (peer.go): the inter-broker listener's and the
// controller listener's Server also dial, as Kafka's inter-broker clients
// use their listener's settings: ClientConfig presents the key store as
// the client certificate and verifies the other broker against the trust
// store; DialHandshake and AcceptHandshake run a handshake within a
// timeout ("no TLS handshake within 10s" for a silent peer). Client
// certificates are verified here rather than by crypto/tls, with the same
// rules, so a refused certificate is named: PeerCertError carries its
// subject DN for the logs. With TLS 1.3 a client learns that the server
// refused its certificate only at its first read: DialHandshake's
// callback hears of that too.
//
// Reloading: Server.Watch polls the key and trust store files (a hash of
// their content: size and modification time can stay the same across a
// change); new handshakes use the new material at once, connections
// already open keep theirs. A file
// that does not load (half written, a key that does not match the
// certificate) is logged once and the material in use is kept.
//
// Principal: a connection without a client certificate is User:ANONYMOUS;
// with one, User:<name>, where name is the certificate's subject DN in
// RFC 2253 form as Java's X500Principal.getName() writes it (SubjectDN:
// "CN=alice,OU=ops,O=Example,C=US") mapped by ssl.principal.mapping.rules.
// The rule engine (Mapper) follows Kafka's SslPrincipalMapper and passes
// its test cases: rules are split and parsed with Kafka's own grammar,
// RULE:pattern/replacement/[L|U] replaces with Java's replaceAll semantics
// ($n group references, \ escapes, Kafka's literal treatment of $n beyond
// the group count), DEFAULT is the DN itself, and a DN no rule matches
// fails the handshake's authentication. Patterns are Go regular
// expressions (RE2): Java's syntax less back-references and look-arounds,
// which fail at start with the rule named.
//
// Errors name the setting (with its listener.name prefix when the value
// came from an override) and never contain key material or passwords.
// tlstest makes CAs and certificates for tests.
package tlsconf
