// Package pemfile reads the PEM key and trust stores Kafka's
// ssl.keystore.type=PEM and ssl.truststore.type=PEM name: a private key
// (PKCS#8, encrypted PKCS#8 with PBES2 and a password, PKCS#1, SEC 1) with
// its certificate chain, and CA certificates. The broker's SSL listeners
// (broker/tlsconf) and every client weir makes (internal/kafkaclient, the
// Elasticsearch and MySQL connectors) read their files with it. Errors
// never contain key material or the password.
package pemfile
