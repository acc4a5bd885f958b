package kafka

// SaslAuthenticate (key 36), versions 0-2: one token of the exchange the
// SaslHandshake started (sasl.go). v1+ carries the session lifetime
// (KIP-368); v2 is flexible. A failure is answered with
// SASL_AUTHENTICATION_FAILED and the mechanism's message, then the
// connection closes. On a listener without SASL, or once authenticated,
// it is ILLEGAL_SASL_STATE.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/sasl"
)

func init() { register(kmsg.SASLAuthenticate.Int16(), 0, 2, handleSASLAuthenticate) }

func handleSASLAuthenticate(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	a := r.c.sasl
	if a == nil || a.state != saslAuthenticate {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	fail := func(e *sasl.Error) (kmsg.Response, error) {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &e.Message
		r.c.saslAudit(e.Reason)
		r.closeAfter = true
		return resp, nil
	}
	if a.reauth && a.mech != a.prevMech {
		// Kafka answers nothing here and closes (REAUTH_BAD_MECHANISM).
		reason := fmt.Sprintf("SASL mechanism %s requested by client is not supported for re-authentication of mechanism %s", quoteName(a.mech), quoteName(a.prevMech))
		return nil, r.c.saslFail(reason)
	}
	token, err := a.ex.Step(req.SASLAuthBytes)
	if err != nil {
		e, ok := err.(*sasl.Error)
		if !ok {
			e = &sasl.Error{Message: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + a.mech, Reason: err.Error()}
		}
		return fail(e)
	}
	resp.SASLAuthBytes = token
	if !a.ex.Done() {
		return resp, nil
	}
	if a.reauth && a.ex.User() != a.prevUser {
		return fail(&sasl.Error{Message: fmt.Sprintf("Cannot change principals during re-authentication from User.%s: User.%s", a.prevUser, a.ex.User()),
			Reason: "principal changed during re-authentication"})
	}
	resp.SessionLifetimeMillis = r.c.saslDone(req.Version >= 1)
	return resp, nil
}
