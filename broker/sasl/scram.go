package sasl

import (
	"errors"
	"strings"
	"time"

	"github.com/xdg-go/scram"
)

// scramExchange is one SCRAM conversation: client-first → server-first,
// client-final → server-final.
type scramExchange struct {
	mechanism string
	conv      *scram.ServerConversation
	user      string
	known     bool
}

// errUnknownUser marks a lookup that found no credential.
var errUnknownUser = errors.New("unknown user")

func newScramExchange(mechanism string, store ScramStore) (*scramExchange, error) {
	gen := scram.SHA256
	if mechanism == ScramSHA512 {
		gen = scram.SHA512
	}
	x := &scramExchange{mechanism: mechanism}
	srv, err := gen.NewServer(func(name string) (scram.StoredCredentials, error) {
		x.user = decodeSaslName(name)
		c, ok := store(mechanism, x.user)
		if !ok {
			return scram.StoredCredentials{}, errUnknownUser
		}
		x.known = true
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: int(c.Iterations)},
			StoredKey:  c.StoredKey, ServerKey: c.ServerKey,
		}, nil
	})
	if err != nil {
		return nil, err
	}
	x.conv = srv.NewConversation()
	return x, nil
}

// Kafka's texts (ScramSaslServer).
const (
	msgInvalidUser  = "Authentication failed: Invalid user credentials"
	msgAuthzIDDiffs = "Authentication failed: Client requested an authorization id that is different from username"
)

func (x *scramExchange) Step(token []byte) ([]byte, error) {
	first := x.user == "" && !x.conv.Done()
	resp, err := x.conv.Step(string(token))
	if err != nil {
		switch {
		case errors.Is(err, errUnknownUser):
			return nil, &Error{Message: msgInvalidUser, Reason: "unknown user"}
		case strings.Contains(err.Error(), "proof invalid"):
			return nil, &Error{Message: msgInvalidUser, Reason: "wrong password (invalid proof)"}
		case strings.Contains(err.Error(), "nonce"):
			return nil, invalidCredentials(x.mechanism, "client nonce in the final message does not match")
		}
		return nil, invalidCredentials(x.mechanism, "malformed SCRAM message: "+err.Error())
	}
	if first {
		if a := x.conv.AuthzID(); a != "" && decodeSaslName(a) != x.user {
			return nil, &Error{Message: msgAuthzIDDiffs, Reason: "authorization id differs from the user name"}
		}
	}
	return []byte(resp), nil
}

func (x *scramExchange) Done() bool        { return x.conv.Done() && x.conv.Valid() }
func (x *scramExchange) User() string      { return x.user }
func (x *scramExchange) Expiry() time.Time { return time.Time{} }

// decodeSaslName undoes RFC 5802's escaping of ',' and '=' in user names.
func decodeSaslName(s string) string {
	if !strings.Contains(s, "=") {
		return s
	}
	return strings.NewReplacer("=2C", ",", "=3D", "=").Replace(s)
}
