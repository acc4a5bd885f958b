package httpsec

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// User is one entry of a users file.
type User struct {
	Name  string
	Roles []string
	cred  credential
}

// credential is a stored password: plain, Jetty's MD5: form or bcrypt.
type credential struct {
	kind   credKind
	digest []byte // plain: sha256 of the password; md5: the 16-byte digest; bcrypt: the hash
}

type credKind uint8

const (
	credPlain credKind = iota
	credMD5
	credBcrypt
)

// Credential prefixes of a users file entry. MD5: and CRYPT: are Jetty's
// (org.eclipse.jetty.util.security.Credential); BCRYPT: is weir's.
const (
	PrefixMD5    = "MD5:"
	PrefixBcrypt = "BCRYPT:"
	prefixCrypt  = "CRYPT:"
	prefixOBF    = "OBF:"
)

// MaxUsersFile bounds a users file (1 MiB).
const MaxUsersFile = 1 << 20

// Users is a parsed users file: Jetty's PropertyUserStore format, the file
// Confluent's JAAS PropertyFileLoginModule reads.
type Users struct {
	byName map[string]*User

	// verified caches the last bcrypt password that matched, per user
	// (its SHA-256), so a client sending the same credentials on every
	// request pays bcrypt's cost once per users file load.
	mu       sync.Mutex
	verified map[string][sha256.Size]byte
}

// Len is the number of users.
func (u *Users) Len() int { return len(u.byName) }

// Lookup returns the user named name.
func (u *Users) Lookup(name string) (*User, bool) {
	x, ok := u.byName[name]
	return x, ok
}

// ParseUsers parses a users file (source names it in errors): one user a
// line, `name: password[,role...]` (Java properties: the separator is the
// first ':' or '=', or white space), '#' and '!' lines are comments.
// Errors name the source and line, never the password.
func ParseUsers(data []byte, source string) (*Users, error) {
	if len(data) > MaxUsersFile {
		return nil, fmt.Errorf("%s: %d bytes: a users file is at most %d", source, len(data), MaxUsersFile)
	}
	u := &Users{byName: map[string]*User{}, verified: map[string][sha256.Size]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxUsersFile+1)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		if strings.HasSuffix(text, "\\") {
			return nil, fmt.Errorf("%s:%d: continuation lines (a trailing \\) are not supported", source, line)
		}
		i := strings.IndexAny(text, ":= \t")
		if i <= 0 {
			return nil, fmt.Errorf("%s:%d: want `user: password[,role...]`", source, line)
		}
		name, rest := text[:i], strings.TrimSpace(text[i:])
		if rest != "" && (rest[0] == ':' || rest[0] == '=') {
			rest = strings.TrimSpace(rest[1:])
		}
		if !validName(name) {
			return nil, fmt.Errorf("%s:%d: user name %q: want printable characters without spaces, ':' or '='", source, line, name)
		}
		if _, dup := u.byName[name]; dup {
			return nil, fmt.Errorf("%s:%d: user %q is listed twice", source, line, name)
		}
		fields := strings.Split(rest, ",")
		pass := strings.TrimSpace(fields[0])
		if pass == "" {
			return nil, fmt.Errorf("%s:%d: user %q has no password", source, line, name)
		}
		cred, err := parseCredential(pass)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: user %q: %w", source, line, name, err)
		}
		usr := &User{Name: name, cred: cred}
		for _, r := range fields[1:] {
			if r = strings.TrimSpace(r); r != "" {
				usr.Roles = append(usr.Roles, r)
			}
		}
		u.byName[name] = usr
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return u, nil
}

func validName(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == ':' || r == '=' {
			return false
		}
	}
	return s != ""
}

