package sasl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The signature algorithms a token may use (asymmetric only: the JWKS
// holds public keys).
var jwtAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA,
}

// oauthValidator checks JWTs against the keys of a JWKS file, re-read
// when the file changes (checked at most once a second).
type oauthValidator struct {
	cfg OAuthConfig
	now func() time.Time

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	modTime time.Time
	checked time.Time
}

func newOAuthValidator(cfg OAuthConfig, now func() time.Time) (*oauthValidator, error) {
	v := &oauthValidator{cfg: cfg, now: now}
	if err := v.load(); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *oauthValidator) load() error {
	st, err := os.Stat(v.cfg.JWKSFile)
	if err != nil {
		return fmt.Errorf("OAUTHBEARER: JWKS file: %w", err)
	}
	b, err := os.ReadFile(v.cfg.JWKSFile)
	if err != nil {
		return fmt.Errorf("OAUTHBEARER: JWKS file: %w", err)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return fmt.Errorf("OAUTHBEARER: JWKS file %s: %v", v.cfg.JWKSFile, err)
	}
	if len(set.Keys) == 0 {
		return fmt.Errorf("OAUTHBEARER: JWKS file %s has no keys", v.cfg.JWKSFile)
	}
	v.keys, v.modTime = set, st.ModTime()
	return nil
}

// keySet returns the current keys, re-reading a changed file (a file
// that became unreadable keeps the keys last read).
func (v *oauthValidator) keySet() jose.JSONWebKeySet {
	v.mu.Lock()
	defer v.mu.Unlock()
	if now := time.Now(); now.Sub(v.checked) >= time.Second {
		v.checked = now
		if st, err := os.Stat(v.cfg.JWKSFile); err == nil && !st.ModTime().Equal(v.modTime) {
			v.load()
		}
	}
	return v.keys
}

// validate checks a compact JWT and returns its principal name and
// expiry; the error text is for the audit log (no token in it).
func (v *oauthValidator) validate(token string) (string, time.Time, error) {
	tok, err := jwt.ParseSigned(token, jwtAlgorithms)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("malformed JWT: %v", err)
	}
	if len(tok.Headers) != 1 {
		return "", time.Time{}, fmt.Errorf("JWT with %d signatures", len(tok.Headers))
	}
	set := v.keySet()
	var cands []jose.JSONWebKey
	if kid := tok.Headers[0].KeyID; kid != "" {
		cands = set.Key(kid)
		if len(cands) == 0 {
			return "", time.Time{}, fmt.Errorf("no key with kid %q in the JWKS", kid)
		}
	} else {
		cands = set.Keys
	}
	var std jwt.Claims
	var all map[string]any
	verified := false
	for _, k := range cands {
		if err = tok.Claims(k.Key, &std, &all); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return "", time.Time{}, fmt.Errorf("signature not verified by the JWKS keys: %v", err)
	}
	if std.Expiry == nil {
		return "", time.Time{}, fmt.Errorf("JWT has no exp claim")
	}
	exp := std.Expiry.Time()
	now := v.now()
	if !now.Before(exp.Add(v.cfg.ClockSkew)) {
		return "", time.Time{}, fmt.Errorf("JWT expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if std.NotBefore != nil && now.Add(v.cfg.ClockSkew).Before(std.NotBefore.Time()) {
		return "", time.Time{}, fmt.Errorf("JWT not valid before %s", std.NotBefore.Time().UTC().Format(time.RFC3339))
	}
	if std.IssuedAt != nil && now.Add(v.cfg.ClockSkew).Before(std.IssuedAt.Time()) {
		return "", time.Time{}, fmt.Errorf("JWT issued in the future (%s)", std.IssuedAt.Time().UTC().Format(time.RFC3339))
	}
	if v.cfg.Issuer != "" && std.Issuer != v.cfg.Issuer {
		return "", time.Time{}, fmt.Errorf("issuer %q is not the expected %q", std.Issuer, v.cfg.Issuer)
	}
	if len(v.cfg.Audience) > 0 {
		ok := false
		for _, a := range v.cfg.Audience {
			ok = ok || std.Audience.Contains(a)
		}
		if !ok {
			return "", time.Time{}, fmt.Errorf("audience %v has none of the expected %v", []string(std.Audience), v.cfg.Audience)
		}
	}
	sub, _ := all[v.cfg.SubClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return "", time.Time{}, fmt.Errorf("JWT has no %s claim (sasl.oauthbearer.sub.claim.name)", v.cfg.SubClaim)
	}
	return sub, exp, nil
}

