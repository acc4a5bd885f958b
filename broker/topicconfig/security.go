package topicconfig

import "strings"

// Listener and TLS settings (issue 16). They are read by broker/listener
// and broker/tlsconf; here they are only known names with Kafka's types
// and defaults, so --config accepts them and DescribeConfigs lists them
// (passwords and keys as sensitive, without their values).
var securityDefs = []Def{
	{Name: "listener.security.protocol.map", Type: TypeString, Default: "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", HasDefault: true, Honoured: true,
		Doc: "Security protocol of each listener name, NAME:PROTOCOL,..."},
	{Name: "inter.broker.listener.name", Type: TypeString, Honoured: true, Doc: "Listener brokers use between themselves (default: the one named after security.inter.broker.protocol)."},
	{Name: "security.inter.broker.protocol", Type: TypeString, Default: "PLAINTEXT", HasDefault: true, Honoured: true,
		check: oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), Doc: "Security protocol between brokers (only one of this and inter.broker.listener.name)."},
	{Name: "controller.listener.names", Type: TypeList, Honoured: true, Doc: "Listeners of the controller quorum (with controller voters)."},
	{Name: "ssl.keystore.type", Type: TypeString, Default: "PEM", HasDefault: true, Honoured: true, check: oneOf("PEM"), Doc: "Key store format; weir reads PEM."},
	{Name: "ssl.keystore.location", Type: TypeString, Honoured: true, Doc: "PEM file holding the private key and the certificate chain (reloaded when it changes)."},
	{Name: "ssl.keystore.certificate.chain", Type: TypePassword, Honoured: true, Doc: "Certificate chain, PEM, inline."},
	{Name: "ssl.keystore.key", Type: TypePassword, Honoured: true, Doc: "Private key, PEM (PKCS#8, encrypted with ssl.key.password or not), inline."},
	{Name: "ssl.keystore.password", Type: TypePassword, Doc: "Not used with PEM files."},
	{Name: "ssl.key.password", Type: TypePassword, Honoured: true, Doc: "Password of an encrypted PKCS#8 private key."},
	{Name: "ssl.truststore.type", Type: TypeString, Default: "PEM", HasDefault: true, Honoured: true, check: oneOf("PEM"), Doc: "Trust store format; weir reads PEM."},
	{Name: "ssl.truststore.location", Type: TypeString, Honoured: true, Doc: "PEM file of the CA certificates client certificates must chain to (reloaded when it changes)."},
	{Name: "ssl.truststore.certificates", Type: TypePassword, Honoured: true, Doc: "CA certificates, PEM, inline."},
	{Name: "ssl.truststore.password", Type: TypePassword, Doc: "Not used with PEM files."},
	{Name: "ssl.client.auth", Type: TypeString, Default: "none", HasDefault: true, Honoured: true, check: oneOf("required", "requested", "none"),
		Doc: "Client certificates: required (mutual TLS), requested or none."},
	{Name: "ssl.enabled.protocols", Type: TypeList, Default: "TLSv1.2,TLSv1.3", HasDefault: true, Honoured: true, Doc: "TLS versions accepted: TLSv1.2, TLSv1.3."},
	{Name: "ssl.protocol", Type: TypeString, Default: "TLSv1.3", HasDefault: true, Honoured: true, check: oneOf("TLSv1.2", "TLSv1.3", "TLS"),
		Doc: "Highest TLS version offered."},
	{Name: "ssl.cipher.suites", Type: TypeList, Honoured: true, Doc: "TLS 1.2 cipher suites by IANA name (TLS 1.3 suites are fixed); default: Go's secure list."},
	{Name: "ssl.principal.mapping.rules", Type: TypeString, Default: "DEFAULT", HasDefault: true, Honoured: true,
		Doc: "Rules mapping a client certificate's subject DN to a principal name: RULE:pattern/replacement/[L|U],...,DEFAULT."},
	{Name: "ssl.endpoint.identification.algorithm", Type: TypeString, Default: "https", HasDefault: true, Doc: "Client-side host name check; no effect on the broker."},
	{Name: "ssl.engine.factory.class", Type: TypeClass, Doc: "Not supported."},
}

// listenerPrefix is Kafka's per-listener override prefix:
// listener.name.<lower-case listener name>.<config>.
const listenerPrefix = "listener.name."

// listenerOverride returns the definition of a per-listener override
// (listener.name.<name>.ssl.*): the def of the config it overrides.
func listenerOverride(name string) (*Def, bool) {
	rest, ok := strings.CutPrefix(name, listenerPrefix)
	if !ok {
		return nil, false
	}
	_, cfg, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, false
	}
	if !strings.HasPrefix(cfg, "ssl.") {
		return saslOverride(cfg)
	}
	d, ok := brokerByName[cfg]
	return d, ok
}

// Sensitive reports whether broker config name holds a secret (Kafka's
// PASSWORD type): its value is never shown or logged.
func Sensitive(name string) bool {
	if d, ok := brokerByName[name]; ok {
		return d.Type == TypePassword
	}
	if d, ok := listenerOverride(name); ok {
		return d.Type == TypePassword
	}
	return false
}
