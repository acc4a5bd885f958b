package syslog

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Format says which syntax a message was parsed with.
type Format uint8

const (
	// Unparsed: the message did not parse; Message holds it whole and
	// ParseError says why.
	Unparsed Format = iota
	// RFC5424 is the IETF syslog protocol.
	RFC5424
	// RFC3164 is the BSD syslog format (parsed best effort, as RFC 3164
	// itself asks of relays).
	RFC3164
)

func (f Format) String() string {
	switch f {
	case RFC5424:
		return "rfc5424"
	case RFC3164:
		return "rfc3164"
	}
	return "unparsed"
}

// Message is one parsed syslog message. Absent fields (RFC 5424's "-",
// or parts an RFC 3164 message lacks) are empty strings, a zero Time and
// Priority -1.
type Message struct {
	Format Format
	// Priority is PRI (facility*8 + severity), -1 when the message has no
	// valid PRI.
	Priority  int
	Version   int // RFC 5424 VERSION (1); 0 otherwise
	Timestamp time.Time
	Hostname  string
	AppName   string // RFC 3164: the TAG
	ProcID    string // RFC 3164: the [pid] after the TAG
	MsgID     string
	// StructuredData are the SD-ELEMENTs in message order.
	StructuredData []SDElement
	// Message is the free-form MSG (without a UTF-8 BOM), or the whole
	// input when it did not parse. Invalid UTF-8 is replaced by U+FFFD.
	Message string
	// ParseError is why the message did not parse ("" when it did).
	ParseError string
	// Truncated is set by the framing when the message was longer than
	// the maximum message size and was cut.
	Truncated bool
}

// SDElement is one RFC 5424 structured data element.
type SDElement struct {
	ID     string
	Params []SDParam
}

// SDParam is one PARAM-NAME="PARAM-VALUE" pair (the value unescaped).
type SDParam struct{ Name, Value string }

// Facility is Priority/8 (-1 without a priority).
func (m *Message) Facility() int {
	if m.Priority < 0 {
		return -1
	}
	return m.Priority / 8
}

// Severity is Priority%8 (-1 without a priority).
func (m *Message) Severity() int {
	if m.Priority < 0 {
		return -1
	}
	return m.Priority % 8
}

// errSyntax marks a message that does not follow RFC 5424 once its
// VERSION said it would.
var errSyntax = errors.New("syslog syntax")

// Parse parses one syslog message (without framing): RFC 5424 when a
// VERSION follows the PRI, RFC 3164 otherwise. It never fails: a message
// that does not parse comes back with Format Unparsed, the whole input as
// Message and the reason in ParseError. now is the receive time, used to
// pick the year of RFC 3164 timestamps (which have none).
func Parse(b []byte, now time.Time) Message {
	m := Message{Priority: -1}
	b = bytes.TrimRight(b, "\r\n\x00")
	pri, rest, err := parsePRI(b)
	if err != nil {
		return unparsed(m, b, err)
	}
	m.Priority = pri
	if len(rest) >= 2 && rest[0] == '1' && rest[1] == ' ' { // VERSION 1: RFC 5424
		if err := parse5424(&m, rest); err != nil {
			m5 := Message{Priority: pri}
			return unparsed(m5, b, err)
		}
		return m
	}
	parse3164(&m, rest, now)
	return m
}

func unparsed(m Message, b []byte, err error) Message {
	m.Format = Unparsed
	m.Message = validString(b)
	m.ParseError = err.Error()
	return m
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parsePRI reads "<PRI>": 1 to 3 digits, 0 to 191, no leading zeros
// (except "<0>").
func parsePRI(b []byte) (int, []byte, error) {
	if len(b) == 0 {
		return 0, nil, errors.New("empty message")
	}
	if b[0] != '<' {
		return 0, nil, errors.New("no PRI: the message does not start with '<'")
	}
	i := 1
	for i < len(b) && i <= 4 && isDigit(b[i]) {
		i++
	}
	if i == 1 || i > 4 || i >= len(b) || b[i] != '>' {
		return 0, nil, errors.New("bad PRI: want '<' 1 to 3 digits '>'")
	}
	if i > 2 && b[1] == '0' {
		return 0, nil, errors.New("bad PRI: leading zero")
	}
	n, _ := strconv.Atoi(string(b[1:i]))
	if n > 191 {
		return 0, nil, fmt.Errorf("bad PRI %d: above 191", n)
	}
	return n, b[i+1:], nil
}

// field returns the next SP-terminated token of b and the rest after the
// SP; at the end of b the token is the rest and ok is false.
func field(b []byte) (tok, rest []byte, more bool) {
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		return b[:i], b[i+1:], true
	}
	return b, nil, false
}

// header5424 checks an RFC 5424 header field: "-" (absent) or 1 to max
// printable US-ASCII characters.
func header5424(name string, tok []byte, max int) (string, error) {
	if len(tok) == 1 && tok[0] == '-' {
		return "", nil
	}
	if len(tok) == 0 {
		return "", fmt.Errorf("%w: empty %s (want - when absent)", errSyntax, name)
	}
	if len(tok) > max {
		return "", fmt.Errorf("%w: %s is %d characters, more than %d", errSyntax, name, len(tok), max)
	}
	for _, c := range tok {
		if c < 33 || c > 126 {
			return "", fmt.Errorf("%w: %s has the non-printable byte 0x%02x", errSyntax, name, c)
		}
	}
	return string(tok), nil
}

