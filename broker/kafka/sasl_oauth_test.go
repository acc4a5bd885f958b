package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"weir/broker/sasl"
	"weir/internal/testkit"
)

// TestSASLOAuthBearer: franz-go's OAUTHBEARER client with JWTs signed by
// an RS256 and an ES256 key of the broker's JWKS file produces and
// consumes as User:<sub>; the session lifetime is the token's; an
// expired token, a token of another issuer or signed by a key not in the
// JWKS is refused.
func TestSASLOAuthBearer(t *testing.T) {
	t.Parallel()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &rsaKey.PublicKey, KeyID: "r1", Algorithm: "RS256", Use: "sig"},
		{Key: &ecKey.PublicKey, KeyID: "e1", Algorithm: "ES256", Use: "sig"},
	}})
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, set, 0o600); err != nil {
		t.Fatal(err)
	}
	b := startSASLBroker(t, saslConfigs(sasl.EnabledMechanisms, "OAUTHBEARER",
		sasl.JWKSURL, "file://"+jwks, sasl.ExpectedAudience, "weir", sasl.ExpectedIssuer, "https://idp.example"))
	token := func(alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
		if err != nil {
			t.Fatal(err)
		}
		s, err := jwt.Signed(sig).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Now()
	claims := func(sub string, exp time.Time, iss string) map[string]any {
		return map[string]any{"sub": sub, "aud": []string{"weir"}, "iss": iss, "exp": exp.Unix(), "iat": now.Unix()}
	}
	good := []struct{ name, tok, principal string }{
		{"RS256", token(jose.RS256, rsaKey, "r1", claims("svc-rsa", now.Add(time.Hour), "https://idp.example")), "User:svc-rsa"},
		{"ES256", token(jose.ES256, ecKey, "e1", claims("svc-ec", now.Add(time.Hour), "https://idp.example")), "User:svc-ec"},
	}
	for i, c := range good {
		topic := fmt.Sprintf("oauth-%d", i)
		createTopic(t, b.testBroker, topic, 1, nil)
		cl := b.saslClient(t, "SASL_SSL", kgo.SASL(oauth.Auth{Token: c.tok}.AsMechanism()))
		produceConsume(t, cl, topic, 20)
		if !b.authenticated(c.principal, "OAUTHBEARER") {
			t.Fatalf("%s: no OAUTHBEARER authentication of %s logged", c.name, c.principal)
		}
	}
	// The raw exchange: the session lifetime is the token's remaining time.
	r := dialRaw(t, b.listenerAddr("SASL_PLAINTEXT"))
	r.saslHandshake(1, "OAUTHBEARER")
	resp := r.saslAuthenticate(2, []byte("n,,\x01auth=Bearer "+good[0].tok+"\x01\x01"))
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis < 3500_000 || resp.SessionLifetimeMillis > 3600_000 {
		t.Fatalf("lifetime %d, error %d", resp.SessionLifetimeMillis, resp.ErrorCode)
	}
	for name, tok := range map[string]string{
		"expired":       token(jose.RS256, rsaKey, "r1", claims("svc", now.Add(-time.Hour), "https://idp.example")),
		"other issuer":  token(jose.RS256, rsaKey, "r1", claims("svc", now.Add(time.Hour), "https://evil.example")),
		"untrusted key": token(jose.RS256, other, "r1", claims("svc", now.Add(time.Hour), "https://idp.example")),
	} {
		cl := b.saslClient(t, "SASL_SSL", kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := cl.Ping(ctx)
		cancel()
		if err == nil {
			t.Fatalf("%s: authenticated", name)
		}
		// Kafka's answer to a bad token is the JSON error as a challenge;
		// franz-go gives up on it, Kafka's Java client answers %x01.
		r := dialRaw(t, b.listenerAddr("SASL_PLAINTEXT"))
		r.saslHandshake(1, "OAUTHBEARER")
		resp := r.saslAuthenticate(2, []byte("n,,\x01auth=Bearer "+tok+"\x01\x01"))
		if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != `{"status":"invalid_token"}` {
			t.Fatalf("%s: %d %q", name, resp.ErrorCode, resp.SASLAuthBytes)
		}
		resp = r.saslAuthenticate(2, []byte{1})
		if resp.ErrorMessage == nil || *resp.ErrorMessage != `{"status":"invalid_token"}` {
			t.Fatalf("%s: %d %v", name, resp.ErrorCode, resp.ErrorMessage)
		}
		r.expectClosed()
	}
	for _, l := range b.auditLines() {
		for _, c := range good {
			if strings.Contains(fmt.Sprint(l), c.tok[:20]) {
				t.Fatalf("audit line holds a token: %v", l)
			}
		}
	}
}

// TestSASLReauthFranz: with connections.max.reauth.ms=2500, franz-go
// re-authenticates on its connections (KIP-368) and keeps producing past
// several session lifetimes without the broker closing a connection for
// an expired session (franz-go re-authenticates 1 s before the end of a
// session, so a session of 2.5 s is renewed after about 1.5 s).
func TestSASLReauthFranz(t *testing.T) {
	if testing.Short() {
		t.Skip("runs through several SASL session lifetimes")
	}
	t.Parallel()
	b := startSASLBroker(t, saslConfigs(sasl.MaxReauthMs, "2500"))
	b.addScram(t, kadm.ScramSha512, "alice", "alice-secret")
	createTopic(t, b.testBroker, "reauth", 1, nil)
	cl := b.saslClient(t, "SASL_PLAINTEXT", kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	logins := func() int {
		n := 0
		for _, e := range b.logs.FilterMessage("SASL authentication succeeded").All() {
			if m := e.ContextMap(); m["principal"] == "User:alice" && m["reauthentication"] == true {
				n++
			}
		}
		return n
	}
	produced := 0
	testkit.CheckFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "reauth", Value: []byte("v")}).FirstErr(); err != nil {
			return err
		}
		produced++
		if n := logins(); n < 2 {
			return fmt.Errorf("%d re-authentications of alice so far", n)
		}
		return nil
	})
	for _, e := range b.logs.All() {
		if strings.Contains(fmt.Sprint(e.ContextMap()["error"]), "expired") {
			t.Fatalf("a connection was closed for an expired session: %v", e.ContextMap())
		}
	}
	t.Logf("%d records, %d re-authentications", produced, logins())
}