// parseCredential reads a stored password. Errors never hold it.
func parseCredential(s string) (credential, error) {
	switch {
	case strings.HasPrefix(s, PrefixMD5):
		d, err := hex.DecodeString(strings.ToLower(s[len(PrefixMD5):]))
		if err != nil || len(d) != md5.Size {
			return credential{}, errors.New("MD5: password: want 32 hex digits (Jetty's MD5 form: the MD5 digest of the password)")
		}
		return credential{kind: credMD5, digest: d}, nil
	case strings.HasPrefix(s, PrefixBcrypt):
		h := []byte(s[len(PrefixBcrypt):])
		if _, err := bcrypt.Cost(h); err != nil {
			return credential{}, errors.New("BCRYPT: password: not a bcrypt hash ($2a$, $2b$ or $2y$ and 53 characters)")
		}
		return credential{kind: credBcrypt, digest: h}, nil
	case strings.HasPrefix(s, prefixCrypt):
		return credential{}, errors.New("CRYPT: passwords (Unix DES crypt) are not supported: use a BCRYPT: or MD5: password instead")
	case strings.HasPrefix(s, prefixOBF):
		return credential{}, errors.New("OBF: passwords (Jetty's reversible obfuscation) are not supported: use a BCRYPT: or MD5: password instead")
	}
	d := sha256.Sum256([]byte(s))
	return credential{kind: credPlain, digest: d[:]}, nil
}

// dummy is compared against when the user does not exist, so an unknown
// user costs what a known one does.
var dummy = credential{kind: credPlain, digest: make([]byte, sha256.Size)}

// check reports whether password matches, in time independent of where
// they differ.
func (c credential) check(password string) bool {
	switch c.kind {
	case credMD5:
		d := md5.Sum([]byte(password))
		return subtle.ConstantTimeCompare(d[:], c.digest) == 1
	case credBcrypt:
		return bcrypt.CompareHashAndPassword(c.digest, []byte(password)) == nil
	default:
		d := sha256.Sum256([]byte(password))
		return subtle.ConstantTimeCompare(d[:], c.digest) == 1
	}
}

// Authenticate returns the user when name and password match.
func (u *Users) Authenticate(name, password string) (*User, bool) {
	usr, ok := u.byName[name]
	if !ok {
		dummy.check(password)
		return nil, false
	}
	if usr.cred.kind != credBcrypt {
		if !usr.cred.check(password) {
			return nil, false
		}
		return usr, true
	}
	sum := sha256.Sum256([]byte(password))
	u.mu.Lock()
	prev, seen := u.verified[name]
	u.mu.Unlock()
	if seen && subtle.ConstantTimeCompare(prev[:], sum[:]) == 1 {
		return usr, true
	}
	if !usr.cred.check(password) {
		return nil, false
	}
	u.mu.Lock()
	u.verified[name] = sum
	u.mu.Unlock()
	return usr, true
}

// UsersFile is a users file reloaded when it changes (checked at most
// once per CheckEvery on use): a file that does not load is logged by the
// caller and the users in use kept.
type UsersFile struct {
	Path string

	mu      sync.Mutex
	users   *Users
	sum     [32]byte // of the content users came from
	checked time.Time
	lastErr string
}

// CheckEvery is how often a users file is looked at for changes.
const CheckEvery = time.Second

// OpenUsersFile reads path.
func OpenUsersFile(path string) (*UsersFile, error) {
	f := &UsersFile{Path: path}
	data, sum, err := f.readFile()
	if err != nil {
		return nil, err
	}
	u, err := ParseUsers(data, f.Path)
	if err != nil {
		return nil, err
	}
	f.users, f.sum, f.checked = u, sum, time.Now()
	return f, nil
}

// readFile reads the file and hashes it. The content, not the file's time
// and size, tells a change: those can stay the same across an edit (two
// same-size writes within the file system's timestamp granularity, a copy
// that keeps the old file's time), and the file is small.
func (f *UsersFile) readFile() ([]byte, [32]byte, error) {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("users file: %w", err)
	}
	return data, sha256.Sum256(data), nil
}

// Users returns the users in use, reloading the file first if it changed;
// reloadErr is a new load error (reported once per distinct error).
func (f *UsersFile) Users(now time.Time) (u *Users, reloaded bool, reloadErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.checked) < CheckEvery {
		return f.users, false, nil
	}
	f.checked = now
	data, sum, err := f.readFile()
	if err == nil && sum == f.sum {
		f.lastErr = ""
		return f.users, false, nil
	}
	var nu *Users
	if err == nil {
		nu, err = ParseUsers(data, f.Path)
	}
	if err != nil {
		if err.Error() == f.lastErr {
			return f.users, false, nil
		}
		f.lastErr = err.Error()
		return f.users, false, err
	}
	f.users, f.sum, f.lastErr = nu, sum, ""
	return nu, true, nil
}
