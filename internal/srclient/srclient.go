// Package srclient builds every schema registry client weir makes (the
// weir CLI's schema, produce and consume commands; the pipelines runner
// through kafkaclient.Registry; the Avro connectors through
// kafkaclient.OpenRegistry and their schema_registry_config): franz-go's
// sr.Client over http or https, with HTTP basic authentication and TLS
// settings in one place. internal/kafkaclient's layering test keeps
// sr.NewClient out of every other package.
//
// Settings, as Confluent's clients name them:
//
//	URLs       comma-separated registry URLs, http:// or https:// (a bare
//	           host:port is http://). User info in a URL
//	           (https://user:password@host:8081) is basic auth, Confluent's
//	           basic.auth.credentials.source=URL.
//	UserInfo   user:password, Confluent's basic.auth.user.info
//	           (basic.auth.credentials.source=USER_INFO); wins over a URL's.
//	CAFile     PEM CA certificates to verify the registry's certificate
//	           (schema.registry.ssl.truststore.location); default: the
//	           system's roots.
//	CertFile   PEM client certificate chain for registries requiring
//	           mutual TLS (schema.registry.ssl.keystore.location), with
//	           its key unless KeyFile is set.
//	KeyFile    PEM key of CertFile.
//	KeyPassword decrypts an encrypted PKCS#8 key
//	           (schema.registry.ssl.key.password; internal/pemfile).
//
// Env fills unset options from WEIR_REGISTRY, WEIR_REGISTRY_USER_INFO,
// WEIR_REGISTRY_CA_FILE, WEIR_REGISTRY_CERT_FILE, WEIR_REGISTRY_KEY_FILE,
// WEIR_REGISTRY_KEY_PASSWORD.
// Redact hides a URL's password for logs and errors; errors never hold
// one.
package srclient

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"weir/internal/pemfile"

	"github.com/twmb/franz-go/pkg/sr"
)

// Environment variables read by Env.
const (
	EnvURL      = "WEIR_REGISTRY"
	EnvUserInfo = "WEIR_REGISTRY_USER_INFO"
	EnvCAFile   = "WEIR_REGISTRY_CA_FILE"
	EnvCertFile = "WEIR_REGISTRY_CERT_FILE"
	EnvKeyFile  = "WEIR_REGISTRY_KEY_FILE"
	EnvKeyPass  = "WEIR_REGISTRY_KEY_PASSWORD"
)

// Options configure a registry client.
type Options struct {
	URLs     string
	UserInfo string
	CAFile   string
	CertFile string
	KeyFile  string
	// KeyPassword decrypts an encrypted PKCS#8 key; it prints as
	// [redacted].
	KeyPassword pemfile.Secret
	// UserAgent is sent with every request (default franz-go's).
	UserAgent string
}

// Env returns o with its unset fields taken from the environment.
func (o Options) Env() Options {
	set := func(p *string, env string) {
		if *p == "" {
			*p = strings.TrimSpace(os.Getenv(env))
		}
	}
	set(&o.URLs, EnvURL)
	set(&o.UserInfo, EnvUserInfo)
	set(&o.CAFile, EnvCAFile)
	set(&o.CertFile, EnvCertFile)
	set(&o.KeyFile, EnvKeyFile)
	if o.KeyPassword == "" {
		o.KeyPassword = pemfile.Secret(os.Getenv(EnvKeyPass))
	}
	return o
}

// New builds a client.
func New(o Options) (*sr.Client, error) {
	var urls []string
	var user, pass string
	haveURLCreds := false
	for _, u := range strings.Split(o.URLs, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if !strings.Contains(u, "://") {
			u = "http://" + u
		}
		pu, err := url.Parse(u)
		if err != nil {
			return nil, fmt.Errorf("schema registry URL %s: not a URL", Redact(u))
		}
		if s := strings.ToLower(pu.Scheme); s != "http" && s != "https" {
			return nil, fmt.Errorf("schema registry URL %s: scheme %q: want http or https", Redact(u), pu.Scheme)
		}
		if pu.User != nil {
			p, _ := pu.User.Password()
			if haveURLCreds && (pu.User.Username() != user || p != pass) {
				return nil, fmt.Errorf("schema registry URLs carry different credentials: give them once (user info)")
			}
			user, pass, haveURLCreds = pu.User.Username(), p, true
			pu.User = nil
		}
		urls = append(urls, pu.String())
	}
	if len(urls) == 0 {
		return nil, errors.New("no schema registry URL")
	}
	if o.UserInfo != "" {
		u, p, ok := strings.Cut(o.UserInfo, ":")
		if !ok || u == "" {
			return nil, errors.New("schema registry user info: want user:password")
		}
		user, pass = u, p
	}
	opts := []sr.ClientOpt{sr.URLs(urls...)}
	if o.UserAgent != "" {
		opts = append(opts, sr.UserAgent(o.UserAgent))
	}
	if user != "" {
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	if o.CAFile != "" || o.CertFile != "" || o.KeyFile != "" || o.KeyPassword != "" {
		tc, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		opts = append(opts, sr.DialTLSConfig(tc))
	}
	return sr.NewClient(opts...)
}

func tlsConfig(o Options) (*tls.Config, error) {
	if o.CertFile == "" && (o.KeyFile != "" || o.KeyPassword != "") {
		return nil, errors.New("schema registry client key: set the client certificate file too")
	}
	tc, err := pemfile.Client{CAFile: o.CAFile, CertFile: o.CertFile, KeyFile: o.KeyFile, KeyPassword: o.KeyPassword}.Config()
	if err != nil {
		return nil, fmt.Errorf("schema registry %w", err)
	}
	return tc, nil
}

// Redact returns the URL list s with passwords replaced by "xxxxx".
func Redact(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
				p = u.String()
			}
		} else if err != nil && strings.Contains(p, "@") {
			p = "(unparsable URL)"
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}