func parse5424(m *Message, b []byte) error {
	m.Format = RFC5424
	tok, b, more := field(b)
	m.Version, _ = strconv.Atoi(string(tok))
	if m.Version != 1 {
		return fmt.Errorf("%w: VERSION %d is not 1", errSyntax, m.Version)
	}
	names := [...]string{"TIMESTAMP", "HOSTNAME", "APP-NAME", "PROCID", "MSGID"}
	limits := [...]int{64, 255, 48, 128, 32}
	for i, name := range names {
		if !more {
			return fmt.Errorf("%w: message ends before %s", errSyntax, name)
		}
		tok, b, more = field(b)
		if i == 0 {
			if len(tok) == 1 && tok[0] == '-' {
				continue
			}
			t, err := time.Parse(time.RFC3339Nano, string(tok))
			if err != nil {
				return fmt.Errorf("%w: TIMESTAMP %q is not RFC 3339", errSyntax, truncForErr(tok))
			}
			m.Timestamp = t
			continue
		}
		s, err := header5424(name, tok, limits[i])
		if err != nil {
			return err
		}
		switch i {
		case 1:
			m.Hostname = s
		case 2:
			m.AppName = s
		case 3:
			m.ProcID = s
		case 4:
			m.MsgID = s
		}
	}
	if !more {
		return fmt.Errorf("%w: message ends before STRUCTURED-DATA", errSyntax)
	}
	rest, err := parseSD(m, b)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		if rest[0] != ' ' {
			return fmt.Errorf("%w: want a space between STRUCTURED-DATA and MSG, got %q", errSyntax, rest[0])
		}
		rest = bytes.TrimPrefix(rest[1:], []byte("\xef\xbb\xbf"))
		m.Message = validString(rest)
	}
	return nil
}

// parseSD reads STRUCTURED-DATA ("-" or SD-ELEMENTs) and returns what
// follows.
func parseSD(m *Message, b []byte) ([]byte, error) {
	if len(b) > 0 && b[0] == '-' {
		return b[1:], nil
	}
	if len(b) == 0 || b[0] != '[' {
		return nil, fmt.Errorf("%w: STRUCTURED-DATA must be - or start with '['", errSyntax)
	}
	for len(b) > 0 && b[0] == '[' {
		var e SDElement
		var err error
		e.ID, b, err = sdName("SD-ID", b[1:])
		if err != nil {
			return nil, err
		}
		for {
			if len(b) == 0 {
				return nil, fmt.Errorf("%w: SD-ELEMENT %s is not closed with ']'", errSyntax, e.ID)
			}
			if b[0] == ']' {
				b = b[1:]
				break
			}
			if b[0] != ' ' {
				return nil, fmt.Errorf("%w: SD-ELEMENT %s: want ' ' or ']', got %q", errSyntax, e.ID, b[0])
			}
			var p SDParam
			p.Name, b, err = sdName("PARAM-NAME", b[1:])
			if err != nil {
				return nil, err
			}
			if len(b) < 2 || b[0] != '=' || b[1] != '"' {
				return nil, fmt.Errorf("%w: SD-PARAM %s: want =\" after the name", errSyntax, p.Name)
			}
			p.Value, b, err = sdValue(b[2:])
			if err != nil {
				return nil, fmt.Errorf("%w: SD-PARAM %s: %v", errSyntax, p.Name, err)
			}
			e.Params = append(e.Params, p)
		}
		m.StructuredData = append(m.StructuredData, e)
	}
	return b, nil
}

// sdName reads an SD-NAME: 1 to 32 printable characters except '=', ' ',
// ']' and '"'.
func sdName(what string, b []byte) (string, []byte, error) {
	i := 0
	for i < len(b) {
		c := b[i]
		if c < 33 || c > 126 || c == '=' || c == ']' || c == '"' {
			break
		}
		i++
	}
	if i == 0 {
		return "", nil, fmt.Errorf("%w: empty %s", errSyntax, what)
	}
	if i > 32 {
		return "", nil, fmt.Errorf("%w: %s %q is longer than 32 characters", errSyntax, what, truncForErr(b[:i]))
	}
	return string(b[:i]), b[i:], nil
}

// sdValue reads a PARAM-VALUE up to its closing quote, unescaping \" \\
// and \] (a backslash before anything else is kept, as RFC 5424 says).
func sdValue(b []byte) (string, []byte, error) {
	var out []byte
	start := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			if i+1 < len(b) && (b[i+1] == '"' || b[i+1] == '\\' || b[i+1] == ']') {
				out = append(out, b[start:i]...)
				start = i + 1
				i++
			}
		case '"':
			if out == nil {
				return validString(b[:i]), b[i+1:], nil
			}
			out = append(out, b[start:i]...)
			return validString(out), b[i+1:], nil
		}
	}
	return "", nil, errors.New("PARAM-VALUE has no closing quote")
}

