package sasl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/xdg-go/scram"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestParseJAAS(t *testing.T) {
	es, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password='admin "secret"' user_admin="admin \"secret\"" user_a=b;`)
	if err != nil {
		t.Fatal(err)
	}
	users, err := plainUsers(es)
	if err != nil || len(users) != 2 || users["admin"] != `admin "secret"` || users["a"] != "b" {
		t.Fatalf("%v %v", users, err)
	}
	for _, bad := range []string{
		"", "Module", "Module required", "Module required a=b", "Module always a=b;", "Module required a=;", `Module required a="b;`, "Module required a=b a=c;",
	} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q parsed", bad)
		} else if strings.Contains(err.Error(), "b;") {
			t.Errorf("error repeats a value: %v", err)
		}
	}
	secs, err := ParseJAASFile(`// the brokers
KafkaServer {
   org.apache.kafka.common.security.plain.PlainLoginModule required
   user_admin="a}b";
};
sasl_ssl.KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_x="y"; };
`)
	if err != nil || len(secs) != 2 || secs["KafkaServer"][0].Options["user_admin"] != "a}b" {
		t.Fatalf("%v %v", secs, err)
	}
}

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	jaasFile := filepath.Join(dir, "jaas.conf")
	os.WriteFile(jaasFile, []byte(`sasl_plaintext.KafkaServer { org.apache.kafka.common.security.plain.PlainLoginModule required user_u1="p1"; };`), 0o600)
	c, err := Parse("SASL_PLAINTEXT", map[string]string{
		"listener.name.sasl_plaintext." + EnabledMechanisms: "PLAIN, SCRAM-SHA-512",
		EnabledMechanisms: "GSSAPI", // the listener's setting wins
		JAASFileConfig:    jaasFile,
		"listener.name.sasl_plaintext.scram-sha-512." + MaxReauthMs: "5000",
		MaxReceiveSizeName: "1024",
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Mechanisms, ",") != "PLAIN,SCRAM-SHA-512" || c.PlainUsers["u1"] != "p1" || c.MaxReauth != 5*time.Second || c.MaxReceiveSize != 1024 {
		t.Fatalf("%+v", c)
	}
	for name, cfg := range map[string]map[string]string{
		"no mechanisms":            {},
		"GSSAPI":                   {EnabledMechanisms: "GSSAPI"},
		"PLAIN without users":      {EnabledMechanisms: "PLAIN"},
		"OAUTHBEARER without JWKS": {EnabledMechanisms: "OAUTHBEARER"},
		"JWKS over https":          {EnabledMechanisms: "OAUTHBEARER", JWKSURL: "https://idp/jwks"},
		"other validator":          {EnabledMechanisms: "OAUTHBEARER", JWKSURL: "file:///x", "listener.name.l.oauthbearer." + CallbackHandler: "com.example.Handler"},
		"bad reauth":               {EnabledMechanisms: "SCRAM-SHA-256", MaxReauthMs: "-1"},
	} {
		if _, err := Parse("L", cfg); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestAddScram(t *testing.T) {
	u, err := ParseAddScram(`SCRAM-SHA-512=[name=admin,password="a,b=c"]`)
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "admin" || u.Credential.Iterations != DefaultScramIterations || u.Credential.Mechanism != ScramSHA512 {
		t.Fatalf("%+v", u)
	}
	// The credential verifies the password through a real SCRAM exchange.
	if !scramLogin(t, ScramSHA512, u.Credential, "admin", "a,b=c") || scramLogin(t, ScramSHA512, u.Credential, "admin", "a,b=d") {
		t.Fatal("the --add-scram credential does not check the password")
	}
	u, err = ParseAddScram(`SCRAM-SHA-256=[name=alice,iterations=8192,salt=6d6e, saltedpassword=` + strings.Repeat("ab", 32) + `]`)
	if err != nil || u.Credential.Iterations != 8192 || string(u.Credential.Salt) != "mn" {
		t.Fatalf("%+v %v", u, err)
	}
	for _, bad := range []string{
		"SCRAM-SHA-1=[name=a,password=secretpw]", "SCRAM-SHA-256=name=a", "SCRAM-SHA-256=[password=secretpw]",
		"SCRAM-SHA-256=[name=a,password=secretpw,iterations=10]", "SCRAM-SHA-256=[name=a,password=secretpw,salt=00,saltedpassword=00]",
		"SCRAM-SHA-256=[name=a,pass=secretpw]", "SCRAM-SHA-256=[name=a,salt=zz,saltedpassword=00]",
	} {
		if _, err := ParseAddScram(bad); err == nil {
			t.Errorf("%q parsed", bad)
		} else if strings.Contains(err.Error(), "secretpw") {
			t.Errorf("error repeats the password: %v", err)
		}
	}
}

// scramLogin runs a whole exchange of xdg-go/scram's client against the
// server side with cred stored for user.
func scramLogin(t *testing.T, mech string, cred ScramCredential, user, pass string) bool {
	t.Helper()
	x, err := newScramExchange(mech, func(m, u string) (ScramCredential, bool) { return cred, m == mech && u == user })
	if err != nil {
		t.Fatal(err)
	}
	gen := scram.SHA256
	if mech == ScramSHA512 {
		gen = scram.SHA512
	}
	cl, _ := gen.NewClientUnprepped(user, pass, "")
	conv := cl.NewConversation()
	msg, _ := conv.Step("")
	for !x.Done() {
		resp, err := x.Step([]byte(msg))
		if err != nil {
			return false
		}
		if x.Done() {
			_, err := conv.Step(string(resp))
			return err == nil
		}
		if msg, err = conv.Step(string(resp)); err != nil {
			t.Fatal(err)
		}
	}
	return true
}

func TestPlain(t *testing.T) {
	users := map[string]string{"alice": "pw"}
	for tok, want := range map[string]string{
		"\x00alice\x00pw":      "",
		"alice\x00alice\x00pw": "",
		"bob\x00alice\x00pw":   "Authentication failed: Client requested an authorization id that is different from username",
		"\x00alice\x00nope":    "Authentication failed: Invalid username or password",
		"\x00carol\x00pw":      "Authentication failed: Invalid username or password",
		"\x00\x00pw":           "Authentication failed: username not specified",
		"\x00alice\x00":        "Authentication failed: password not specified",
		"alice":                "Invalid SASL/PLAIN response: expected 3 tokens, got 1",
	} {
		x := &plainExchange{users: users}
		_, err := x.Step([]byte(tok))
		if want == "" && (err != nil || !x.Done() || x.User() != "alice") {
			t.Errorf("%q: %v", tok, err)
		}
		if want != "" && (err == nil || err.(*Error).Message != want) {
			t.Errorf("%q: %v, want %s", tok, err, want)
		}
	}
}

func TestAuditRateLimit(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	a := NewAudit(zap.New(core), time.Minute, 3)
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	for range 10 {
		a.Failed(Failure{Host: "10.0.0.1", Reason: "wrong password"})
	}
	a.Failed(Failure{Host: "10.0.0.2", Reason: "wrong password"})
	if n := logs.Len(); n != 4 {
		t.Fatalf("%d lines, want 3 for the noisy host and 1 for the other", n)
	}
	now = now.Add(time.Minute)
	a.Failed(Failure{Host: "10.0.0.1", Reason: "wrong password"})
	last := logs.All()[logs.Len()-1]
	if last.LoggerName != AuditLoggerName || last.ContextMap()["suppressed"] != int64(7) {
		t.Fatalf("%s %v", last.LoggerName, last.ContextMap())
	}
}

// oauthSetup is a JWKS file with an RSA and an EC key.
type oauthSetup struct {
	rsa  *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	file string
}

func newOAuthSetup(t testing.TB) *oauthSetup {
	t.Helper()
	s := &oauthSetup{}
	s.rsa, _ = rsa.GenerateKey(rand.Reader, 2048)
	s.ec, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &s.rsa.PublicKey, KeyID: "rsa1", Algorithm: "RS256", Use: "sig"},
		{Key: &s.ec.PublicKey, KeyID: "ec1", Algorithm: "ES256", Use: "sig"},
	}}
	b, _ := json.Marshal(set)
	s.file = filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(s.file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// token signs claims with the RSA (alg RS256) or EC (ES256) key.
func (s *oauthSetup) token(t testing.TB, alg jose.SignatureAlgorithm, kid string, claims map[string]any) string {
	t.Helper()
	var key any = s.rsa
	if alg == jose.ES256 {
		key = s.ec
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestOAuthBearer(t *testing.T) {
	s := newOAuthSetup(t)
	now := time.Now()
	v, err := newOAuthValidator(OAuthConfig{JWKSFile: s.file, Audience: []string{"kafka"}, Issuer: "https://idp", ClockSkew: 30 * time.Second, SubClaim: "sub"}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]any{"sub": "svc-1", "aud": "kafka", "iss": "https://idp", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	with := func(k string, val any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		if val == nil {
			delete(m, k)
		} else {
			m[k] = val
		}
		return m
	}
	initial := func(tok string) []byte { return []byte("n,,\x01auth=Bearer " + tok + "\x01\x01") }
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.ES256} {
		kid := map[jose.SignatureAlgorithm]string{jose.RS256: "rsa1", jose.ES256: "ec1"}[alg]
		x := &oauthExchange{v: v}
		resp, err := x.Step(initial(s.token(t, alg, kid, good)))
		if err != nil || len(resp) != 0 || !x.Done() || x.User() != "svc-1" || x.Expiry().Unix() != now.Add(time.Hour).Unix() {
			t.Fatalf("%s: %q %v", alg, resp, err)
		}
	}
	other := newOAuthSetup(t)
	for name, tok := range map[string]string{
		"expired":        s.token(t, jose.RS256, "rsa1", with("exp", now.Add(-time.Minute).Unix())),
		"no exp":         s.token(t, jose.RS256, "rsa1", with("exp", nil)),
		"wrong audience": s.token(t, jose.RS256, "rsa1", with("aud", "other")),
		"wrong issuer":   s.token(t, jose.RS256, "rsa1", with("iss", "https://evil")),
		"no sub":         s.token(t, jose.RS256, "rsa1", with("sub", nil)),
		"unknown kid":    s.token(t, jose.RS256, "nope", good),
		"untrusted key":  other.token(t, jose.RS256, "rsa1", good),
		"not a JWT":      "abc.def.ghi",
	} {
		x := &oauthExchange{v: v}
		resp, err := x.Step(initial(tok))
		if err != nil || string(resp) != `{"status":"invalid_token"}` {
			t.Errorf("%s: %q %v", name, resp, err)
			continue
		}
		_, err = x.Step([]byte{1})
		if e, ok := err.(*Error); !ok || e.Message != `{"status":"invalid_token"}` || x.Done() || strings.Contains(e.Reason, tok) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Within the clock skew an expired token still passes.
	x := &oauthExchange{v: v}
	if _, err := x.Step(initial(s.token(t, jose.RS256, "rsa1", with("exp", now.Add(-10*time.Second).Unix())))); err != nil || !x.Done() {
		t.Fatalf("within skew: %v", err)
	}
	for _, bad := range []string{"", "n,,", "y,,\x01auth=Bearer x\x01\x01", "n,,\x01auth=Basic x\x01\x01", "n,,\x01auth=Bearer x\x01"} {
		if _, _, err := parseOAuthInitial([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
