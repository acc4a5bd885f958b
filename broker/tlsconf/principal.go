package tlsconf

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// SSLPrincipalMappingRules is Kafka's setting of the rules that turn a
// client certificate's subject into a principal name.
const SSLPrincipalMappingRules = "ssl.principal.mapping.rules"

// Kafka's SslPrincipalMapper grammar: the rule list is split with
// ruleSplitter, each rule parsed with ruleParser (anchored at the start,
// and it must consume the whole rule).
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
	backRef      = regexp.MustCompile(`\$(\d+)`)
)

// Mapper maps certificate subjects (RFC 2253 distinguished names) to
// principal names with Kafka's ssl.principal.mapping.rules. The zero value
// and the rule DEFAULT map a name to itself.
type Mapper struct {
	rules []rule
}

type rule struct {
	isDefault  bool
	pattern    string
	re         *regexp.Regexp // pattern, unanchored (for replacing)
	whole      *regexp.Regexp // ^(?:pattern)$ (Java's matches())
	groups     int
	replace    string
	lower, upp bool
}

// ErrNoMatchingRule is returned by Map when no rule applies to a name.
var ErrNoMatchingRule = errors.New("no ssl.principal.mapping.rules rule applies")

// ParseRules parses ssl.principal.mapping.rules as Kafka's
// SslPrincipalMapper: a comma-separated list of DEFAULT and
// RULE:pattern/replacement/[L|U]. Patterns are Go (RE2) regular
// expressions: Java's syntax without back-references and look-arounds.
// Empty rules are ignored.
func ParseRules(s string) (*Mapper, error) {
	m := &Mapper{}
	for _, text := range splitRules(strings.TrimSpace(s)) {
		g := ruleParser.FindStringSubmatchIndex(text)
		if g == nil {
			return nil, fmt.Errorf("%s: invalid rule: %q", SSLPrincipalMappingRules, text)
		}
		if g[1] != len(text) {
			return nil, fmt.Errorf("%s: invalid rule: %q, unmatched substring: %q", SSLPrincipalMappingRules, text, text[g[1]:])
		}
		sub := func(i int) (string, bool) {
			if g[2*i] < 0 {
				return "", false
			}
			return text[g[2*i]:g[2*i+1]], true
		}
		if _, ok := sub(1); ok {
			m.rules = append(m.rules, rule{isDefault: true})
			continue
		}
		pat, ok := sub(2)
		if !ok {
			continue // an empty rule
		}
		repl, _ := sub(4)
		lu, _ := sub(6)
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, fmt.Errorf("%s: rule %q: pattern: %v", SSLPrincipalMappingRules, text, err)
		}
		whole := regexp.MustCompile(`^(?:` + pat + `)$`)
		m.rules = append(m.rules, rule{pattern: pat, re: re, whole: whole, groups: re.NumSubexp(), replace: repl, lower: lu == "L", upp: lu == "U"})
	}
	return m, nil
}

// splitRules is SslPrincipalMapper.splitRules: Java's Matcher.find loop
// (after an empty match the next search starts one character later).
func splitRules(s string) []string {
	var out []string
	for pos := 0; pos <= len(s); {
		loc := ruleSplitter.FindStringSubmatchIndex(s[pos:])
		if loc == nil {
			break
		}
		out = append(out, s[pos+loc[2]:pos+loc[3]])
		if loc[1] == loc[0] {
			pos += loc[1] + 1
		} else {
			pos += loc[1]
		}
	}
	return out
}

