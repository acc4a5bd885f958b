package kafka

// SASL on SASL_PLAINTEXT and SASL_SSL listeners, as Kafka's
// SaslServerAuthenticator runs it (the mechanisms are in broker/sasl).
//
// Before a connection is authenticated:
//   - its frames may be at most sasl.server.max.receive.size (512 KiB by
//     default): a larger size prefix closes the connection before anything
//     is allocated (Kafka: "Failing SASL authentication due to invalid
//     receive size");
//   - it must finish within the handshake timeout (the TLS handshake's,
//     10 s by default) or it is closed; other connections are served
//     meanwhile (each has its own goroutines);
//   - the first request may be ApiVersions, then SaslHandshake; any other
//     request closes the connection without an answer (Kafka: "Unexpected
//     Kafka request of type X during SASL handshake"), and so does any
//     request but SaslAuthenticate after a SaslHandshake v1 (Kafka:
//     IllegalSaslStateException). After SaslHandshake v0 the client sends
//     bare tokens, size-prefixed, and gets bare tokens back (the
//     pre-KIP-152 framing librdkafka may use); a failure then closes the
//     connection without an answer.
//   - a failed SaslAuthenticate is answered with SASL_AUTHENTICATION_FAILED
//     and the mechanism's message, then the connection is closed; an
//     unknown mechanism with UNSUPPORTED_SASL_MECHANISM and the enabled
//     list, then closed. Every failure goes to the audit log.
//
// Re-authentication (KIP-368): SaslAuthenticate v1+ tells the client its
// session lifetime, min(connections.max.reauth.ms, the credential's
// expiry); a client that authenticated with v1+ re-authenticates by
// sending SaslHandshake (v1) and SaslAuthenticate on the live connection,
// with the same mechanism and principal. A request that arrives after the
// session expired (and is not such a re-authentication) closes the
// connection, as Kafka's Processor does. SaslHandshake and
// SaslAuthenticate on a non-SASL listener, or on an authenticated
// connection that may not re-authenticate, get ILLEGAL_SASL_STATE.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/sasl"
)

type saslState int

const (
	saslInitial      saslState = iota // nothing received
	saslVersions                      // ApiVersions answered
	saslAuthenticate                  // SaslHandshake accepted: tokens expected
	saslComplete                      // authenticated
)

// saslConn is a SASL connection's authentication state; only the
// connection's reading goroutine touches it.
type saslConn struct {
	srv      *sasl.Server
	state    saslState
	raw      bool // SaslHandshake v0: bare tokens
	mech     string
	ex       sasl.Exchange
	deadline time.Time // authentication must finish by then
	// expiry is when the session ends (zero: never); reauthOK whether
	// the client may re-authenticate (it used SaslAuthenticate v1+).
	expiry   time.Time
	reauthOK bool
	// reauth is a re-authentication in progress: the mechanism and user
	// must stay those of prevMech and prevUser.
	reauth             bool
	prevMech, prevUser string
	user               string
}

// saslSetup starts the authentication of a connection on a SASL listener.
func (c *conn) saslSetup() {
	if c.l.cfg.SASL == nil {
		return
	}
	d := c.s.cfg.HandshakeTimeout
	if d <= 0 {
		d = defaultHandshakeTimeout
	}
	c.sasl = &saslConn{srv: c.l.cfg.SASL, deadline: time.Now().Add(d)}
}

// authenticating reports whether the connection still has to
// authenticate (the first time: re-authentication is not limited so).
func (c *conn) authenticating() bool {
	return c.sasl != nil && c.sasl.state != saslComplete && !c.sasl.reauth
}

