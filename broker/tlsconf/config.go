package tlsconf

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Kafka's names of the TLS settings weir reads.
const (
	SSLKeystoreType           = "ssl.keystore.type"
	SSLKeystoreLocation       = "ssl.keystore.location"
	SSLKeystoreCertChain      = "ssl.keystore.certificate.chain"
	SSLKeystoreKey            = "ssl.keystore.key"
	SSLKeyPassword            = "ssl.key.password"
	SSLTruststoreType         = "ssl.truststore.type"
	SSLTruststoreLocation     = "ssl.truststore.location"
	SSLTruststoreCertificates = "ssl.truststore.certificates"
	SSLClientAuth             = "ssl.client.auth"
	SSLEnabledProtocols       = "ssl.enabled.protocols"
	SSLProtocol               = "ssl.protocol"
	SSLCipherSuites           = "ssl.cipher.suites"
)

// ListenerSettings returns the ssl.* settings of listener name: the
// broker-wide ssl.* values overridden by Kafka's per-listener
// listener.name.<lower-case name>.ssl.* ones.
func ListenerSettings(configs map[string]string, name string) map[string]string {
	out := map[string]string{}
	for k, v := range configs {
		if strings.HasPrefix(k, "ssl.") {
			out[k] = strings.TrimSpace(v)
		}
	}
	prefix := "listener.name." + strings.ToLower(name) + "."
	for k, v := range configs {
		if rest, ok := strings.CutPrefix(k, prefix); ok && strings.HasPrefix(rest, "ssl.") {
			out[rest] = strings.TrimSpace(v)
		}
	}
	return out
}

// ClientAuth is ssl.client.auth.
type ClientAuth string

// The ssl.client.auth values.
const (
	ClientAuthNone      ClientAuth = "none"
	ClientAuthRequested ClientAuth = "requested"
	ClientAuthRequired  ClientAuth = "required"
)

// Config is one listener's TLS configuration, parsed from its settings.
type Config struct {
	// Listener names the listener in errors and logs.
	Listener string
	// KeystoreFile is ssl.keystore.location ("" with inline PEM).
	KeystoreFile string
	// TruststoreFile is ssl.truststore.location.
	TruststoreFile string
	ClientAuth     ClientAuth
	MinVersion     uint16
	MaxVersion     uint16
	CipherSuites   []uint16 // nil: Go's defaults
	Mapper         *Mapper
	// VerifyHostname is ssl.endpoint.identification.algorithm=https (the
	// default): as a client (to other brokers) the server's certificate
	// must name the host dialed.
	VerifyHostname bool

	keyPassword string
	inlineChain []byte
	inlineKey   []byte
	inlineTrust []byte
}

// setting names a setting of the listener in errors: its override name
// when it has one.
func setting(listener, name string, configs map[string]string) string {
	if listener != "" {
		if _, ok := configs["listener.name."+strings.ToLower(listener)+"."+name]; ok {
			return "listener.name." + strings.ToLower(listener) + "." + name
		}
	}
	return name
}

