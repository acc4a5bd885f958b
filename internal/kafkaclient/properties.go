package kafkaclient

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"weir/internal/pemfile"
)

// Settings are the connection settings of a Kafka client properties set
// (a --command-config file, the client_config map of a pipeline's broker
// block): Kafka's names for the Kafka side, Confluent's for the schema
// registry. Brokers and ClientID are empty when the properties leave
// them out.
type Settings struct {
	Brokers  []string // bootstrap.servers
	ClientID string   // client.id
	Security Security
	Registry Registry
}

// Options returns the client options of s over the defaults in base
// (brokers and client id kept from base when s leaves them out).
func (s Settings) Options(base Options) Options {
	if len(s.Brokers) > 0 {
		base.Brokers = s.Brokers
	}
	if s.ClientID != "" {
		base.ClientID = s.ClientID
	}
	base.Security = s.Security
	return base
}

// The client properties weir reads. Kafka's names where Kafka has one;
// sasl.username, sasl.password and sasl.oauthbearer.token(.file) stand for
// the credentials Kafka clients put in sasl.jaas.config.
const (
	PropBootstrap          = "bootstrap.servers"
	PropClientID           = "client.id"
	PropSecurityProtocol   = "security.protocol"
	PropSASLMechanism      = "sasl.mechanism"
	PropSASLUsername       = "sasl.username"
	PropSASLPassword       = "sasl.password"
	PropOAuthToken         = "sasl.oauthbearer.token"
	PropOAuthTokenFile     = "sasl.oauthbearer.token.file"
	PropTruststoreType     = "ssl.truststore.type"
	PropTruststoreLocation = "ssl.truststore.location"
	PropTruststoreCerts    = "ssl.truststore.certificates"
	PropKeystoreType       = "ssl.keystore.type"
	PropKeystoreLocation   = "ssl.keystore.location"
	PropKeystoreChain      = "ssl.keystore.certificate.chain"
	PropKeystoreKey        = "ssl.keystore.key"
	PropKeyPassword        = "ssl.key.password"
	PropEndpointIdent      = "ssl.endpoint.identification.algorithm"
	PropServerName         = "ssl.server.name"
	PropInsecureSkipVerify = "ssl.insecure.skip.verify"

	PropRegistryURL        = "schema.registry.url"
	PropBasicAuthSource    = "basic.auth.credentials.source"
	PropBasicAuthUserInfo  = "basic.auth.user.info"
	PropRegistryTruststore = "schema.registry.ssl.truststore.location"
	PropRegistryKeystore   = "schema.registry.ssl.keystore.location"
	PropRegistryKeyPass    = "schema.registry.ssl.key.password"
)

// sensitive are the properties whose values are secrets.
var sensitive = map[string]bool{
	PropSASLPassword: true, PropOAuthToken: true, PropKeystoreKey: true, PropKeyPassword: true,
	PropBasicAuthUserInfo: true, PropRegistryKeyPass: true,
	"sasl.jaas.config": true, "ssl.keystore.password": true, "ssl.truststore.password": true,
	"schema.registry.ssl.keystore.password": true, "schema.registry.ssl.truststore.password": true,
}

// Sensitive reports whether the client property name holds a secret
// (its value is never printed).
func Sensitive(name string) bool {
	n := strings.ToLower(name)
	return sensitive[n] || strings.HasSuffix(n, ".password") || strings.HasSuffix(n, ".token")
}

// Redact returns props with every sensitive value replaced by
// [redacted], for printing.
func Redact(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		if Sensitive(k) && v != "" {
			v = pemfile.Redacted
		}
		out[k] = v
	}
	return out
}

// known are the properties ParseProperties reads; others (producer and
// consumer tuning in a shared file) are returned as ignored, as Kafka's
// tools warn about configs they do not use.
var known = map[string]bool{}

func init() {
	for _, p := range []string{PropBootstrap, PropClientID, PropSecurityProtocol, PropSASLMechanism, PropSASLUsername,
		PropSASLPassword, PropOAuthToken, PropOAuthTokenFile, PropTruststoreType, PropTruststoreLocation,
		PropTruststoreCerts, PropKeystoreType, PropKeystoreLocation, PropKeystoreChain, PropKeystoreKey,
		PropKeyPassword, PropEndpointIdent, PropServerName, PropInsecureSkipVerify, PropRegistryURL,
		PropBasicAuthSource, PropBasicAuthUserInfo, PropRegistryTruststore, PropRegistryKeystore,
		PropRegistryKeyPass} {
		known[p] = true
	}
}

