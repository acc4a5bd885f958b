package sasl

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// ScramUser is one credential given on the command line.
type ScramUser struct {
	Name       string
	Credential ScramCredential
}

// ParseAddScram parses kafka-storage format's --add-scram syntax:
//
//	SCRAM-SHA-512=[name=admin,password=secret]
//	SCRAM-SHA-256=[name=alice,iterations=8192,password=secret]
//	SCRAM-SHA-256=[name=alice,salt=<hex>,saltedpassword=<hex>,iterations=8192]
//
// (password values may be double-quoted). Errors never repeat a value.
func ParseAddScram(s string) (ScramUser, error) {
	mech, rest, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return ScramUser{}, fmt.Errorf("--add-scram: want MECHANISM=[name=...,password=...]")
	}
	mech = strings.TrimSpace(mech)
	if ScramMechanismCode(mech) == 0 {
		return ScramUser{}, fmt.Errorf("--add-scram: mechanism %q is not %s or %s", mech, ScramSHA256, ScramSHA512)
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return ScramUser{}, fmt.Errorf("--add-scram %s: the settings must be in [...]", mech)
	}
	kv := map[string]string{}
	for _, f := range splitUnquoted(rest[1 : len(rest)-1]) {
		k, v, ok := strings.Cut(f, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			return ScramUser{}, fmt.Errorf("--add-scram %s: a setting without '=' (want name=value)", mech)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		if _, dup := kv[k]; dup {
			return ScramUser{}, fmt.Errorf("--add-scram %s: %s given twice", mech, k)
		}
		switch k {
		case "name", "password", "salt", "saltedpassword", "iterations":
		default:
			return ScramUser{}, fmt.Errorf("--add-scram %s: unknown setting %q (name, password, iterations, salt, saltedpassword)", mech, k)
		}
		kv[k] = v
	}
	u := ScramUser{Name: kv["name"]}
	if u.Name == "" {
		return ScramUser{}, fmt.Errorf("--add-scram %s: name is missing", mech)
	}
	iters := int64(DefaultScramIterations)
	if v, ok := kv["iterations"]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return ScramUser{}, fmt.Errorf("--add-scram %s for %s: iterations %q is not a number", mech, u.Name, v)
		}
		iters = n
	}
	if iters < MinScramIterations || iters > MaxScramIterations {
		return ScramUser{}, fmt.Errorf("--add-scram %s for %s: iterations %d: %s (%d..%d)", mech, u.Name, iters, CheckIterations(int32(iters)), MinScramIterations, MaxScramIterations)
	}
	var err error
	switch pw, hasPW := kv["password"]; {
	case hasPW && (kv["salt"] != "" || kv["saltedpassword"] != ""):
		return ScramUser{}, fmt.Errorf("--add-scram %s for %s: give password, or salt and saltedpassword, not both", mech, u.Name)
	case hasPW:
		if pw == "" {
			return ScramUser{}, fmt.Errorf("--add-scram %s for %s: empty password", mech, u.Name)
		}
		u.Credential, err = NewScramCredential(mech, pw, nil, int32(iters))
	default:
		salt, err1 := hex.DecodeString(kv["salt"])
		salted, err2 := hex.DecodeString(kv["saltedpassword"])
		if err1 != nil || err2 != nil || len(salt) == 0 || len(salted) == 0 {
			return ScramUser{}, fmt.Errorf("--add-scram %s for %s: give password, or salt and saltedpassword in hex", mech, u.Name)
		}
		u.Credential, err = CredentialFromSaltedPassword(mech, salt, salted, int32(iters))
	}
	if err != nil {
		return ScramUser{}, fmt.Errorf("--add-scram %s for %s: %v", mech, u.Name, err)
	}
	return u, nil
}

// splitUnquoted splits s at commas outside double quotes.
func splitUnquoted(s string) []string {
	var out []string
	in, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			in = !in
		case ',':
			if !in {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