// Parse validates the ssl.* settings of listener (from ListenerSettings;
// configs are all the broker's settings, for naming overrides in errors).
// Errors name the setting and never contain keys or passwords.
func Parse(listener string, s, configs map[string]string) (*Config, error) {
	name := func(k string) string { return setting(listener, k, configs) }
	c := &Config{Listener: listener, ClientAuth: ClientAuthNone, keyPassword: s[SSLKeyPassword], VerifyHostname: true}
	if v, ok := s[SSLEndpointIdentificationAlgorithm]; ok {
		switch strings.ToLower(v) {
		case "https":
		case "":
			c.VerifyHostname = false
		default:
			return nil, fmt.Errorf("%s: %q: want https or empty (no host name check)", name(SSLEndpointIdentificationAlgorithm), v)
		}
	}
	for _, k := range []string{SSLKeystoreType, SSLTruststoreType} {
		if v, ok := s[k]; ok && !strings.EqualFold(v, "PEM") {
			return nil, fmt.Errorf("%s: %q is not supported: weir reads PEM (convert a JKS or PKCS12 store with keytool/openssl)", name(k), v)
		}
	}
	c.KeystoreFile = s[SSLKeystoreLocation]
	c.inlineChain, c.inlineKey = []byte(s[SSLKeystoreCertChain]), []byte(s[SSLKeystoreKey])
	switch {
	case c.KeystoreFile != "" && (len(c.inlineChain) > 0 || len(c.inlineKey) > 0):
		return nil, fmt.Errorf("%s: set either a key store file or %s and %s, not both", name(SSLKeystoreLocation), SSLKeystoreCertChain, SSLKeystoreKey)
	case c.KeystoreFile == "" && len(c.inlineChain) == 0 && len(c.inlineKey) == 0:
		return nil, fmt.Errorf("listener %s is SSL but has no key store: set %s (a PEM file with the key and certificate chain) or %s and %s",
			listener, SSLKeystoreLocation, SSLKeystoreCertChain, SSLKeystoreKey)
	case c.KeystoreFile == "" && (len(c.inlineChain) == 0 || len(c.inlineKey) == 0):
		return nil, fmt.Errorf("%s and %s must be set together", name(SSLKeystoreCertChain), name(SSLKeystoreKey))
	}
	c.TruststoreFile = s[SSLTruststoreLocation]
	c.inlineTrust = []byte(s[SSLTruststoreCertificates])
	if c.TruststoreFile != "" && len(c.inlineTrust) > 0 {
		return nil, fmt.Errorf("%s: set either a trust store file or %s, not both", name(SSLTruststoreLocation), SSLTruststoreCertificates)
	}
	if v, ok := s[SSLClientAuth]; ok {
		switch ClientAuth(strings.ToLower(v)) {
		case ClientAuthNone, ClientAuthRequested, ClientAuthRequired:
			c.ClientAuth = ClientAuth(strings.ToLower(v))
		default:
			return nil, fmt.Errorf("%s: %q: want required, requested or none", name(SSLClientAuth), v)
		}
	}
	if c.ClientAuth != ClientAuthNone && c.TruststoreFile == "" && len(c.inlineTrust) == 0 {
		return nil, fmt.Errorf("%s=%s needs a trust store to verify client certificates: set %s or %s", name(SSLClientAuth), c.ClientAuth, SSLTruststoreLocation, SSLTruststoreCertificates)
	}
	// Versions: ssl.enabled.protocols bounds them; ssl.protocol is the
	// highest one offered (TLS: any).
	enabled := "TLSv1.2,TLSv1.3"
	if v, ok := s[SSLEnabledProtocols]; ok {
		enabled = v
	}
	for _, p := range SplitList(enabled) {
		var ver uint16
		switch p {
		case "TLSv1.2":
			ver = tls.VersionTLS12
		case "TLSv1.3":
			ver = tls.VersionTLS13
		case "TLSv1", "TLSv1.1", "SSLv3":
			return nil, fmt.Errorf("%s: %s is not supported (insecure); use TLSv1.2 and TLSv1.3", name(SSLEnabledProtocols), p)
		default:
			return nil, fmt.Errorf("%s: unknown protocol %q (want TLSv1.2, TLSv1.3)", name(SSLEnabledProtocols), p)
		}
		if c.MinVersion == 0 || ver < c.MinVersion {
			c.MinVersion = ver
		}
		c.MaxVersion = max(c.MaxVersion, ver)
	}
	if c.MinVersion == 0 {
		return nil, fmt.Errorf("%s: no protocol enabled", name(SSLEnabledProtocols))
	}
	if v, ok := s[SSLProtocol]; ok {
		switch v {
		case "TLSv1.2":
			c.MaxVersion = min(c.MaxVersion, tls.VersionTLS12)
		case "TLSv1.3", "TLS":
		default:
			return nil, fmt.Errorf("%s: %q: want TLSv1.2 or TLSv1.3", name(SSLProtocol), v)
		}
		if c.MaxVersion < c.MinVersion {
			return nil, fmt.Errorf("%s=%s is below every version of %s", name(SSLProtocol), v, SSLEnabledProtocols)
		}
	}
	if v := s[SSLCipherSuites]; v != "" {
		byName := map[string]uint16{}
		for _, cs := range tls.CipherSuites() {
			byName[cs.Name] = cs.ID
		}
		for _, n := range SplitList(v) {
			id, ok := byName[n]
			if !ok {
				bad := slices.ContainsFunc(tls.InsecureCipherSuites(), func(cs *tls.CipherSuite) bool { return cs.Name == n })
				if bad {
					return nil, fmt.Errorf("%s: %s is insecure and not supported", name(SSLCipherSuites), n)
				}
				return nil, fmt.Errorf("%s: unknown cipher suite %q (want IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", name(SSLCipherSuites), n)
			}
			c.CipherSuites = append(c.CipherSuites, id)
		}
	}
	rules, ok := s[SSLPrincipalMappingRules]
	if !ok {
		rules = "DEFAULT" // Kafka's default; set but empty means no rule
	}
	m, err := ParseRules(rules)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", listener, err)
	}
	c.Mapper = m
	return c, nil
}

