package elasticsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrTemplate is wrapped by errors rendering an index name template for
// one record (a referenced field is missing or not a scalar).
var ErrTemplate = errors.New("index name template")

// Template is a parsed index name template. Syntax (Logstash's sprintf,
// with Go time layouts):
//
//	logs-app                 literal text
//	%{[service]}             a document field; %{[a][b]} or %{a.b} a nested one
//	%{+2006.01.02}           the event time in UTC, formatted with a Go layout;
//	                         the Joda tokens yyyy/YYYY, MM, dd, HH, mm, ss also work
//	%{[@metadata][topic]}    the record's topic; also [partition] and [key]
//
// Field values must be strings, numbers or booleans; a missing field is an
// error, so the record goes to the dead-letter topic rather than to an
// index named after a placeholder.
type Template struct {
	parts []tmplPart
	// NeedsDoc: the template reads document fields.
	NeedsDoc bool
	// NeedsTime: the template formats the event time.
	NeedsTime bool
	raw       string
}

type tmplPart struct {
	lit    string
	path   []string // document field
	meta   string   // topic, partition, key
	layout string   // time layout
}

// ParseTemplate parses an index name template.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{raw: s}
	rest := s
	for rest != "" {
		i := strings.Index(rest, "%{")
		if i < 0 {
			t.parts = append(t.parts, tmplPart{lit: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, tmplPart{lit: rest[:i]})
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("%q: unclosed %%{ at byte %d", s, len(s)-len(rest)+i)
		}
		expr := rest[i+2 : i+j]
		rest = rest[i+j+1:]
		switch {
		case expr == "":
			return nil, fmt.Errorf("%q: empty %%{}", s)
		case expr[0] == '+':
			if len(expr) == 1 {
				return nil, fmt.Errorf("%q: %%{+} needs a time layout such as %%{+2006.01.02}", s)
			}
			t.parts = append(t.parts, tmplPart{layout: goLayout(expr[1:])})
			t.NeedsTime = true
		default:
			p, err := parsePath(expr)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", s, err)
			}
			if len(p) == 2 && p[0] == "@metadata" {
				switch p[1] {
				case "topic", "partition", "key":
					t.parts = append(t.parts, tmplPart{meta: p[1]})
					continue
				}
				return nil, fmt.Errorf("%q: unknown %%{[@metadata][%s]} (topic, partition or key)", s, p[1])
			}
			t.parts = append(t.parts, tmplPart{path: p})
			t.NeedsDoc = true
		}
	}
	return t, nil
}

// String returns the template text.
func (t *Template) String() string { return t.raw }

// Static returns the index name when the template has no placeholders.
func (t *Template) Static() (string, bool) {
	if len(t.parts) == 0 {
		return "", true
	}
	if len(t.parts) == 1 && t.parts[0].path == nil && t.parts[0].meta == "" && t.parts[0].layout == "" {
		return t.parts[0].lit, true
	}
	return "", false
}

// Meta is what a template may read of a record besides its document.
type Meta struct {
	Topic     string
	Partition int32
	Key       []byte
	Time      time.Time
}

// Render renders the template for one document (doc may be nil when
// NeedsDoc is false).
func (t *Template) Render(doc map[string]any, m *Meta) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		switch {
		case p.layout != "":
			b.WriteString(m.Time.UTC().Format(p.layout))
		case p.meta != "":
			switch p.meta {
			case "topic":
				b.WriteString(m.Topic)
			case "partition":
				b.WriteString(strconv.Itoa(int(m.Partition)))
			case "key":
				b.Write(m.Key)
			}
		case p.path != nil:
			v, ok := lookup(doc, p.path)
			if !ok {
				return "", fmt.Errorf("%w %q: field [%s] is missing", ErrTemplate, t.raw, strings.Join(p.path, "]["))
			}
			s, ok := scalarString(v)
			if !ok {
				return "", fmt.Errorf("%w %q: field [%s] is a %T, not a string or number", ErrTemplate, t.raw, strings.Join(p.path, "]["), v)
			}
			b.WriteString(s)
		default:
			b.WriteString(p.lit)
		}
	}
	return b.String(), nil
}

// parsePath parses a field reference: "[a][b]" (Logstash) or "a.b".
func parsePath(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty field reference")
	}
	if s[0] != '[' {
		parts := strings.Split(s, ".")
		for _, p := range parts {
			if p == "" {
				return nil, fmt.Errorf("field reference %q has an empty segment", s)
			}
		}
		return parts, nil
	}
	var out []string
	rest := s
	for rest != "" {
		if rest[0] != '[' {
			return nil, fmt.Errorf("field reference %q: expected [ at %q", s, rest)
		}
		j := strings.IndexByte(rest, ']')
		if j <= 1 {
			return nil, fmt.Errorf("field reference %q: empty or unclosed [...]", s)
		}
		out = append(out, rest[1:j])
		rest = rest[j+1:]
	}
	return out, nil
}

// lookup walks path in doc.
func lookup(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, cur != nil
}

func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// goLayout turns the common Joda date tokens of Logstash templates into Go
// layout tokens; a Go layout passes through unchanged.
func goLayout(s string) string {
	if strings.Contains(s, "2006") || strings.Contains(s, "15") {
		return s
	}
	r := strings.NewReplacer("yyyy", "2006", "YYYY", "2006", "MM", "01", "dd", "02", "HH", "15", "mm", "04", "ss", "05")
	return r.Replace(s)
}