// String lists the rules as Kafka's SslPrincipalMapper.toString does.
func (m *Mapper) String() string {
	parts := make([]string, 0, len(m.rules))
	for _, r := range m.rules {
		parts = append(parts, r.String())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r rule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.pattern + "/" + r.replace
	if r.lower {
		s += "/L"
	} else if r.upp {
		s += "/U"
	}
	return s
}

// Map returns the principal name of distinguished name dn: the result of
// the first rule whose pattern matches all of dn (the whole DN for
// DEFAULT). With no rules (nil or empty Mapper... as Kafka's default
// "DEFAULT") the DN itself.
func (m *Mapper) Map(dn string) (string, error) {
	if m == nil {
		return dn, nil
	}
	for _, r := range m.rules {
		name, ok, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w to %q, rules %s", ErrNoMatchingRule, dn, m)
}

func (r rule) apply(dn string) (string, bool, error) {
	if r.isDefault {
		return dn, true, nil
	}
	if !r.whole.MatchString(dn) {
		return "", false, nil
	}
	out, err := javaReplaceAll(r.re, dn, escapeLiteralBackReferences(r.replace, r.groups))
	if err != nil {
		return "", false, fmt.Errorf("%s: rule %s: %w", SSLPrincipalMappingRules, r, err)
	}
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upp:
		out = strings.ToUpper(out)
	}
	return out, true, nil
}

// escapeLiteralBackReferences is Kafka's (from Apache NiFi): a $n naming
// a group the pattern does not have is a literal "$n" (with $123 and 12
// groups, $12 followed by "3"). Like Kafka's, it finds the references in
// the original text and applies the offsets to the text being escaped.
func escapeLiteralBackReferences(unescaped string, groups int) string {
	if groups == 0 {
		return unescaped
	}
	value := unescaped
	for _, loc := range backRef.FindAllStringSubmatchIndex(unescaped, -1) {
		num := unescaped[loc[2]:loc[3]]
		if strings.HasPrefix(num, "0") {
			continue
		}
		idx, err := strconv.Atoi(num)
		if err != nil {
			idx = int(^uint(0) >> 1)
		}
		for idx > groups && idx >= 10 {
			idx /= 10
		}
		if idx > groups {
			start := loc[2]
			if start-1 > len(value) {
				continue
			}
			value = value[:start-1] + `\` + value[start-1:]
		}
	}
	return value
}

// javaReplaceAll is Java's Matcher.replaceAll: every match of re in s
// (searching on after each match, one character on after an empty one)
// replaced by repl in Java's replacement syntax ($n group references,
// \ escaping the next character).
func javaReplaceAll(re *regexp.Regexp, s, repl string) (string, error) {
	var b strings.Builder
	last := 0
	for pos := 0; pos <= len(s); {
		loc := re.FindStringSubmatchIndex(s[pos:])
		if loc == nil {
			break
		}
		for i := range loc {
			if loc[i] >= 0 {
				loc[i] += pos
			}
		}
		b.WriteString(s[last:loc[0]])
		if err := appendReplacement(&b, s, loc, repl); err != nil {
			return "", err
		}
		last = loc[1]
		if loc[1] == loc[0] {
			pos = loc[1] + 1
		} else {
			pos = loc[1]
		}
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// appendReplacement is Java's Matcher.appendReplacement for one match.
func appendReplacement(b *strings.Builder, s string, loc []int, repl string) error {
	groups := len(loc)/2 - 1
	for i := 0; i < len(repl); {
		c := repl[i]
		switch {
		case c == '\\':
			i++
			if i >= len(repl) {
				return errors.New("character to be escaped is missing")
			}
			b.WriteByte(repl[i])
			i++
		case c == '$':
			i++
			if i >= len(repl) {
				return errors.New("illegal group reference: group index is missing")
			}
			if repl[i] == '{' {
				return errors.New("named group references are not supported")
			}
			if repl[i] < '0' || repl[i] > '9' {
				return errors.New("illegal group reference")
			}
			ref := int(repl[i] - '0')
			i++
			for i < len(repl) && repl[i] >= '0' && repl[i] <= '9' {
				next := ref*10 + int(repl[i]-'0')
				if next > groups {
					break
				}
				ref = next
				i++
			}
			if ref > groups {
				return fmt.Errorf("no group %d", ref)
			}
			if loc[2*ref] >= 0 {
				b.WriteString(s[loc[2*ref]:loc[2*ref+1]])
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return nil
}

// Attribute keywords of RFC 2253 names, as Java's X500Principal.getName
// writes them; other attributes are written as OID=#hex.
var dnKeywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// SubjectDN is the certificate's subject as Java's
// X500Principal.getName() (RFC 2253) writes it, which is what Kafka's
// principal mapping rules match: the last RDN first, no spaces,
// "CN=client,OU=ops,O=Example,C=US".
func SubjectDN(cert *x509.Certificate) (string, error) {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil {
		return "", fmt.Errorf("certificate subject: %w", err)
	} else if len(rest) > 0 {
		return "", errors.New("certificate subject: trailing data")
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i != len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := atv.Type.String()
			kw, known := dnKeywords[oid]
			str, isStr := atv.Value.(string)
			if known && isStr {
				b.WriteString(kw + "=" + escapeDNValue(str))
				continue
			}
			der, err := asn1.Marshal(atv.Value)
			if err != nil {
				return "", fmt.Errorf("certificate subject attribute %s: %w", oid, err)
			}
			if known {
				oid = kw
			}
			b.WriteString(oid + "=#" + hex.EncodeToString(der))
		}
	}
	return b.String(), nil
}

// escapeDNValue escapes an attribute value as RFC 2253 (section 2.4).
func escapeDNValue(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case strings.ContainsRune(`,+"\<>;`, r),
			i == 0 && (r == ' ' || r == '#'),
			i == len(s)-1 && r == ' ':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
