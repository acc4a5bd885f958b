package topicconfig

import "strings"

// SASL settings (issue 16 item 2), read by broker/sasl; here they are
// known names with Kafka's types and defaults, as a broker config or a
// per-listener override (listener.name.<l>.<name>, or
// listener.name.<l>.<mechanism>.<name> as Kafka writes sasl.jaas.config).
var saslDefs = []Def{
	{Name: "sasl.enabled.mechanisms", Type: TypeList, Default: "GSSAPI", HasDefault: true, Honoured: true,
		Doc: "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (Kafka's default GSSAPI is not served: set it)."},
	{Name: "sasl.jaas.config", Type: TypePassword, Honoured: true,
		Doc: `JAAS login module of a mechanism; PLAIN users are its user_<name>="<password>" options.`},
	{Name: "java.security.auth.login.config", Type: TypeString, Honoured: true,
		Doc: "A JAAS file whose KafkaServer (or <listener>.KafkaServer) section holds the PLAIN users (weir: a broker config; Kafka: a JVM property)."},
	{Name: "connections.max.reauth.ms", Type: TypeLong, Default: "0", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "SASL session lifetime (KIP-368): a client must re-authenticate within it, or its next request closes the connection; 0: none."},
	{Name: "sasl.server.max.receive.size", Type: TypeInt, Default: "524288", HasDefault: true, Honoured: true, check: atLeast(64),
		Doc: "Largest frame a client may send before it is authenticated."},
	{Name: "sasl.server.callback.handler.class", Type: TypeClass, Honoured: true,
		Doc: "OAUTHBEARER: only org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler (JWT validation) is accepted."},
	{Name: "sasl.oauthbearer.jwks.endpoint.url", Type: TypeString, Honoured: true, Doc: "OAUTHBEARER: the JWKS, as file:///path."},
	{Name: "sasl.oauthbearer.expected.audience", Type: TypeList, Honoured: true, Doc: "OAUTHBEARER: a token's aud must hold one of these."},
	{Name: "sasl.oauthbearer.expected.issuer", Type: TypeString, Honoured: true, Doc: "OAUTHBEARER: a token's iss must be this."},
	{Name: "sasl.oauthbearer.clock.skew.seconds", Type: TypeInt, Default: "30", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "OAUTHBEARER: clock difference allowed when checking exp, nbf and iat."},
	{Name: "sasl.oauthbearer.sub.claim.name", Type: TypeString, Default: "sub", HasDefault: true, Honoured: true, Doc: "OAUTHBEARER: the claim naming the principal."},
	{Name: "sasl.oauthbearer.scope.claim.name", Type: TypeString, Default: "scope", HasDefault: true, Doc: "OAUTHBEARER: the scope claim (not enforced, as in Kafka)."},
}

func init() {
	for i := range saslDefs {
		brokerDefs = append(brokerDefs, saslDefs[i])
		brokerByName[saslDefs[i].Name] = &saslDefs[i]
	}
}

// saslMechanismPrefixes are the lower-cased mechanism prefixes of
// per-listener SASL overrides.
var saslMechanismPrefixes = []string{"plain.", "scram-sha-256.", "scram-sha-512.", "oauthbearer."}

// saslOverride returns the definition of a per-listener SASL setting
// (cfg is what follows listener.name.<l>.).
func saslOverride(cfg string) (*Def, bool) {
	for _, p := range saslMechanismPrefixes {
		if rest, ok := strings.CutPrefix(cfg, p); ok {
			cfg = rest
			break
		}
	}
	if !strings.HasPrefix(cfg, "sasl.") && cfg != "connections.max.reauth.ms" {
		return nil, false
	}
	d, ok := brokerByName[cfg]
	return d, ok
}
