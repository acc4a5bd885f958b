package codec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"weir/internal/jsonw"
	"weir/pipelines/expr"
)

// A small JSON reader and writer over the native value domain: objects
// keep their field order, integers stay int64. It is the per-record hot
// path of parse_json and of JSON topics, so it allocates only the values
// it returns, and strings without escapes share the input's memory
// (zero copy): callers parse only bytes nobody modifies afterwards
// (record values, string fields), see ParseJSON.

var errJSON = errors.New("malformed JSON")

// ParseJSON decodes one JSON value; trailing whitespace is allowed.
// Strings in the result may share b's memory: b must not be modified
// while they are in use.
func ParseJSON(b []byte) (any, error) {
	p := jsonParser{b: b}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, fmt.Errorf("%w: unexpected %q after the value at byte %d", errJSON, p.b[p.i], p.i)
	}
	return v, nil
}

type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) fail(what string) error {
	if p.i >= len(p.b) {
		return fmt.Errorf("%w: unexpected end of input, want %s", errJSON, what)
	}
	return fmt.Errorf("%w: unexpected %q at byte %d, want %s", errJSON, p.b[p.i], p.i, what)
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > 200 {
		return nil, fmt.Errorf("%w: nested deeper than 200", errJSON)
	}
	p.ws()
	if p.i >= len(p.b) {
		return nil, p.fail("a value")
	}
	switch c := p.b[p.i]; {
	case c == '{':
		o := &expr.Object{Keys: make([]string, 0, 8), Vals: make([]any, 0, 8)}
		if err := p.members(o, depth); err != nil {
			return nil, err
		}
		return o, nil
	case c == '[':
		p.i++
		l := []any{}
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return l, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
			p.ws()
			if p.i >= len(p.b) {
				return nil, p.fail("',' or ']'")
			}
			if p.b[p.i] == ',' {
				p.i++
				continue
			}
			if p.b[p.i] == ']' {
				p.i++
				return l, nil
			}
			return nil, p.fail("',' or ']'")
		}
	case c == '"':
		return p.str()
	case c == 't':
		return p.lit("true", true)
	case c == 'f':
		return p.lit("false", false)
	case c == 'n':
		return p.lit("null", nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.num()
	}
	return nil, p.fail("a value")
}

// members reads the object at p.i (its '{') and appends its members to
// o, duplicates included.
func (p *jsonParser) members(o *expr.Object, depth int) error {
	p.i++
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return p.fail("a field name")
		}
		k, err := p.str()
		if err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return p.fail("':'")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		o.Keys = append(o.Keys, k)
		o.Vals = append(o.Vals, v)
		p.ws()
		if p.i >= len(p.b) {
			return p.fail("',' or '}'")
		}
		if p.b[p.i] == ',' {
			p.i++
			continue
		}
		if p.b[p.i] == '}' {
			p.i++
			return nil
		}
		return p.fail("',' or '}'")
	}
}

// NotObjectError is ParseObjectInto's error for valid JSON that is not
// an object.
type NotObjectError struct{ Type string }

func (e NotObjectError) Error() string { return "a JSON " + e.Type + ", not an object" }

// ParseObjectInto decodes a JSON object and appends its members to o
// (duplicates included, in order). On error o is left as it was. Like
// ParseJSON, strings may share b's memory.
func ParseObjectInto(o *expr.Object, b []byte) error {
	p := jsonParser{b: b}
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		v, err := ParseJSON(b)
		if err != nil {
			return err
		}
		return NotObjectError{expr.TypeName(v)}
	}
	n := len(o.Keys)
	err := p.members(o, 0)
	if err == nil {
		p.ws()
		if p.i != len(p.b) {
			err = fmt.Errorf("%w: unexpected %q after the value at byte %d", errJSON, p.b[p.i], p.i)
		}
	}
	if err != nil {
		clear(o.Keys[n:])
		clear(o.Vals[n:])
		o.Keys, o.Vals = o.Keys[:n], o.Vals[:n]
	}
	return err
}

// View is a string over b without copying it (see ParseJSON).
func View(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (p *jsonParser) lit(s string, v any) (any, error) {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return v, nil
	}
	return nil, p.fail(s)
}

func (p *jsonParser) num() (any, error) {
	start := p.i
	isInt := true
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := 0
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c >= '0' && c <= '9' {
			digits++
		} else if c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && !isInt) {
			isInt = false
		} else {
			break
		}
		p.i++
	}
	s := View(p.b[start:p.i])
	if digits == 0 {
		p.i = start
		return nil, p.fail("a number")
	}
	if isInt {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		p.i = start
		return nil, p.fail("a number")
	}
	return f, nil
}

func (p *jsonParser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := View(p.b[start:p.i])
			p.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return p.strSlow(start)
		}
		p.i++
	}
	return "", p.fail("'\"'")
}

func (p *jsonParser) strSlow(start int) (string, error) {
	out := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("no control character in a string")
		case c == '\\':
			p.i++
			if p.i >= len(p.b) {
				return "", p.fail("an escape")
			}
			e := p.b[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("4 hex digits")
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
						p.i += 2
						if r2, ok = p.hex4(); !ok {
							return "", p.fail("4 hex digits")
						}
					}
					r = utf16.DecodeRune(r, r2)
				}
				out = utf8.AppendRune(out, r)
			default:
				p.i--
				return "", p.fail("a valid escape")
			}
		case c < 0x80:
			out = append(out, c)
			p.i++
		default:
			r, n := utf8.DecodeRune(p.b[p.i:])
			out = utf8.AppendRune(out, r) // invalid bytes become U+FFFD
			p.i += n
		}
	}
	return "", p.fail("'\"'")
}

func (p *jsonParser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// AppendJSON appends the JSON encoding of v: objects in field order,
// timestamps as RFC 3339 strings, bytes as strings when valid UTF-8
// (base64 otherwise), NaN and infinities as null.
func AppendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return jsonw.AppendString(b, x)
	case []byte:
		if utf8.Valid(x) {
			return jsonw.AppendString(b, string(x))
		}
		return jsonw.AppendString(b, base64.StdEncoding.EncodeToString(x))
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(b, "null"...)
		}
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.AppendFloat(b, x, 'f', -1, 64)
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case time.Time:
		b = append(b, '"')
		b = x.UTC().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSON(b, e)
		}
		return append(b, ']')
	case *expr.Object:
		b = append(b, '{')
		for i, k := range x.Keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendString(b, k)
			b = append(b, ':')
			b = AppendJSON(b, x.Vals[i])
		}
		return append(b, '}')
	}
	return jsonw.AppendString(b, fmt.Sprint(v))
}
