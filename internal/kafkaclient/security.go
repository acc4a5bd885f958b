package kafkaclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/internal/pemfile"
)

// Kafka's security.protocol values.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// SASL mechanisms (sasl.mechanism).
const (
	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"
	MechOAuthBearer = "OAUTHBEARER"
)

// Secret is a value never printed (pemfile.Secret).
type Secret = pemfile.Secret

// Security is how a client connects: Kafka's security.protocol, the TLS
// side (SSL, SASL_SSL) and the SASL side (SASL_PLAINTEXT, SASL_SSL).
// The zero value is PLAINTEXT.
type Security struct {
	// Protocol is PLAINTEXT (""), SSL, SASL_PLAINTEXT or SASL_SSL.
	Protocol string
	TLS      pemfile.Client
	SASL     SASL
}

// SASL is the mechanism and its credentials.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER.
	Mechanism string
	// Username and Password for PLAIN and SCRAM.
	Username string
	Password Secret
	// Token is an OAUTHBEARER token (a JWT); TokenFile a file holding
	// one, read again at each authentication, so a token renewed in the
	// file is used by the next connection and re-authentication.
	Token     Secret
	TokenFile string
}

// UsesTLS reports whether the protocol is SSL or SASL_SSL.
func (s Security) UsesTLS() bool { return s.Protocol == SSL || s.Protocol == SASLSSL }

// UsesSASL reports whether the protocol is SASL_PLAINTEXT or SASL_SSL.
func (s Security) UsesSASL() bool { return s.Protocol == SASLPlaintext || s.Protocol == SASLSSL }

// Validate checks the settings hang together; errors name the Kafka
// client property.
func (s Security) Validate() error {
	switch s.Protocol {
	case "", Plaintext, SSL, SASLPlaintext, SASLSSL:
	default:
		return fmt.Errorf("%w: security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", ErrInvalid, s.Protocol)
	}
	if !s.UsesSASL() {
		if s.SASL != (SASL{}) {
			return fmt.Errorf("%w: sasl.* settings are given but security.protocol is %s: set it to SASL_SSL (or SASL_PLAINTEXT)", ErrInvalid, s.protocol())
		}
	} else if _, err := s.SASL.mechanism(); err != nil {
		return err
	}
	if !s.UsesTLS() && s.TLS != (pemfile.Client{}) {
		return fmt.Errorf("%w: ssl.* settings are given but security.protocol is %s: set it to SSL or SASL_SSL", ErrInvalid, s.protocol())
	}
	return nil
}

func (s Security) protocol() string {
	if s.Protocol == "" {
		return Plaintext
	}
	return s.Protocol
}

// opts returns the kgo options of s.
func (s Security) opts() ([]kgo.Opt, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if s.UsesTLS() {
		cfg, err := s.TLS.Config()
		if err != nil {
			return nil, fmt.Errorf("%w: ssl: %v", ErrInvalid, err)
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.UsesSASL() {
		m, err := s.SASL.mechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// TLSConfig is the TLS configuration of s (nil when the protocol does
// not use TLS).
func (s Security) TLSConfig() (*tls.Config, error) {
	if !s.UsesTLS() {
		return nil, nil
	}
	return s.TLS.Config()
}

func (a SASL) mechanism() (sasl.Mechanism, error) {
	need := func(what ...string) error {
		for i := 0; i+1 < len(what); i += 2 {
			if what[i+1] == "" {
				return fmt.Errorf("%w: sasl.mechanism %s needs %s", ErrInvalid, a.Mechanism, what[i])
			}
		}
		return nil
	}
	switch strings.ToUpper(a.Mechanism) {
	case MechPlain:
		if err := need("sasl.username", a.Username, "sasl.password", string(a.Password)); err != nil {
			return nil, err
		}
		return plain.Auth{User: a.Username, Pass: string(a.Password)}.AsMechanism(), nil
	case MechScramSHA256, MechScramSHA512:
		if err := need("sasl.username", a.Username, "sasl.password", string(a.Password)); err != nil {
			return nil, err
		}
		auth := scram.Auth{User: a.Username, Pass: string(a.Password)}
		if strings.ToUpper(a.Mechanism) == MechScramSHA256 {
			return auth.AsSha256Mechanism(), nil
		}
		return auth.AsSha512Mechanism(), nil
	case MechOAuthBearer:
		switch {
		case a.Token != "" && a.TokenFile != "":
			return nil, fmt.Errorf("%w: sasl.oauthbearer.token and sasl.oauthbearer.token.file are both set: keep one", ErrInvalid)
		case a.Token != "":
			return oauth.Auth{Token: string(a.Token)}.AsMechanism(), nil
		case a.TokenFile != "":
			if _, err := readToken(a.TokenFile); err != nil {
				return nil, err
			}
			file := a.TokenFile
			return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
				tok, err := readToken(file)
				return oauth.Auth{Token: tok}, err
			}), nil
		}
		return nil, fmt.Errorf("%w: sasl.mechanism OAUTHBEARER needs sasl.oauthbearer.token or sasl.oauthbearer.token.file", ErrInvalid)
	case "":
		return nil, fmt.Errorf("%w: security.protocol SASL_* needs sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER; Kafka's default GSSAPI is not supported)", ErrInvalid)
	}
	return nil, fmt.Errorf("%w: sasl.mechanism %q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", ErrInvalid, a.Mechanism)
}

// readToken reads an OAUTHBEARER token file (surrounding blanks dropped).
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: sasl.oauthbearer.token.file: %v", ErrInvalid, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%w: sasl.oauthbearer.token.file %s is empty", ErrInvalid, path)
	}
	return tok, nil
}
