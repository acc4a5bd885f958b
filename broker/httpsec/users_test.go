package httpsec

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestParseUsers(t *testing.T) {
	sum := md5.Sum([]byte("p2"))
	bc, err := bcrypt.GenerateFromPassword([]byte("p3"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	file := "# comment\n! also a comment\n\n" +
		"alice: p1,admin, developer\n" +
		"bob=MD5:" + strings.ToUpper(hex.EncodeToString(sum[:])) + ",reader\n" +
		"carol BCRYPT:" + string(bc) + "\n" +
		"dave:pass:with:colons\n"
	u, err := ParseUsers([]byte(file), "users")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, pass string
		ok         bool
		roles      string
	}{
		{"alice", "p1", true, "admin,developer"}, {"alice", "p2", false, ""},
		{"bob", "p2", true, "reader"}, {"bob", "MD5:" + hex.EncodeToString(sum[:]), false, ""},
		{"carol", "p3", true, ""}, {"carol", "p3", true, ""}, {"carol", "p4", false, ""},
		{"dave", "pass:with:colons", true, ""}, {"eve", "p1", false, ""},
	} {
		usr, ok := u.Authenticate(c.user, c.pass)
		if ok != c.ok || ok && strings.Join(usr.Roles, ",") != c.roles {
			t.Errorf("%s/%s: ok %v %v, want %v %s", c.user, c.pass, ok, usr, c.ok, c.roles)
		}
	}
}

func TestParseUsersErrors(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"alice\n", "users:1: want `user: password[,role...]`"},
		{"ok: x\nalice:\n", "users:2: user \"alice\" has no password"},
		{"a: secret1\na: secret2\n", "users:2: user \"a\" is listed twice"},
		{"a: MD5:abc,r\n", "users:1: user \"a\": MD5: password: want 32 hex digits"},
		{"a: CRYPT:secretxyz\n", "CRYPT: passwords (Unix DES crypt) are not supported"},
		{"a: OBF:1v2j1uum1xtv\n", "OBF: passwords"},
		{"a: BCRYPT:$2a$nothash\n", "not a bcrypt hash"},
		{": secret\n", "users:1: want `user: password[,role...]`"},
		{"a: secret \\\n", "continuation lines"},
	} {
		_, err := ParseUsers([]byte(c.file), "users")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.file, err, c.want)
			continue
		}
		for _, secret := range []string{"secret", "abc", "nothash", "1v2j1uum1xtv"} {
			if strings.Contains(c.file, secret) && strings.Contains(err.Error(), secret) {
				t.Errorf("%q: error %q holds the password", c.file, err)
			}
		}
	}
}

func TestParseBasic(t *testing.T) {
	for _, c := range []struct {
		h, user, pass string
		err           error
	}{
		{"Basic YWxpY2U6cDE=", "alice", "p1", nil},
		{"basic   YWxpY2U6cDE6eA==", "alice", "p1:x", nil},
		{"Basic YWxpY2U6", "alice", "", nil},
		{"", "", "", ErrNoCredentials},
		{"Bearer abc", "", "", ErrNotBasic},
		{"Basic", "", "", ErrBadBasic},
		{"Basic !!!", "", "", ErrBadBasic},
		{"Basic YWxpY2U=", "", "", ErrBadBasic},     // no colon
		{"Basic OnAx", "", "", ErrBadBasic},         // empty user
		{"Basic YWxpY2U6cDEK", "", "", ErrBadBasic}, // newline in password
		{"Basic YWxpY2U6cDE", "", "", ErrBadBasic},  // unpadded
	} {
		u, p, err := ParseBasic(c.h)
		if u != c.user || p != c.pass || err != c.err {
			t.Errorf("%q: %q %q %v, want %q %q %v", c.h, u, p, err, c.user, c.pass, c.err)
		}
	}
}

func TestParseRegistry(t *testing.T) {
	st, err := ParseRegistry("", map[string]string{"listeners": "http://127.0.0.1:0", "authentication.method": "BASIC",
		"authentication.users.file": "/u", "authentication.roles": "*", "authentication.skip.paths": "/v1/metadata/*"})
	if err != nil || st.TLS != nil || st.Auth == nil || st.Auth.Roles != nil || st.Addr != "127.0.0.1:0" {
		t.Fatalf("%+v %v", st, err)
	}
	for _, c := range []struct {
		addr string
		cfg  map[string]string
		want string
	}{
		{"", map[string]string{"listeners": "https://:8081"}, "has no key store"},
		{"", map[string]string{"listeners": "http://:8081", "ssl.keystore.location": "/k"}, "use https://"},
		{":1", map[string]string{"listeners": "http://:8081"}, "either --registry-addr or listeners"},
		{":1", map[string]string{"kafkastore.bootstrap.servers": "x"}, `"kafkastore.bootstrap.servers" is not known`},
		{":1", map[string]string{"authentication.method": "BASIC"}, "needs authentication.users.file"},
		{":1", map[string]string{"authentication.method": "BEARER"}, "BEARER is not supported"},
		{":1", map[string]string{"authentication.roles": "a"}, "authentication.roles is set but authentication.method is not BASIC"},
		{":1", map[string]string{"ssl.client.authentication": "MAYBE"}, "want NONE, REQUESTED or REQUIRED"},
		{"ftp://x:1", nil, `scheme "ftp"`},
		{"nohost", nil, "want host:port"},
	} {
		_, err := ParseRegistry(c.addr, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: got %v, want %q", c.addr, c.cfg, err, c.want)
		}
	}
}

func TestSkipped(t *testing.T) {
	paths := []string{"/metrics", "/debug/*"}
	for p, want := range map[string]bool{"/metrics": true, "/metrics/x": false, "/debug": true, "/debug/pprof/": true, "/debugx": false, "/": false} {
		if skipped(paths, p) != want {
			t.Errorf("%s: want %v", p, want)
		}
	}
}