var months = [...]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// parse3164 parses what follows the PRI of a BSD syslog message, best
// effort as RFC 3164 section 4.3 asks: TIMESTAMP ("Mmm dd hh:mm:ss", or
// an RFC 3339 time as rsyslog writes), HOSTNAME, then TAG[PID]: MSG.
// Parts that are missing stay empty; the message itself is never lost.
func parse3164(m *Message, b []byte, now time.Time) {
	m.Format = RFC3164
	if t, rest, ok := bsdTime(b, now); ok {
		m.Timestamp = t
		b = rest
		// HOSTNAME: a token followed by a space that does not look like a
		// TAG (which ends in ':' or holds '[').
		if tok, rest, more := field(b); more && len(tok) > 0 && !bytes.ContainsAny(tok, ":[]") {
			m.Hostname = validString(tok)
			b = rest
		}
	}
	// TAG: up to 32 alphanumeric-ish characters, then [pid] and/or ':'.
	i := 0
	for i < len(b) && i < 48 && b[i] > 32 && b[i] < 127 && b[i] != '[' && b[i] != ':' && b[i] != ']' {
		i++
	}
	if i > 0 && i < len(b) {
		tag, rest := b[:i], b[i:]
		pid := []byte(nil)
		if rest[0] == '[' {
			if j := bytes.IndexByte(rest, ']'); j > 1 && j < 130 {
				pid, rest = rest[1:j], rest[j+1:]
			} else {
				rest = nil
			}
		}
		if len(rest) > 0 && rest[0] == ':' {
			m.AppName = validString(tag)
			m.ProcID = validString(pid)
			b = rest[1:]
			if len(b) > 0 && b[0] == ' ' {
				b = b[1:]
			}
		} else if pid != nil && (len(rest) == 0 || rest[0] == ' ') {
			m.AppName = validString(tag)
			m.ProcID = validString(pid)
			b = bytes.TrimPrefix(rest, []byte(" "))
		}
	}
	m.Message = validString(b)
}

// bsdTime reads an RFC 3164 TIMESTAMP ("Mmm dd hh:mm:ss", dd space
// padded, optionally followed by a year or with fractional seconds) or an
// RFC 3339 one, and the space after it.
func bsdTime(b []byte, now time.Time) (time.Time, []byte, bool) {
	if len(b) >= 20 && isDigit(b[0]) && b[4] == '-' {
		tok, rest, _ := field(b)
		if t, err := time.Parse(time.RFC3339Nano, string(tok)); err == nil {
			return t, rest, true
		}
		return time.Time{}, b, false
	}
	if len(b) < 16 || b[3] != ' ' || b[6] != ' ' || b[9] != ':' || b[12] != ':' {
		return time.Time{}, b, false
	}
	mon := -1
	for i, name := range months {
		if string(b[:3]) == name {
			mon = i + 1
			break
		}
	}
	day := twoDigits(b[4], b[5], true)
	h, mi, s := twoDigits(b[7], b[8], false), twoDigits(b[10], b[11], false), twoDigits(b[13], b[14], false)
	if mon < 0 || day < 1 || day > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60 {
		return time.Time{}, b, false
	}
	rest := b[15:]
	nsec := 0
	if rest[0] == '.' { // fractional seconds (syslog-ng, some devices)
		j := 1
		for j < len(rest) && j <= 10 && isDigit(rest[j]) {
			j++
		}
		frac := string(rest[1:j])
		for len(frac) < 9 {
			frac += "0"
		}
		nsec, _ = strconv.Atoi(frac[:9])
		rest = rest[j:]
	}
	if len(rest) == 0 || rest[0] != ' ' {
		return time.Time{}, b, false
	}
	rest = rest[1:]
	year := now.Year()
	if len(rest) >= 5 && isDigit(rest[0]) && isDigit(rest[1]) && isDigit(rest[2]) && isDigit(rest[3]) && rest[4] == ' ' {
		year, _ = strconv.Atoi(string(rest[:4]))
		rest = rest[5:]
		return time.Date(year, time.Month(mon), day, h, mi, s, nsec, now.Location()), rest, true
	}
	t := time.Date(year, time.Month(mon), day, h, mi, s, nsec, now.Location())
	// No year in the message: a time more than a month ahead is last
	// year's (a December message received in January).
	if t.Sub(now) > 31*24*time.Hour {
		t = t.AddDate(-1, 0, 0)
	}
	return t, rest, true
}

func twoDigits(a, b byte, spacePad bool) int {
	if spacePad && a == ' ' {
		a = '0'
	}
	if !isDigit(a) || !isDigit(b) {
		return -1
	}
	return int(a-'0')*10 + int(b-'0')
}

// validString returns b as a string with invalid UTF-8 replaced by U+FFFD
// (Avro and JSON strings are UTF-8).
func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

func truncForErr(b []byte) string {
	if len(b) > 40 {
		b = b[:40]
	}
	return validString(b)
}
