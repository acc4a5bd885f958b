package sasl

import (
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// The mechanism names, as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
)

// Supported lists the mechanisms weir serves.
var Supported = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// ScramStore finds a user's SCRAM credential for a mechanism; the node
// looks it up in the current metadata image.
type ScramStore func(mechanism, user string) (ScramCredential, bool)

// Server authenticates the clients of one listener.
type Server struct {
	cfg   *Config
	scram ScramStore
	oauth *oauthValidator
	audit *Audit
	now   func() time.Time
}

// NewServer returns the server of cfg's listener; scram is needed when a
// SCRAM mechanism is enabled, audit may be nil (no audit log).
func NewServer(cfg *Config, scram ScramStore, audit *Audit) (*Server, error) {
	s := &Server{cfg: cfg, scram: scram, audit: audit, now: time.Now}
	if cfg.Now != nil {
		s.now = cfg.Now
	}
	for _, m := range cfg.Mechanisms {
		switch m {
		case ScramSHA256, ScramSHA512:
			if scram == nil {
				return nil, fmt.Errorf("listener %s: %s is enabled but there is no SCRAM credential store", cfg.Listener, m)
			}
		case OAuthBearer:
			v, err := newOAuthValidator(cfg.OAuth, s.now)
			if err != nil {
				return nil, fmt.Errorf("listener %s: %w", cfg.Listener, err)
			}
			s.oauth = v
		}
	}
	return s, nil
}

// Listener is the listener's name.
func (s *Server) Listener() string { return s.cfg.Listener }

// Mechanisms returns the enabled mechanisms in configuration order (the
// list SaslHandshake answers with).
func (s *Server) Mechanisms() []string { return s.cfg.Mechanisms }

// Enabled reports whether mechanism is enabled on the listener.
func (s *Server) Enabled(mechanism string) bool { return slices.Contains(s.cfg.Mechanisms, mechanism) }

// MaxReauth is connections.max.reauth.ms (0: sessions do not expire).
func (s *Server) MaxReauth() time.Duration { return s.cfg.MaxReauth }

// MaxReceiveSize is sasl.server.max.receive.size: the largest frame a
// client may send before it is authenticated.
func (s *Server) MaxReceiveSize() int32 { return s.cfg.MaxReceiveSize }

// Start begins an authentication with an enabled mechanism.
func (s *Server) Start(mechanism string) (Exchange, error) {
	switch {
	case !s.Enabled(mechanism):
		return nil, fmt.Errorf("SASL mechanism %q is not enabled on listener %s", mechanism, s.cfg.Listener)
	case mechanism == Plain:
		return &plainExchange{users: s.cfg.PlainUsers}, nil
	case mechanism == ScramSHA256 || mechanism == ScramSHA512:
		return newScramExchange(mechanism, s.scram)
	case mechanism == OAuthBearer:
		return &oauthExchange{v: s.oauth}, nil
	}
	return nil, fmt.Errorf("SASL mechanism %q is not supported", mechanism)
}

// Audit logs a failed authentication (nothing when the server has no
// audit log).
func (s *Server) Audit(f Failure) {
	if s.audit != nil {
		s.audit.Failed(f)
	}
}

// Exchange is one authentication in progress: the client's tokens in,
// the server's tokens out, until Done or an error.
type Exchange interface {
	// Step takes the client's next token and returns the server's
	// answer (possibly empty). An error ends the exchange; it is an
	// *Error.
	Step(token []byte) ([]byte, error)
	// Done reports whether the client is authenticated.
	Done() bool
	// User is the authenticated user name once Done; before, the name
	// the client claimed (for the audit log), "" if none yet.
	User() string
	// Expiry is when the credential expires (an OAUTHBEARER token's
	// exp), zero for none.
	Expiry() time.Time
}

// Error is a failed authentication: Message goes to the client (Kafka's
// text for the case), Reason to the audit log. Neither holds a secret.
type Error struct {
	Message string
	Reason  string
}

func (e *Error) Error() string {
	if e.Reason != "" && e.Reason != e.Message {
		return e.Message + " (" + e.Reason + ")"
	}
	return e.Message
}

// invalidCredentials is Kafka's message for a failure whose details the
// client must not learn (SaslServerAuthenticator: a SaslException).
func invalidCredentials(mechanism, reason string) *Error {
	return &Error{Message: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism, Reason: reason}
}

// Failure is one failed authentication, for the audit log.
type Failure struct {
	// Principal is the principal as the client claimed it (User:<name>),
	// "" when it named none.
	Principal string
	Host      string
	Listener  string
	Mechanism string
	Reason    string
}

func (f Failure) fields() []zap.Field {
	return []zap.Field{
		zap.String("principal", f.Principal), zap.String("host", f.Host), zap.String("listener", f.Listener),
		zap.String("mechanism", f.Mechanism), zap.String("reason", f.Reason),
	}
}

// Principal is the Kafka principal of a user name.
func Principal(user string) string { return "User:" + user }
