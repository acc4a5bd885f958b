package httpsec

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"weir/broker/tlsconf"
)

// Confluent's names (rest-utils, which Schema Registry's HTTP server is
// built on) of the HTTP authentication settings, and weir's users file.
const (
	// AuthenticationMethod is NONE (default) or BASIC.
	AuthenticationMethod = "authentication.method"
	// AuthenticationRealm names the realm in WWW-Authenticate.
	AuthenticationRealm = "authentication.realm"
	// AuthenticationRoles are the roles allowed in at all; "*" (the
	// default) is any user of the users file.
	AuthenticationRoles = "authentication.roles"
	// AuthenticationSkipPaths are paths served without authentication
	// (exact, or a prefix ending in "/*").
	AuthenticationSkipPaths = "authentication.skip.paths"
	// AuthRestrictedRoles are read-only roles (Confluent Control Center's
	// name): a user all of whose allowed roles are restricted may read
	// but not write.
	AuthRestrictedRoles = "auth.restricted.roles"
	// AuthenticationUsersFile is the users file (the file Confluent's JAAS
	// PropertyFileLoginModule's file= option names): weir's own setting.
	AuthenticationUsersFile = "authentication.users.file"
)

// Schema Registry's own names (rest-utils) that differ from Kafka's.
const (
	RegistryListeners        = "listeners"
	SSLClientAuthentication  = "ssl.client.authentication" // NONE, REQUESTED, REQUIRED
	sslClientAuthLegacy      = "ssl.client.auth"           // true/false in rest-utils
	sslKeystorePassword      = "ssl.keystore.password"
	sslTruststorePassword    = "ssl.truststore.password"
	sslEndpointIdentAlgoritm = "ssl.endpoint.identification.algorithm"
)

// AdminListener is the admin HTTP listener's name: its settings in the
// broker's --config carry Kafka's per-listener prefix listener.name.admin.
const AdminListener = "ADMIN"

// AdminPrefix prefixes the admin listener's settings.
const AdminPrefix = "listener.name.admin."

// authNames are the authentication settings, without prefix.
var authNames = []string{AuthenticationMethod, AuthenticationRealm, AuthenticationRoles,
	AuthenticationSkipPaths, AuthRestrictedRoles, AuthenticationUsersFile}

// IsAuthName reports whether name is an HTTP authentication setting.
func IsAuthName(name string) bool { return slices.Contains(authNames, name) }

// Settings are one HTTP listener's address and security.
type Settings struct {
	// Listener names the listener in logs and errors.
	Listener string
	// Addr is host:port.
	Addr string
	// TLS is the listener's TLS configuration; nil serves plain HTTP.
	TLS *tlsconf.Config
	// Auth is the authentication; nil lets every request in.
	Auth *AuthConfig
	// ReloadEvery is how often the key and trust store files are checked
	// for changes (0: TLSReloadEvery).
	ReloadEvery time.Duration
}

// Scheme is "https" with TLS, else "http".
func (s *Settings) Scheme() string {
	if s != nil && s.TLS != nil {
		return "https"
	}
	return "http"
}

// AuthConfig is BASIC authentication of one listener.
type AuthConfig struct {
	Realm      string
	Roles      []string // nil: any user
	Restricted []string
	SkipPaths  []string
	UsersFile  string
}

// ParseAddr splits a listener address: host:port (plain HTTP) or a URL
// http://host:port or https://host:port (Confluent's listeners syntax).
func ParseAddr(s string) (scheme, addr string, err error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return "", "", fmt.Errorf("%q: want host:port or http(s)://host:port", s)
		}
		return "http", s, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", "", fmt.Errorf("%q: want http(s)://host:port", s)
	}
	scheme = strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", "", fmt.Errorf("%q: scheme %q: want http or https", s, u.Scheme)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", "", fmt.Errorf("%q: want scheme://host:port only", s)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return "", "", fmt.Errorf("%q: want a port: %s://host:port", s, scheme)
	}
	return scheme, u.Host, nil
}