// oauthExchange is OAUTHBEARER (RFC 7628) as Kafka's
// OAuthBearerSaslServer runs it: a valid token completes at once; an
// invalid one gets the JSON error as a challenge, the client answers
// %x01, and the server then fails with that JSON as the message.
type oauthExchange struct {
	v       *oauthValidator
	user    string
	exp     time.Time
	done    bool
	pending *Error
}

const kvsep = "\x01"

func (x *oauthExchange) Step(token []byte) ([]byte, error) {
	if x.pending != nil {
		if !bytes.Equal(token, []byte(kvsep)) {
			x.pending.Reason += "; the client did not acknowledge the error with %x01"
		}
		return nil, x.pending
	}
	if x.done {
		return nil, invalidCredentials(OAuthBearer, "token after completion")
	}
	authz, bearer, err := parseOAuthInitial(token)
	if err != nil {
		return nil, invalidCredentials(OAuthBearer, err.Error())
	}
	user, exp, err := x.v.validate(bearer)
	if err != nil {
		const status = `{"status":"invalid_token"}`
		x.pending = &Error{Message: status, Reason: err.Error()}
		return []byte(status), nil
	}
	x.user = user
	if authz != "" && authz != user {
		return nil, &Error{
			Message: fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authz, user),
			Reason:  "authorization id differs from the token's principal",
		}
	}
	x.exp, x.done = exp, true
	return []byte{}, nil
}

func (x *oauthExchange) Done() bool        { return x.done }
func (x *oauthExchange) User() string      { return x.user }
func (x *oauthExchange) Expiry() time.Time { return x.exp }

// parseOAuthInitial parses the client's initial response:
//
//	n,[a=<authzid>],%x01auth=Bearer <token>%x01[<key>=<value>%x01...]%x01
func parseOAuthInitial(b []byte) (authz, token string, err error) {
	s := string(b)
	gs2, rest, ok := strings.Cut(s, kvsep)
	if !ok {
		return "", "", fmt.Errorf("OAUTHBEARER initial response without %%x01 separators")
	}
	f := strings.Split(gs2, ",")
	if len(f) != 3 || f[0] != "n" || f[2] != "" {
		return "", "", fmt.Errorf("OAUTHBEARER initial response: bad GS2 header (want n,[a=authzid],)")
	}
	if f[1] != "" {
		a, ok := strings.CutPrefix(f[1], "a=")
		if !ok {
			return "", "", fmt.Errorf("OAUTHBEARER initial response: bad authorization id field")
		}
		authz = decodeSaslName(a)
	}
	body, ok := strings.CutSuffix(rest, kvsep+kvsep)
	if !ok && rest != kvsep {
		return "", "", fmt.Errorf("OAUTHBEARER initial response not terminated by %%x01%%x01")
	}
	for _, kv := range strings.Split(body, kvsep) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", "", fmt.Errorf("OAUTHBEARER initial response: a key-value pair without '='")
		}
		if k == "auth" {
			scheme, t, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(t) == "" {
				return "", "", fmt.Errorf("OAUTHBEARER initial response: auth is not \"Bearer <token>\"")
			}
			token = strings.TrimSpace(t)
		}
	}
	if token == "" {
		return "", "", fmt.Errorf("OAUTHBEARER initial response has no auth=Bearer <token>")
	}
	return authz, token, nil
}
