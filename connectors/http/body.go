package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Body errors. A *BodyError wraps one of them and says where.
var (
	// ErrMalformed: the body is not NDJSON / JSON of objects (HTTP 400).
	ErrMalformed = errors.New("malformed body")
	// ErrEventTooLarge: one event is larger than the event limit (413).
	ErrEventTooLarge = errors.New("event too large")
)

// BodyError says where in a body parsing failed: Line (1-based, NDJSON)
// or Offset (byte offset from the body's start, JSON).
type BodyError struct {
	Line   int   // 0 for JSON bodies
	Offset int64 // byte offset (JSON), or offset within the line (NDJSON)
	Err    error // wraps ErrMalformed or ErrEventTooLarge
}

func (e *BodyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("byte offset %d: %v", e.Offset, e.Err)
}

func (e *BodyError) Unwrap() error { return e.Err }

// Event is one event of a body: its JSON object (a slice of the body or a
// copy) and its key (nil: none).
type Event struct {
	Value []byte
	Key   []byte
}

// Parser splits request bodies into events.
type Parser struct {
	// KeyField names a top-level field whose value becomes the record
	// key (a string as its text, other values as their JSON; absent or
	// null: no key). Empty: no keys.
	KeyField string
	// MaxEventBytes bounds one event (0: no bound).
	MaxEventBytes int
}

// NDJSON appends the events of an NDJSON body (one JSON object per line;
// blank lines and CR before LF are ignored) to out. Values are slices of
// body. Errors are *BodyError naming the line.
func (p *Parser) NDJSON(body []byte, out []Event) ([]Event, error) {
	line := 0
	for len(body) > 0 {
		line++
		var l []byte
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			l, body = body[:i], body[i+1:]
		} else {
			l, body = body, nil
		}
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		if p.MaxEventBytes > 0 && len(l) > p.MaxEventBytes {
			return out, &BodyError{Line: line, Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrEventTooLarge, len(l), p.MaxEventBytes)}
		}
		if l[0] != '{' {
			return out, &BodyError{Line: line, Err: fmt.Errorf("%w: want a JSON object, the line starts with %q", ErrMalformed, l[0])}
		}
		if !json.Valid(l) {
			off, err := syntaxError(l)
			return out, &BodyError{Line: line, Offset: off, Err: fmt.Errorf("%w: %v (at byte %d of the line)", ErrMalformed, err, off)}
		}
		ev := Event{Value: l}
		if p.KeyField != "" {
			ev.Key = p.key(l)
		}
		out = append(out, ev)
	}
	return out, nil
}

// JSON appends the events of a JSON body (an array of objects, or one
// object) to out. Errors are *BodyError naming the byte offset.
func (p *Parser) JSON(body []byte, out []Event) ([]Event, error) {
	start := 0
	for start < len(body) && isSpace(body[start]) {
		start++
	}
	if start == len(body) {
		return out, &BodyError{Offset: int64(start), Err: fmt.Errorf("%w: empty body (want a JSON array of objects or one object)", ErrMalformed)}
	}
	if body[start] == '{' {
		end := len(body)
		for end > start && isSpace(body[end-1]) {
			end--
		}
		obj := body[start:end]
		if p.MaxEventBytes > 0 && len(obj) > p.MaxEventBytes {
			return out, &BodyError{Offset: int64(start), Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrEventTooLarge, len(obj), p.MaxEventBytes)}
		}
		if !json.Valid(obj) {
			off, err := syntaxError(obj)
			return out, &BodyError{Offset: int64(start) + off, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
		}
		return append(out, p.event(obj)), nil
	}
	if body[start] != '[' {
		return out, &BodyError{Offset: int64(start), Err: fmt.Errorf("%w: want a JSON array of objects or one object, got %q", ErrMalformed, body[start])}
	}
	if !json.Valid(body) {
		off, err := syntaxError(body)
		return out, &BodyError{Offset: off, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
	}
	// A valid array: split it into its elements.
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // '['
		return out, &BodyError{Offset: int64(start), Err: fmt.Errorf("%w: %v", ErrMalformed, err)}
	}
	for i := 0; dec.More(); i++ {
		off := dec.InputOffset()
		// InputOffset is before the separator and spaces: skip them.
		for int(off) < len(body) && (isSpace(body[off]) || body[off] == ',') {
			off++
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out, &BodyError{Offset: off, Err: fmt.Errorf("%w: element %d: %v", ErrMalformed, i, err)}
		}
		if len(raw) == 0 || raw[0] != '{' {
			return out, &BodyError{Offset: off, Err: fmt.Errorf("%w: element %d is not a JSON object", ErrMalformed, i)}
		}
		if p.MaxEventBytes > 0 && len(raw) > p.MaxEventBytes {
			return out, &BodyError{Offset: off, Err: fmt.Errorf("%w: element %d is %d bytes, the limit is %d", ErrEventTooLarge, i, len(raw), p.MaxEventBytes)}
		}
		out = append(out, p.event(raw))
	}
	return out, nil
}

func (p *Parser) event(obj []byte) Event {
	ev := Event{Value: obj}
	if p.KeyField != "" {
		ev.Key = p.key(obj)
	}
	return ev
}

// key extracts KeyField from a valid JSON object.
func (p *Parser) key(obj []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	v, ok := m[p.KeyField]
	if !ok || string(v) == "null" {
		return nil
	}
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return []byte(s)
		}
	}
	return v
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// syntaxError returns the offset and error of invalid JSON b.
func syntaxError(b []byte) (int64, error) {
	var v json.RawMessage
	err := json.Unmarshal(b, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if se.Offset > 0 && se.Offset <= int64(len(b)) && !strings.HasPrefix(se.Error(), "unexpected end") {
			return se.Offset - 1, se // Offset counts the offending byte
		}
		return se.Offset, se
	}
	if err == nil {
		err = errors.New("invalid JSON")
	}
	return int64(len(b)), err
}
