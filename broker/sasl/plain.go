package sasl

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"time"
)

// plainExchange is PLAIN (RFC 4616): one message, authzid NUL authcid NUL
// passwd, checked against the JAAS users.
type plainExchange struct {
	users map[string]string
	user  string
	done  bool
}

func (x *plainExchange) Step(token []byte) ([]byte, error) {
	if x.done {
		return nil, &Error{Message: "Authentication failed: PLAIN exchange already complete", Reason: "token after completion"}
	}
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return nil, &Error{Message: fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts)), Reason: "malformed PLAIN message"}
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	x.user = user
	switch {
	case user == "":
		return nil, &Error{Message: "Authentication failed: username not specified", Reason: "no user name"}
	case len(pass) == 0:
		return nil, &Error{Message: "Authentication failed: password not specified", Reason: "no password"}
	}
	want, ok := x.users[user]
	// Compare even for an unknown user, so timing does not tell.
	match := subtle.ConstantTimeCompare([]byte(want), pass) == 1
	if !ok || !match {
		reason := "wrong password"
		if !ok {
			reason = "unknown user"
		}
		return nil, &Error{Message: "Authentication failed: Invalid username or password", Reason: reason}
	}
	if authz != "" && authz != user {
		return nil, &Error{Message: msgAuthzIDDiffs, Reason: "authorization id differs from the user name"}
	}
	x.done = true
	return []byte{}, nil
}

func (x *plainExchange) Done() bool        { return x.done }
func (x *plainExchange) User() string      { return x.user }
func (x *plainExchange) Expiry() time.Time { return time.Time{} }
