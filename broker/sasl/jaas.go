package sasl

import (
	"fmt"
	"strings"
)

// JAASEntry is one login module of a sasl.jaas.config value.
type JAASEntry struct {
	Module  string
	Flag    string
	Options map[string]string
}

// ParseJAAS parses Kafka's sasl.jaas.config syntax:
//
//	<LoginModuleClass> <flag> [<name>=<value> ...];
//
// one or more times, values bare or in double or single quotes (a
// backslash escapes the next character inside quotes). Errors name the
// position, never a value (values hold passwords).
func ParseJAAS(s string) ([]JAASEntry, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return nil, err
	}
	var out []JAASEntry
	for i := 0; i < len(toks); {
		if toks[i].kind != tokWord {
			return nil, fmt.Errorf("sasl.jaas.config: expected a login module class at token %d", i+1)
		}
		e := JAASEntry{Module: toks[i].text, Options: map[string]string{}}
		// Errors name the module by its position: a misplaced value
		// could stand where the class name should.
		mod := fmt.Sprintf("#%d", len(out)+1)
		if classLike(e.Module) {
			mod = e.Module
		}
		i++
		if i >= len(toks) || toks[i].kind != tokWord {
			return nil, fmt.Errorf("sasl.jaas.config: login module %s has no control flag (required, requisite, sufficient or optional)", mod)
		}
		e.Flag = strings.ToLower(toks[i].text)
		switch e.Flag {
		case "required", "requisite", "sufficient", "optional":
		default:
			return nil, fmt.Errorf("sasl.jaas.config: login module %s: the control flag is not required, requisite, sufficient or optional", mod)
		}
		i++
		for {
			if i >= len(toks) {
				return nil, fmt.Errorf("sasl.jaas.config: login module %s is not terminated by ';'", mod)
			}
			if toks[i].kind == tokSemi {
				i++
				break
			}
			if toks[i].kind != tokWord || i+2 >= len(toks) || toks[i+1].kind != tokEq || toks[i+2].kind == tokSemi || toks[i+2].kind == tokEq {
				return nil, fmt.Errorf("sasl.jaas.config: login module %s: expected <name>=<value> at token %d", mod, i+1)
			}
			name := toks[i].text
			if _, dup := e.Options[name]; dup {
				return nil, fmt.Errorf("sasl.jaas.config: login module %s: an option is given twice", mod)
			}
			e.Options[name] = toks[i+2].text
			i += 3
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sasl.jaas.config: no login module")
	}
	return out, nil
}

// classLike reports whether s looks like a Java class name (a.b.C), safe
// to show in an error.
func classLike(s string) bool {
	// A Java class name (dot-separated identifiers) whose simple name
	// ends in LoginModule, as every JAAS login module's does; anything
	// else in that place may be a misplaced value (a password).
	segs := strings.Split(s, ".")
	if len(segs) < 2 || !strings.HasSuffix(segs[len(segs)-1], "LoginModule") {
		return false
	}
	for _, seg := range segs {
		if seg == "" || seg[0] >= '0' && seg[0] <= '9' {
			return false
		}
		for _, c := range seg {
			if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}

type tokKind int

const (
	tokWord tokKind = iota
	tokEq
	tokSemi
)

type jaasToken struct {
	kind tokKind
	text string
}

func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '=':
			out = append(out, jaasToken{kind: tokEq})
			i++
		case c == ';':
			out = append(out, jaasToken{kind: tokSemi})
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("sasl.jaas.config: quoted value starting at offset %d is not closed", i)
			}
			out = append(out, jaasToken{kind: tokWord, text: b.String()})
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r=;\"'", rune(s[j])) {
				j++
			}
			out = append(out, jaasToken{kind: tokWord, text: s[i:j]})
			i = j
		}
	}
	return out, nil
}

// PlainLoginModule is the class name of Kafka's PLAIN login module.
const PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// plainUsers returns the user_<name>="<password>" options of the
// PlainLoginModule entry.
func plainUsers(entries []JAASEntry) (map[string]string, error) {
	for _, e := range entries {
		if e.Module != PlainLoginModule {
			continue
		}
		users := map[string]string{}
		for k, v := range e.Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok {
				if name == "" {
					return nil, fmt.Errorf("sasl.jaas.config: an option user_ without a user name")
				}
				users[name] = v
			}
		}
		return users, nil
	}
	return nil, fmt.Errorf("sasl.jaas.config has no %s entry", PlainLoginModule)
}

// JAASFileConfig names a JAAS file, the form Kafka brokers also read
// (through the JVM's java.security.auth.login.config).
const JAASFileConfig = "java.security.auth.login.config"

// ParseJAASFile splits a JAAS file into its sections:
//
//	KafkaServer {
//	    org.apache.kafka.common.security.plain.PlainLoginModule required
//	    user_admin="admin-secret";
//	};
//
// and parses each section's login modules. Lines starting with // or #
// are comments.
func ParseJAASFile(s string) (map[string][]JAASEntry, error) {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "//") || strings.HasPrefix(t, "#") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	s = b.String()
	out := map[string][]JAASEntry{}
	for {
		s = strings.TrimSpace(s)
		if s == "" {
			break
		}
		name, rest, ok := strings.Cut(s, "{")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\n;}\"'") {
			return nil, fmt.Errorf("JAAS file: expected <section name> { ... }; near %q", clip(s))
		}
		end := -1
		var quote byte
		for i := 0; i < len(rest) && end < 0; i++ {
			switch c := rest[i]; {
			case quote != 0 && c == '\\':
				i++
			case quote != 0 && c == quote:
				quote = 0
			case quote != 0:
			case c == '"' || c == '\'':
				quote = c
			case c == '}':
				end = i
			}
		}
		if end < 0 {
			return nil, fmt.Errorf("JAAS file: section %s is not closed by '}'", name)
		}
		entries, err := ParseJAAS(rest[:end])
		if err != nil {
			return nil, fmt.Errorf("JAAS file: section %s: %w", name, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("JAAS file: section %s given twice", name)
		}
		out[name] = entries
		s = strings.TrimSpace(rest[end+1:])
		s = strings.TrimPrefix(s, ";")
	}
	return out, nil
}

// clip shortens a piece of a JAAS file for an error (section names only
// come before any value, but cut anyway).
func clip(s string) string {
	if i := strings.IndexAny(s, "=\n\"'"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}
