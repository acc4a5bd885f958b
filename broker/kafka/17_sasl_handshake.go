package kafka

// SaslHandshake (key 17), versions 0-1. The SASL state machine is in
// sasl.go: before authentication this picks the mechanism (v0: bare
// tokens follow; v1: SaslAuthenticate requests follow); on an
// authenticated connection it starts a re-authentication (KIP-368) when
// the client may re-authenticate, else it is ILLEGAL_SASL_STATE, as on a
// listener without SASL.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.SASLHandshake.Int16(), 0, 1, handleSASLHandshake) }

func handleSASLHandshake(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	a := r.c.sasl
	if a == nil || (a.state == saslComplete && !(a.reauthOK && req.Version >= 1)) {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = a.srv.Mechanisms()
	if a.state == saslComplete {
		// Re-authentication: a new exchange with the same mechanism.
		a.reauth, a.prevMech, a.prevUser = true, a.mech, a.user
	}
	a.mech = strings.Clone(req.Mechanism) // req aliases the read buffer
	if !a.srv.Enabled(a.mech) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		r.c.saslAudit("SASL mechanism " + quoteName(a.mech) + " requested by client is not enabled")
		r.closeAfter = true
		return resp, nil
	}
	ex, err := a.srv.Start(a.mech)
	if err != nil {
		return nil, err
	}
	a.ex, a.state, a.raw = ex, saslAuthenticate, req.Version == 0
	return resp, nil
}

// quoteName quotes a client-given name for a log line, cut to 64 bytes.
func quoteName(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return "'" + s + "'"
}