// ParseProperties reads client settings from Kafka client properties.
// It returns the names it does not use (sorted), for a warning.
// Refused: JKS and PKCS12 stores (convert them to PEM), sasl.jaas.config
// (use sasl.username and sasl.password), GSSAPI. Errors name the
// property and never hold a secret value.
func ParseProperties(props map[string]string) (Settings, []string, error) {
	var s Settings
	var ignored []string
	get := func(k string) string { return strings.TrimSpace(props[k]) }
	for k := range props {
		if !known[k] {
			ignored = append(ignored, k)
		}
	}
	sort.Strings(ignored)
	if _, ok := props["sasl.jaas.config"]; ok {
		return s, ignored, fmt.Errorf("%w: sasl.jaas.config is not read by weir: give the credentials as sasl.username and sasl.password (or sasl.oauthbearer.token / sasl.oauthbearer.token.file)", ErrInvalid)
	}
	if v := get(PropBootstrap); v != "" {
		bs, err := SplitBrokers(v)
		if err != nil {
			return s, ignored, fmt.Errorf("%w: %s %q names no broker", ErrInvalid, PropBootstrap, v)
		}
		s.Brokers = bs
	}
	s.ClientID = get(PropClientID)
	s.Security.Protocol = strings.ToUpper(get(PropSecurityProtocol))
	for _, st := range []string{PropTruststoreType, PropKeystoreType} {
		if v := get(st); v != "" && !strings.EqualFold(v, "PEM") {
			return s, ignored, fmt.Errorf("%w: %s %s is not supported: weir reads PEM stores (convert with keytool -importkeystore and openssl)", ErrInvalid, st, v)
		}
	}
	t := &s.Security.TLS
	t.CAFile, t.CAPEM = get(PropTruststoreLocation), props[PropTruststoreCerts]
	t.CertFile, t.CertPEM, t.KeyPEM = get(PropKeystoreLocation), props[PropKeystoreChain], Secret(props[PropKeystoreKey])
	t.KeyPassword = Secret(props[PropKeyPassword])
	t.ServerName = get(PropServerName)
	if v, ok := props[PropEndpointIdent]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "":
			t.NoHostnameCheck = true
		case "https":
		default:
			return s, ignored, fmt.Errorf("%w: %s %q: want https or empty (no host name check)", ErrInvalid, PropEndpointIdent, v)
		}
	}
	var err error
	if t.InsecureSkipVerify, err = boolProp(props, PropInsecureSkipVerify); err != nil {
		return s, ignored, err
	}
	a := &s.Security.SASL
	a.Mechanism = strings.ToUpper(get(PropSASLMechanism))
	a.Username, a.Password = get(PropSASLUsername), Secret(props[PropSASLPassword])
	a.Token, a.TokenFile = Secret(strings.TrimSpace(props[PropOAuthToken])), get(PropOAuthTokenFile)
	if err := s.Security.Validate(); err != nil {
		return s, ignored, err
	}
	s.Registry, err = parseRegistry(props)
	return s, ignored, err
}

func boolProp(props map[string]string, k string) (bool, error) {
	v, ok := props[k]
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("%w: %s %q: want true or false", ErrInvalid, k, v)
	}
	return b, nil
}

// ReadPropertiesFile reads a Java properties file (key=value, key:value
// or key value lines; # and ! comments; backslash continuation lines and
// escapes, \uXXXX included), as Kafka's tools read --command-config.
func ReadPropertiesFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ParsePropertiesText(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParsePropertiesText parses the text of a Java properties file. Errors
// give the line number and never the value.
func ParsePropertiesText(text string) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	lineNo, start := 0, 0
	var logical strings.Builder
	cont := false
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if cont {
			line = strings.TrimLeft(line, " \t\f")
		} else {
			start = lineNo
			line = strings.TrimLeft(line, " \t\f")
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
		}
		// An odd number of trailing backslashes continues the line.
		n := len(line) - len(strings.TrimRight(line, `\`))
		cont = n%2 == 1
		if cont {
			line = line[:len(line)-1]
		}
		logical.WriteString(line)
		if cont {
			continue
		}
		k, v, err := splitProperty(logical.String())
		logical.Reset()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		m[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cont {
		k, v, err := splitProperty(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		m[k] = v
	}
	return m, nil
}

// splitProperty splits a logical line at the first unescaped =, : or
// blank and unescapes both sides.
func splitProperty(line string) (string, string, error) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	key, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	k, err := unescape(key)
	if err != nil {
		return "", "", fmt.Errorf("key: %w", err)
	}
	v, err := unescape(rest)
	if err != nil {
		return "", "", fmt.Errorf("value of %s: %w", k, err)
	}
	return k, v, nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			if c != '\\' {
				b.WriteByte(c)
			}
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`malformed \uxxxx escape`)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uxxxx escape`)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size - 1
		}
	}
	return b.String(), nil
}