// parseAuth reads the authentication settings (names without prefix;
// name(k) is how the setting is called in errors).
func parseAuth(s map[string]string, name func(string) string) (*AuthConfig, error) {
	method := strings.ToUpper(strings.TrimSpace(s[AuthenticationMethod]))
	switch method {
	case "", "NONE":
		for _, k := range authNames {
			if k != AuthenticationMethod && strings.TrimSpace(s[k]) != "" {
				return nil, fmt.Errorf("%s is set but %s is not BASIC", name(k), name(AuthenticationMethod))
			}
		}
		return nil, nil
	case "BASIC":
	case "BEARER":
		return nil, fmt.Errorf("%s=BEARER is not supported: use BASIC", name(AuthenticationMethod))
	default:
		return nil, fmt.Errorf("%s: %q: want NONE or BASIC", name(AuthenticationMethod), s[AuthenticationMethod])
	}
	a := &AuthConfig{Realm: strings.TrimSpace(s[AuthenticationRealm]), UsersFile: strings.TrimSpace(s[AuthenticationUsersFile])}
	if a.UsersFile == "" {
		return nil, fmt.Errorf("%s=BASIC needs %s: a file of `user: password,role...` lines", name(AuthenticationMethod), name(AuthenticationUsersFile))
	}
	if a.Realm == "" {
		a.Realm = "weir"
	}
	if strings.ContainsAny(a.Realm, "\"\\\r\n") {
		return nil, fmt.Errorf("%s: %q: no quotes, backslashes or line breaks", name(AuthenticationRealm), a.Realm)
	}
	roles := tlsconf.SplitList(s[AuthenticationRoles])
	if len(roles) > 0 && !slices.Contains(roles, "*") {
		a.Roles = roles
	}
	a.Restricted = tlsconf.SplitList(s[AuthRestrictedRoles])
	for _, p := range tlsconf.SplitList(s[AuthenticationSkipPaths]) {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("%s: %q: a path starts with /", name(AuthenticationSkipPaths), p)
		}
		a.SkipPaths = append(a.SkipPaths, p)
	}
	return a, nil
}

// ParseAdmin reads the admin listener's settings: addr (--admin-addr:
// host:port or http(s)://host:port) and the broker's --config, where TLS
// is Kafka's ssl.* overridden by listener.name.admin.ssl.* (as for any
// listener) and authentication is listener.name.admin.authentication.*.
func ParseAdmin(addr string, configs map[string]string) (*Settings, error) {
	scheme, hostport, err := ParseAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	st := &Settings{Listener: "admin", Addr: hostport}
	if scheme == "https" {
		c, err := tlsconf.Parse(AdminListener, tlsconf.ListenerSettings(configs, AdminListener), configs)
		if err != nil {
			return nil, fmt.Errorf("admin listener (https): %w", err)
		}
		st.TLS = c
	}
	auth := map[string]string{}
	for k, v := range configs {
		if rest, ok := strings.CutPrefix(k, AdminPrefix); ok && IsAuthName(rest) {
			auth[rest] = v
		}
	}
	if st.Auth, err = parseAuth(auth, func(k string) string { return AdminPrefix + k }); err != nil {
		return nil, fmt.Errorf("admin listener: %w", err)
	}
	return st, nil
}

// RegistryNames are the settings --registry-config accepts: Confluent
// Schema Registry's names (schema-registry.properties).
func RegistryNames() []string {
	n := append([]string{RegistryListeners, SSLClientAuthentication, sslClientAuthLegacy, sslKeystorePassword,
		sslTruststorePassword, sslEndpointIdentAlgoritm,
		tlsconf.SSLKeystoreType, tlsconf.SSLKeystoreLocation, tlsconf.SSLKeystoreCertChain, tlsconf.SSLKeystoreKey,
		tlsconf.SSLKeyPassword, tlsconf.SSLTruststoreType, tlsconf.SSLTruststoreLocation, tlsconf.SSLTruststoreCertificates,
		tlsconf.SSLEnabledProtocols, tlsconf.SSLProtocol, tlsconf.SSLCipherSuites}, authNames...)
	sort.Strings(n)
	return n
}

