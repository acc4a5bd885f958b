package sasl

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

// inClassName matches the secret inside a login module's class name
// (a.b.XLoginModule): errors may name the module by its class.
var inClassName = regexp.MustCompile(`[\w$.]*s3cr3tvalue[\w$.]*LoginModule\b`)

// quotedText matches a quoted string (with backslash escapes), as JAAS
// quotes option values.
var quotedText = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)

// FuzzJAAS: any sasl.jaas.config value or JAAS file parses or fails with
// an error that repeats no option value. Corpus: testdata/fuzz/FuzzJAAS.
func FuzzJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="s3cr3tvalue" user_admin="s3cr3tvalue";`)
	f.Add("KafkaServer {\n org.apache.kafka.common.security.plain.PlainLoginModule required user_a='s3cr3tvalue';\n};\n")
	f.Add(`A required a="x\"y" b=c; B optional;`)
	f.Fuzz(func(t *testing.T, s string) {
		es, err := ParseJAAS(s)
		if err == nil {
			for _, e := range es {
				if e.Module == "" || e.Flag == "" {
					t.Fatalf("entry without module or flag: %+v", e)
				}
			}
			plainUsers(es)
		} else if strings.Contains(s, "s3cr3tvalue") && strings.Contains(err.Error(), "s3cr3tvalue") && !inClassName.MatchString(err.Error()) {
			t.Fatalf("error repeats a value: %v", err)
		}
		// In a file, a section name is shown; values (quoted) never. The
		// check holds when the secret is only inside quotes: unquoted, the
		// same text can stand where a section name goes, and is shown.
		quoted := strings.Contains(s, `"s3cr3tvalue"`) || strings.Contains(s, `'s3cr3tvalue'`)
		onlyQuoted := quoted && !strings.Contains(quotedText.ReplaceAllString(s, ""), "s3cr3tvalue")
		if _, err := ParseJAASFile(s); err != nil && onlyQuoted && strings.Contains(err.Error(), "s3cr3tvalue") {
			t.Fatalf("file error repeats a value: %v", err)
		}
	})
}

// FuzzAddScram: any --add-scram value parses into a usable credential or
// fails without repeating the password. Corpus: testdata/fuzz/FuzzAddScram.
func FuzzAddScram(f *testing.F) {
	f.Add("SCRAM-SHA-512=[name=admin,password=s3cr3tvalue]")
	f.Add(`SCRAM-SHA-256=[name=alice,iterations=4096,password="s3cr3t,value"]`)
	f.Add("SCRAM-SHA-256=[name=alice,salt=6d6e,saltedpassword=" + strings.Repeat("ab", 32) + "]")
	f.Add("SCRAM-SHA-512=[name=0s3cr3tvalue]") // CI find: the name, not a password, in the error
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "iterations=") {
			return // bounded work: a large iteration count is slow by design
		}
		u, err := ParseAddScram(s)
		if err != nil {
			if passwordOnly(s, "s3cr3tvalue") && strings.Contains(err.Error(), "s3cr3tvalue") {
				t.Fatalf("error repeats the password: %v", err)
			}
			return
		}
		if u.Name == "" || len(u.Credential.StoredKey) == 0 || len(u.Credential.ServerKey) == 0 || u.Credential.Iterations < MinScramIterations {
			t.Fatalf("incomplete credential %+v", u)
		}
	})
}

// passwordOnly reports whether secret occurs in s once, as the start of
// an unquoted-context password= value: then it is the password and nothing
// else (a user name, which errors do show, may hold the same text).
func passwordOnly(s, secret string) bool {
	if strings.Count(s, secret) != 1 {
		return false
	}
	before := s[:strings.Index(s, secret)]
	if strings.Count(before, `"`) > 1 || (strings.Count(before, `"`) == 1 && !strings.HasSuffix(before, `"`)) {
		return false
	}
	return passwordField.MatchString(before)
}

var passwordField = regexp.MustCompile(`(?i)[\[,]\s*password\s*=\s*"?$`)

// FuzzExchange: any sequence of client tokens through PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512 or OAUTHBEARER exchanges ends in an *Error or a finished
// exchange, never a panic; a finished exchange names its user, and only
// a correct credential finishes one. The input's first byte picks the
// mechanism, the rest is split into tokens at 0xFF bytes. Corpus:
// testdata/fuzz/FuzzExchange.
func FuzzExchange(f *testing.F) {
	f.Add([]byte("\x00\x00alice\x00pw"))
	f.Add([]byte("\x01n,,n=alice,r=abcdef\xffc=biws,r=abcdef,p=AAAA"))
	f.Add([]byte("\x02n,a=alice,n=alice,r=x\xffc=biws,r=x,p="))
	f.Add([]byte("\x03n,,\x01auth=Bearer a.b.c\x01\x01\xff\x01"))
	cred, err := NewScramCredential(ScramSHA256, "pw", []byte("salt"), MinScramIterations)
	if err != nil {
		f.Fatal(err)
	}
	cred512, _ := NewScramCredential(ScramSHA512, "pw", []byte("salt"), MinScramIterations)
	o := newOAuthSetup(f)
	srv, err := NewServer(&Config{Listener: "L", Mechanisms: Supported, PlainUsers: map[string]string{"alice": "pw"},
		OAuth: OAuthConfig{JWKSFile: o.file, SubClaim: "sub", ClockSkew: time.Second}}, func(m, u string) (ScramCredential, bool) {
		if u != "alice" {
			return ScramCredential{}, false
		}
		if m == ScramSHA512 {
			return cred512, true
		}
		return cred, true
	}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		mech := Supported[int(in[0])%len(Supported)]
		x, err := srv.Start(mech)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range bytes.Split(in[1:], []byte{0xff}) {
			if _, err := x.Step(tok); err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("%s: error of type %T: %v", mech, err, err)
				}
				return
			}
			if x.Done() {
				break
			}
		}
		if x.Done() && (x.User() == "" || (mech != OAuthBearer && x.User() != "alice")) {
			t.Fatalf("%s: authenticated as %q", mech, x.User())
		}
		if x.Done() && mech == Plain && !bytes.HasSuffix(in, []byte("\x00pw")) {
			t.Fatalf("PLAIN authenticated without the password: %q", in)
		}
	})
}
