package httpsec

import (
	"encoding/base64"
	"errors"
	"strings"
	"unicode/utf8"
)

// MaxAuthorization bounds the Authorization header a server decodes.
const MaxAuthorization = 8 << 10

// Errors of ParseBasic. They never hold the credentials.
var (
	ErrNoCredentials = errors.New("no credentials")
	ErrNotBasic      = errors.New("the Authorization scheme is not Basic")
	ErrBadBasic      = errors.New("malformed Basic credentials")
)

// ParseBasic decodes an Authorization header value of the Basic scheme
// (RFC 7617): the scheme name in any case, one or more spaces, then
// base64(user ":" password) with standard padding. The user name may not
// hold ':'; the password may. Both must be UTF-8 without control
// characters.
func ParseBasic(h string) (user, password string, err error) {
	h = strings.TrimSpace(h)
	if h == "" {
		return "", "", ErrNoCredentials
	}
	if len(h) > MaxAuthorization {
		return "", "", ErrBadBasic
	}
	scheme, rest, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Basic") {
		return "", "", ErrNotBasic
	}
	rest = strings.TrimLeft(rest, " ")
	raw, derr := base64.StdEncoding.Strict().DecodeString(rest)
	if derr != nil || rest == "" {
		return "", "", ErrBadBasic
	}
	s := string(raw)
	user, password, ok := strings.Cut(s, ":")
	if !ok || user == "" || !utf8.ValidString(s) || hasControl(s) {
		return "", "", ErrBadBasic
	}
	return user, password, nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}