// ParseRegistry reads the schema registry listener's settings: addr
// (--registry-addr; "" when listeners is in configs) and configs with
// Confluent Schema Registry's names (listeners=https://host:port, ssl.*,
// ssl.client.authentication, authentication.*). Unknown names are
// refused, so a setting weir does not honour is never silently ignored.
func ParseRegistry(addr string, configs map[string]string) (*Settings, error) {
	known := RegistryNames()
	for k := range configs {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("schema registry config %q is not known (weir reads %s)", k, strings.Join(known, ", "))
		}
	}
	name := func(k string) string { return k }
	if l, ok := configs[RegistryListeners]; ok {
		if strings.TrimSpace(addr) != "" {
			return nil, fmt.Errorf("schema registry: set either --registry-addr or %s, not both", RegistryListeners)
		}
		if ls := tlsconf.SplitList(l); len(ls) != 1 {
			return nil, fmt.Errorf("schema registry %s: %q: weir serves one listener", RegistryListeners, l)
		}
		addr = l
	}
	scheme, hostport, err := ParseAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("schema registry %s: %w", RegistryListeners, err)
	}
	st := &Settings{Listener: "schema registry", Addr: hostport}
	ssl := map[string]string{}
	for k, v := range configs {
		switch k {
		case sslKeystorePassword, sslTruststorePassword, sslEndpointIdentAlgoritm, SSLClientAuthentication, sslClientAuthLegacy:
		default:
			if strings.HasPrefix(k, "ssl.") {
				ssl[k] = strings.TrimSpace(v)
			}
		}
	}
	ca, err := registryClientAuth(configs)
	if err != nil {
		return nil, err
	}
	if ca != "" {
		ssl[tlsconf.SSLClientAuth] = ca
	}
	switch {
	case scheme == "https":
		c, err := tlsconf.Parse("REGISTRY", ssl, nil)
		if err != nil {
			return nil, fmt.Errorf("schema registry (https): %w", err)
		}
		st.TLS = c
	case ssl[tlsconf.SSLKeystoreLocation] != "" || ssl[tlsconf.SSLKeystoreKey] != "":
		return nil, fmt.Errorf("schema registry: a key store is set but %s is http://%s: use https://", RegistryListeners, hostport)
	}
	if st.Auth, err = parseAuth(configs, name); err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	return st, nil
}

// registryClientAuth maps rest-utils' ssl.client.authentication (NONE,
// REQUESTED, REQUIRED) and its older boolean ssl.client.auth to Kafka's
// ssl.client.auth values.
func registryClientAuth(configs map[string]string) (string, error) {
	v, ok := configs[SSLClientAuthentication]
	old, oldOK := configs[sslClientAuthLegacy]
	if ok && oldOK {
		return "", fmt.Errorf("schema registry: set %s or the older %s, not both", SSLClientAuthentication, sslClientAuthLegacy)
	}
	if ok {
		switch strings.ToUpper(strings.TrimSpace(v)) {
		case "NONE":
			return "none", nil
		case "REQUESTED":
			return "requested", nil
		case "REQUIRED":
			return "required", nil
		}
		return "", fmt.Errorf("schema registry %s: %q: want NONE, REQUESTED or REQUIRED", SSLClientAuthentication, v)
	}
	if oldOK {
		switch strings.ToLower(strings.TrimSpace(old)) {
		case "true":
			return "required", nil
		case "false":
			return "none", nil
		}
		return "", fmt.Errorf("schema registry %s: %q: want true or false (or use %s=NONE|REQUESTED|REQUIRED)", sslClientAuthLegacy, old, SSLClientAuthentication)
	}
	return "", nil
}