// SplitList reads a list setting (ssl.enabled.protocols,
// ssl.cipher.suites, the admin listener's lists): comma-separated items,
// spaces around them trimmed, empty items dropped.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// material is the key store and trust store in use.
type material struct {
	cert     tls.Certificate
	pool     *x509.CertPool // nil: no trust store
	keySum   [32]byte       // of the key store file's content
	trustSum [32]byte
}

// Server is the TLS side of one listener: the key store and trust store
// (reloaded when their files change), the tls.Config for new handshakes
// and the principal of a verified client certificate.
type Server struct {
	cfg  *Config
	log  *zap.Logger
	cur  atomic.Pointer[material]
	base *tls.Config

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// NewServer loads the key and trust stores of cfg.
func NewServer(cfg *Config, lg *zap.Logger) (*Server, error) {
	if lg == nil {
		lg = zap.NewNop()
	}
	s := &Server{cfg: cfg, log: lg, stop: make(chan struct{})}
	m, err := s.load(nil)
	if err != nil {
		return nil, err
	}
	s.cur.Store(m)
	s.base = &tls.Config{
		MinVersion:   cfg.MinVersion,
		MaxVersion:   cfg.MaxVersion,
		CipherSuites: cfg.CipherSuites,
	}
	// Client certificates are verified against the trust store by
	// TLSConfig's VerifyPeerCertificate (as crypto/tls would), so a
	// refused one is named in the error.
	switch cfg.ClientAuth {
	case ClientAuthRequired:
		s.base.ClientAuth = tls.RequireAnyClientCert
	case ClientAuthRequested:
		s.base.ClientAuth = tls.RequestClientCert
	}
	return s, nil
}

// load reads the stores. With prev, files whose stamp and content did not
// change are not parsed again.
func (s *Server) load(prev *material) (*material, error) {
	c := s.cfg
	m := &material{}
	if prev != nil {
		*m = *prev
	}
	if c.KeystoreFile != "" {
		data, sum, changed, err := readChanged(c.KeystoreFile, SSLKeystoreLocation, prev, func(p *material) [32]byte { return p.keySum })
		if err != nil {
			return nil, err
		}
		if changed {
			cert, err := parseKeyStore(data, nil, c.keyPassword)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", SSLKeystoreLocation, c.KeystoreFile, err)
			}
			m.cert, m.keySum = cert, sum
		}
	} else if prev == nil {
		cert, err := parseKeyStore(c.inlineChain, c.inlineKey, c.keyPassword)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", SSLKeystoreCertChain, SSLKeystoreKey, err)
		}
		m.cert = cert
	}
	switch {
	case c.TruststoreFile != "":
		data, sum, changed, err := readChanged(c.TruststoreFile, SSLTruststoreLocation, prev, func(p *material) [32]byte { return p.trustSum })
		if err != nil {
			return nil, err
		}
		if changed {
			pool, _, err := parseTrustStore(data)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", SSLTruststoreLocation, c.TruststoreFile, err)
			}
			m.pool, m.trustSum = pool, sum
		}
	case len(c.inlineTrust) > 0 && prev == nil:
		pool, _, err := parseTrustStore(c.inlineTrust)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", SSLTruststoreCertificates, err)
		}
		m.pool = pool
	}
	return m, nil
}

