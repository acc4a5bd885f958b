package sasl

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Kafka's config names.
const (
	EnabledMechanisms  = "sasl.enabled.mechanisms"
	JAASConfig         = "sasl.jaas.config"
	MaxReauthMs        = "connections.max.reauth.ms"
	MaxReceiveSizeName = "sasl.server.max.receive.size"
	CallbackHandler    = "sasl.server.callback.handler.class"
	JWKSURL            = "sasl.oauthbearer.jwks.endpoint.url"
	ExpectedAudience   = "sasl.oauthbearer.expected.audience"
	ExpectedIssuer     = "sasl.oauthbearer.expected.issuer"
	ClockSkewSeconds   = "sasl.oauthbearer.clock.skew.seconds"
	SubClaimName       = "sasl.oauthbearer.sub.claim.name"
	ScopeClaimName     = "sasl.oauthbearer.scope.claim.name"

	// DefaultMaxReceiveSize is Kafka's sasl.server.max.receive.size.
	DefaultMaxReceiveSize = 524288
	// OAuthValidatorHandler is Kafka's JWT-validating callback handler,
	// the one weir implements.
	OAuthValidatorHandler = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
)

// Config is one SASL listener's settings.
type Config struct {
	Listener   string
	Mechanisms []string
	// PlainUsers are the PLAIN users and their passwords.
	PlainUsers map[string]string
	OAuth      OAuthConfig
	// MaxReauth is connections.max.reauth.ms (0: no session expiry).
	MaxReauth time.Duration
	// MaxReceiveSize is sasl.server.max.receive.size.
	MaxReceiveSize int32
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// OAuthConfig is the OAUTHBEARER validation.
type OAuthConfig struct {
	// JWKSFile is the path of the JWKS file
	// (sasl.oauthbearer.jwks.endpoint.url=file:///...).
	JWKSFile  string
	Audience  []string
	Issuer    string
	ClockSkew time.Duration
	SubClaim  string
	// ScopeClaim is sasl.oauthbearer.scope.claim.name (read, not enforced:
	// Kafka does not enforce scopes either).
	ScopeClaim string
}

// Parse reads listener's SASL settings from the broker configs. A
// setting is looked up as listener.name.<listener>.<mechanism>.<name>
// (mechanism-specific settings: sasl.jaas.config, the OAUTHBEARER ones,
// connections.max.reauth.ms), then listener.name.<listener>.<name>, then
// <name>; listener and mechanism are lower-cased, as Kafka writes them.
func Parse(listener string, configs map[string]string) (*Config, error) {
	lp := "listener.name." + strings.ToLower(listener) + "."
	get := func(mech, name string) (string, bool) {
		if mech != "" {
			if v, ok := configs[lp+strings.ToLower(mech)+"."+name]; ok {
				return strings.TrimSpace(v), true
			}
		}
		if v, ok := configs[lp+name]; ok {
			return strings.TrimSpace(v), true
		}
		v, ok := configs[name]
		return strings.TrimSpace(v), ok
	}
	c := &Config{Listener: listener, MaxReceiveSize: DefaultMaxReceiveSize}
	mechs, ok := get("", EnabledMechanisms)
	if !ok || mechs == "" {
		return nil, fmt.Errorf("listener %s is a SASL listener but %s is not set (Kafka's default, GSSAPI, is not supported; weir serves %s)",
			listener, EnabledMechanisms, strings.Join(Supported, ", "))
	}
	seen := map[string]bool{}
	for _, m := range strings.Split(mechs, ",") {
		m = strings.TrimSpace(m)
		if m == "" || seen[m] {
			continue
		}
		supported := false
		for _, s := range Supported {
			supported = supported || s == m
		}
		if !supported {
			return nil, fmt.Errorf("listener %s: %s: mechanism %s is not supported (weir serves %s)", listener, EnabledMechanisms, m, strings.Join(Supported, ", "))
		}
		seen[m] = true
		c.Mechanisms = append(c.Mechanisms, m)
	}
	if v, ok := get("", MaxReceiveSizeName); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 64 {
			return nil, fmt.Errorf("listener %s: %s=%q: want a size in bytes of at least 64", listener, MaxReceiveSizeName, v)
		}
		c.MaxReceiveSize = int32(n)
	}
	for _, m := range c.Mechanisms {
		if v, ok := get(m, MaxReauthMs); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("listener %s: %s=%q: want milliseconds >= 0", listener, MaxReauthMs, v)
			}
			if d := time.Duration(n) * time.Millisecond; c.MaxReauth == 0 || d < c.MaxReauth {
				c.MaxReauth = d
			}
		}
	}
	if seen[Plain] {
		entries, err := plainJAAS(listener, get, configs)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
		if c.PlainUsers, err = plainUsers(entries); err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
	}
	if seen[OAuthBearer] {
		if err := c.parseOAuth(func(name string) (string, bool) { return get(OAuthBearer, name) }); err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
	}
	return c, nil
}

// plainJAAS finds the PLAIN login module: the sasl.jaas.config setting,
// else the JAAS file's section <listener>.KafkaServer (listener
// lower-cased, as Kafka looks it up) or KafkaServer.
func plainJAAS(listener string, get func(mech, name string) (string, bool), configs map[string]string) ([]JAASEntry, error) {
	if v, ok := get(Plain, JAASConfig); ok {
		return ParseJAAS(v)
	}
	path := strings.TrimSpace(configs[JAASFileConfig])
	if path == "" {
		return nil, fmt.Errorf("PLAIN is enabled but neither listener.name.%s.plain.%s nor %s (a JAAS file) gives its users (user_<name>=\"<password>\" options of %s)",
			strings.ToLower(listener), JAASConfig, JAASFileConfig, PlainLoginModule)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", JAASFileConfig, err)
	}
	sections, err := ParseJAASFile(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", JAASFileConfig, path, err)
	}
	for _, name := range []string{strings.ToLower(listener) + ".KafkaServer", "KafkaServer"} {
		if e, ok := sections[name]; ok {
			return e, nil
		}
	}
	return nil, fmt.Errorf("%s %s has no section %s.KafkaServer or KafkaServer", JAASFileConfig, path, strings.ToLower(listener))
}

func (c *Config) parseOAuth(get func(string) (string, bool)) error {
	if h, ok := get(CallbackHandler); ok && h != OAuthValidatorHandler {
		return fmt.Errorf("OAUTHBEARER: %s=%s is not supported: weir validates JWTs as %s does", CallbackHandler, h, OAuthValidatorHandler)
	}
	u, ok := get(JWKSURL)
	if !ok || u == "" {
		return fmt.Errorf("OAUTHBEARER is enabled but %s (file:///path/to/jwks.json) is not set", JWKSURL)
	}
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "file" || pu.Path == "" {
		return fmt.Errorf("%s=%q: weir reads the JWKS from a file: want file:///path", JWKSURL, u)
	}
	o := OAuthConfig{JWKSFile: pu.Path, ClockSkew: 30 * time.Second, SubClaim: "sub", ScopeClaim: "scope"}
	if v, ok := get(ExpectedAudience); ok {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.Audience = append(o.Audience, a)
			}
		}
	}
	o.Issuer, _ = get(ExpectedIssuer)
	if v, ok := get(ClockSkewSeconds); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%q: want seconds >= 0", ClockSkewSeconds, v)
		}
		o.ClockSkew = time.Duration(n) * time.Second
	}
	if v, ok := get(SubClaimName); ok && v != "" {
		o.SubClaim = v
	}
	if v, ok := get(ScopeClaimName); ok && v != "" {
		o.ScopeClaim = v
	}
	c.OAuth = o
	return nil
}