// saslGate checks that a request with key may be served in the
// connection's SASL state; an error closes the connection unanswered.
func (c *conn) saslGate(key int16) error {
	a := c.sasl
	if a == nil {
		return nil
	}
	switch a.state {
	case saslInitial:
		switch key {
		case kmsg.ApiVersions.Int16():
			a.state = saslVersions
			return nil
		case kmsg.SASLHandshake.Int16():
			return nil
		}
		return c.saslFail(fmt.Sprintf("unexpected Kafka request of type %s during SASL handshake", kmsg.NameForKey(key)))
	case saslVersions:
		if key == kmsg.SASLHandshake.Int16() {
			return nil
		}
		return c.saslFail(fmt.Sprintf("unexpected Kafka request of type %s during SASL handshake", kmsg.NameForKey(key)))
	case saslAuthenticate:
		if key == kmsg.SASLAuthenticate.Int16() {
			return nil
		}
		if a.reauth {
			// Other requests may be in flight while a client
			// re-authenticates.
			return nil
		}
		return c.saslFail(fmt.Sprintf("unexpected Kafka request of type %s during SASL authentication (ILLEGAL_SASL_STATE)", kmsg.NameForKey(key)))
	}
	if !a.expiry.IsZero() && c.s.now().After(a.expiry) && key != kmsg.SASLHandshake.Int16() {
		return fmt.Errorf("SASL session of %s expired at %s without re-authentication (connections.max.reauth.ms)", sasl.Principal(a.user), a.expiry.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// saslFail audits a failure that closes the connection unanswered and
// returns the error that closes it.
func (c *conn) saslFail(reason string) error {
	c.saslAudit(reason)
	return fmt.Errorf("SASL: %s", reason)
}

func (c *conn) saslAudit(reason string) {
	a := c.sasl
	f := sasl.Failure{Host: remoteHost(c.remote), Listener: c.l.cfg.Name, Mechanism: a.mech, Reason: reason}
	if a.ex != nil && a.ex.User() != "" {
		f.Principal = sasl.Principal(a.ex.User())
	}
	a.srv.Audit(f)
}

func remoteHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// saslRawToken handles a bare token after SaslHandshake v0: the answer is
// a bare size-prefixed token; a failure closes the connection.
func (c *conn) saslRawToken(token []byte, received time.Time) error {
	a := c.sasl
	resp, err := a.ex.Step(token)
	if err != nil {
		return c.saslFail(err.Error())
	}
	if a.ex.Done() {
		c.saslDone(false)
	}
	frame := make([]byte, 4, 4+len(resp))
	frame = append(frame, resp...)
	putSize(frame)
	sl := &slot{api: apis[kmsg.SASLHandshake.Int16()], start: received, frame: frame}
	if done, err := c.writeDirect(sl); done || err != nil {
		return err
	}
	return c.enqueue(sl)
}

// saslDone makes the connection authenticated as the exchange's user and
// returns the session lifetime to tell the client (0: none).
func (c *conn) saslDone(v1 bool) int64 {
	a := c.sasl
	now := c.s.now()
	var life time.Duration
	exp := a.ex.Expiry()
	switch max := a.srv.MaxReauth(); {
	case !exp.IsZero() && max > 0:
		life = min(exp.Sub(now), max)
	case !exp.IsZero():
		life = exp.Sub(now)
	default:
		life = max
	}
	a.expiry = time.Time{}
	if life < 0 {
		life = 0
	}
	if !exp.IsZero() || a.srv.MaxReauth() > 0 {
		a.expiry = now.Add(life)
	}
	reauth := a.reauth
	a.state, a.reauth, a.raw = saslComplete, false, false
	a.reauthOK = a.reauthOK || v1
	a.user = a.ex.User()
	c.principal = sasl.Principal(a.user)
	c.s.log.Debug("SASL authentication succeeded", zap.String("principal", c.principal), zap.String("mechanism", a.mech),
		zap.String("listener", c.l.cfg.Name), zap.String("remote", c.remote), zap.Int64("session_lifetime_ms", life.Milliseconds()),
		zap.Bool("reauthentication", reauth))
	if !a.deadline.IsZero() {
		a.deadline = time.Time{}
		c.nc.SetReadDeadline(time.Time{})
	}
	return life.Milliseconds()
}

// errAuthFailed closes a connection after the answer to a failed
// authentication is written.
var errAuthFailed = errors.New("SASL authentication failed")

// readRawToken reads a bare token of size bytes (already checked against
// sasl.server.max.receive.size) and answers it.
func (c *conn) readRawToken(size int32) error {
	buf := make([]byte, size)
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return fmt.Errorf("%w: reading %d-byte SASL token: %w", errFrame, size, err)
	}
	return c.saslRawToken(buf, time.Now())
}

func putSize(frame []byte) { binary.BigEndian.PutUint32(frame, uint32(len(frame)-4)) }