// readChanged reads a store file and returns its content and hash, and
// whether the hash differs from the one in prev (got by sum; always true
// without prev). The content is read and hashed on every check: a
// modification time and size can stay the same across a change (two
// same-size writes within the file system's timestamp granularity, a copy
// that keeps the old file's time), and the files are small.
func readChanged(path, setting string, prev *material, sum func(*material) [32]byte) ([]byte, [32]byte, bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, [32]byte{}, false, fmt.Errorf("%s: %w", setting, err)
	}
	h := sha256.Sum256(data)
	return data, h, prev == nil || h != sum(prev), nil
}

// TLSConfig returns the server configuration: every handshake takes the
// key and trust stores in use at that moment.
func (s *Server) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: s.base.MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			c := s.base.Clone()
			c.Certificates = []tls.Certificate{m.cert}
			c.ClientCAs = m.pool
			if c.ClientAuth != tls.NoClientCert {
				pool := m.pool
				c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
					return verifyPeer(raw, pool, x509.ExtKeyUsageClientAuth, "")
				}
			}
			return c, nil
		},
	}
}

// Certificate returns the leaf certificate in use.
func (s *Server) Certificate() *x509.Certificate { return s.cur.Load().cert.Leaf }

// Reload reads the key and trust store files again if they changed. On an
// error the stores in use are kept.
func (s *Server) Reload() (changed bool, err error) {
	prev := s.cur.Load()
	m, err := s.load(prev)
	if err != nil {
		return false, err
	}
	changed = m.keySum != prev.keySum || m.trustSum != prev.trustSum
	s.cur.Store(m)
	return changed, nil
}

// Watch polls the files every interval until ctx ends or Close, reloading
// what changed; a file that does not load is logged and the stores in use
// kept (the error is logged once until the file changes again).
func (s *Server) Watch(ctx context.Context, interval time.Duration) {
	if s.cfg.KeystoreFile == "" && s.cfg.TruststoreFile == "" {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		var lastErr string
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				return
			case <-t.C:
			}
			changed, err := s.Reload()
			switch {
			case err != nil:
				if err.Error() != lastErr {
					s.log.Error("TLS key or trust store changed but does not load; keeping the one in use",
						zap.String("listener", s.cfg.Listener), zap.Error(err))
				}
				lastErr = err.Error()
			case changed:
				lastErr = ""
				s.log.Info("TLS key or trust store reloaded", zap.String("listener", s.cfg.Listener),
					zap.String("subject", s.Certificate().Subject.String()), zap.Time("not_after", s.Certificate().NotAfter))
			default:
				lastErr = ""
			}
		}
	}()
}

// Close stops Watch.
func (s *Server) Close() {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
}

// Anonymous is the principal of a connection with no client identity.
const Anonymous = "User:ANONYMOUS"

// Principal returns the Kafka principal of a finished handshake: "User:"
// and the client certificate's subject DN mapped by
// ssl.principal.mapping.rules, or User:ANONYMOUS without a certificate.
func (s *Server) Principal(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	dn, err := SubjectDN(cs.PeerCertificates[0])
	if err != nil {
		return "", err
	}
	name, err := s.cfg.Mapper.Map(dn)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}
